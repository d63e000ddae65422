//! What JSON and YAML say about a plan: what its text says. A job that
//! trains on the CPU has no GPU, so its text shows no GPU figure, and for
//! machines it carries none either: no GPU peak or phase, no GPU limit, no
//! GPU components per phase, no allocator simulation, no GPU peak or saving
//! in the recommendation (the estimator still computes them; they describe
//! a device the job does not use). A CUDA plan is written as derived.
//!
//! serde has no context to skip fields by, so the CPU form is a view that
//! names every field it keeps; `tests/cli/plan.rs` checks that a CPU plan's
//! keys are a CUDA plan's less the GPU ones, so a field added to the report
//! and forgotten here fails there.

use serde::{Serialize, Serializer};

use super::provenance::CoefficientSource;
use super::verdict::{Failure, Limits};
use super::{Change, ChangeKind, PlanReport, Preprocessing, Recommendation};
use crate::estimate::{Component, Phase, PhaseEstimate, SampleStats, Settings};
use crate::spec::{Accounting, Device, EvalLoaders};

impl Serialize for PlanReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.device {
            Device::Cuda => PlanReport::serialize(self, s),
            Device::Cpu => CpuPlan::of(self).serialize(s),
        }
    }
}

/// A recommendation as the plan it came from writes it: without GPU
/// figures when the job trains on the CPU (`diagnose --job`'s `recommended`).
#[derive(Debug, Clone)]
pub struct Recommended {
    /// The planner's recommendation.
    pub rec: Recommendation,
    /// Where the job trains.
    pub device: Device,
}

impl Serialize for Recommended {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.device {
            Device::Cuda => self.rec.serialize(s),
            Device::Cpu => CpuRecommendation::of(&self.rec).serialize(s),
        }
    }
}

#[derive(Serialize)]
struct CpuPlan<'a> {
    job: &'a str,
    source: &'a str,
    fits: Option<bool>,
    checked: bool,
    device: Device,
    peak_host_bytes: u64,
    peak_phase: Phase,
    predicted_exit_code: Option<i32>,
    failure: &'a Option<Failure>,
    limits: CpuLimits,
    accounting: Accounting,
    ranks_per_node: u32,
    settings: &'a Settings,
    components: Vec<CpuPhase<'a>>,
    train_batch: &'a SampleStats,
    min_host_bytes: u64,
    host_band: &'a super::band::HostBand,
    recommended: Option<CpuRecommendation<'a>>,
    recommended_cautious: Option<CpuRecommendation<'a>>,
    without_preprocessing: Option<CpuRecommendation<'a>>,
    preprocessing: &'a Option<Preprocessing>,
    candidates_searched: usize,
    coefficients: &'a str,
    coefficient_sources: &'a [CoefficientSource],
    warnings: &'a [String],
    assumptions: &'a [String],
}

impl<'a> CpuPlan<'a> {
    fn of(r: &'a PlanReport) -> Self {
        CpuPlan {
            job: &r.job,
            source: &r.source,
            fits: r.fits,
            checked: r.checked,
            device: r.device,
            peak_host_bytes: r.peak_host_bytes,
            peak_phase: r.peak_phase,
            predicted_exit_code: r.predicted_exit_code,
            failure: &r.failure,
            limits: CpuLimits::of(&r.limits),
            accounting: r.accounting,
            ranks_per_node: r.ranks_per_node,
            settings: &r.settings,
            components: r.components.iter().map(CpuPhase::of).collect(),
            train_batch: &r.train_batch,
            min_host_bytes: r.min_host_bytes,
            host_band: &r.host_band,
            recommended: r.recommended.as_ref().map(CpuRecommendation::of),
            recommended_cautious: r.recommended_cautious.as_ref().map(CpuRecommendation::of),
            without_preprocessing: r.without_preprocessing.as_ref().map(CpuRecommendation::of),
            preprocessing: &r.preprocessing,
            candidates_searched: r.candidates_searched,
            coefficients: &r.coefficients,
            coefficient_sources: &r.coefficient_sources,
            warnings: &r.warnings,
            assumptions: &r.assumptions,
        }
    }
}

#[derive(Serialize)]
struct CpuLimits {
    host: Option<u64>,
    shm: Option<u64>,
    margin: f64,
}

impl CpuLimits {
    fn of(l: &Limits) -> Self {
        CpuLimits {
            host: l.host,
            shm: l.shm,
            margin: l.margin,
        }
    }
}

#[derive(Serialize)]
struct CpuPhase<'a> {
    phase: Phase,
    moment: &'a str,
    host: &'a [Component],
    host_bytes: u64,
    shm_bytes: u64,
    kernel_bytes: u64,
}

impl<'a> CpuPhase<'a> {
    fn of(p: &'a PhaseEstimate) -> Self {
        CpuPhase {
            phase: p.phase,
            moment: p.moment,
            host: &p.host,
            host_bytes: p.host_bytes,
            shm_bytes: p.shm_bytes,
            kernel_bytes: p.kernel_bytes,
        }
    }
}

#[derive(Serialize)]
struct CpuRecommendation<'a> {
    fits: bool,
    needs_host_bytes: u64,
    batch_size: u64,
    fanout: &'a [i64],
    num_workers: u32,
    persistent_workers: bool,
    eval_loaders: EvalLoaders,
    pin_memory: bool,
    prefetch_factor: u32,
    shared_sampler: bool,
    is_sorted: bool,
    gc_collect: bool,
    expandable_segments: bool,
    peak_host_bytes: u64,
    peak_shm_bytes: u64,
    shm_check: &'a Option<String>,
    changes: Vec<CpuChange<'a>>,
}

impl<'a> CpuRecommendation<'a> {
    fn of(r: &'a Recommendation) -> Self {
        CpuRecommendation {
            fits: r.fits,
            needs_host_bytes: r.needs_host_bytes,
            batch_size: r.batch_size,
            fanout: &r.fanout,
            num_workers: r.num_workers,
            persistent_workers: r.persistent_workers,
            eval_loaders: r.eval_loaders,
            pin_memory: r.pin_memory,
            prefetch_factor: r.prefetch_factor,
            shared_sampler: r.shared_sampler,
            is_sorted: r.is_sorted,
            gc_collect: r.gc_collect,
            expandable_segments: r.expandable_segments,
            peak_host_bytes: r.peak_host_bytes,
            peak_shm_bytes: r.peak_shm_bytes,
            shm_check: &r.shm_check,
            changes: r.changes.iter().map(CpuChange::of).collect(),
        }
    }
}

#[derive(Serialize)]
struct CpuChange<'a> {
    setting: &'static str,
    kind: ChangeKind,
    from: &'a str,
    to: &'a str,
    how: &'static str,
    effect: Option<&'a str>,
    saves_host_bytes: i64,
    saves_shm_bytes: i64,
}

impl<'a> CpuChange<'a> {
    fn of(c: &'a Change) -> Self {
        CpuChange {
            setting: c.setting,
            kind: c.kind,
            from: &c.from,
            to: &c.to,
            how: c.how,
            effect: c.effect.as_deref(),
            saves_host_bytes: c.saves_host_bytes,
            saves_shm_bytes: c.saves_shm_bytes,
        }
    }
}
