//! `headroom plan` and `headroom check`: estimate a job, judge it against its
//! budget, and recommend the fastest settings that fit with the margin.

pub mod cli;
pub mod gpu_sim;
mod render;
pub mod search;
mod speed;
pub mod verdict;

use serde::Serialize;

use std::collections::HashMap;

use crate::estimate::{
    BatchModel, Coefficients, Estimate, Phase, PhaseEstimate, Prepared, SampleStats, Settings,
    estimate,
};
use crate::spec::{Accounting, Job};
use gpu_sim::GpuSimulation;
use verdict::{Failure, Limits, judge, peaks};

/// The report `plan` and `check` print.
#[derive(Debug, Clone, Serialize)]
pub struct PlanReport {
    /// Job name.
    pub job: String,
    /// Where the job came from.
    pub source: String,
    /// Whether every phase fits every budget with the margin.
    pub fits: bool,
    /// Largest host total over the phases, bytes per node.
    pub peak_host_bytes: u64,
    /// Phase of the host peak.
    pub peak_phase: crate::estimate::Phase,
    /// Largest GPU total over the phases, bytes per device.
    pub peak_gpu_bytes: u64,
    /// Phase of the GPU peak.
    pub peak_gpu_phase: crate::estimate::Phase,
    /// Exit code the user would see; null when it fits.
    pub predicted_exit_code: Option<i32>,
    /// How the job dies, when it does not fit.
    pub failure: Option<Failure>,
    /// The limits judged against.
    pub limits: Limits,
    /// How the host limit counts memory.
    pub accounting: Accounting,
    /// Ranks per node (host figures include all of them).
    pub ranks_per_node: u32,
    /// The settings planned.
    pub settings: Settings,
    /// Per phase, per component.
    pub components: Vec<PhaseEstimate>,
    /// Training batch sizes (nodes, edges: mean and largest of the run).
    pub train_batch: SampleStats,
    /// Smallest host limit (--mem) the job as given fits with the margin, bytes.
    pub min_host_bytes: u64,
    /// The fastest settings that fit with the margin; null when none does.
    pub recommended: Option<Recommendation>,
    /// Settings the search estimated.
    pub candidates_searched: usize,
    /// The caching-allocator simulation behind the GPU figures (null without a GPU budget).
    pub gpu_simulation: Option<GpuSimulation>,
    /// Where the model's coefficients came from.
    pub coefficients: String,
    /// Things to know (sbatch variables the python line overrides, ...).
    pub warnings: Vec<String>,
}

/// A recommended configuration and what each change does.
#[derive(Debug, Clone, Serialize)]
pub struct Recommendation {
    /// Seed nodes per batch.
    pub batch_size: u64,
    /// Neighbors per hop.
    pub fanout: Vec<i64>,
    /// Workers per loader.
    pub num_workers: u32,
    /// Workers kept across epochs.
    pub persistent_workers: bool,
    /// When evaluation loaders exist.
    pub eval_loaders: crate::spec::EvalLoaders,
    /// pin_memory.
    pub pin_memory: bool,
    /// prefetch_factor.
    pub prefetch_factor: u32,
    /// Share one NeighborSampler across loaders.
    pub shared_sampler: bool,
    /// Sort edge_index by destination once, offline, and pass is_sorted=True.
    pub is_sorted: bool,
    /// Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
    pub expandable_segments: bool,
    /// Host peak at these settings, bytes.
    pub peak_host_bytes: u64,
    /// GPU peak at these settings, bytes.
    pub peak_gpu_bytes: u64,
    /// Estimated seconds per epoch (relative; for ranking).
    pub epoch_seconds: f64,
    /// Each change from the user's settings, applied in order, and the host peak it saves.
    pub changes: Vec<Change>,
}

/// One setting changed by the recommendation.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// Setting name as in the job spec.
    pub setting: &'static str,
    /// The user's value.
    pub from: String,
    /// The recommended value.
    pub to: String,
    /// How to make the change in PyG / PyTorch.
    pub how: &'static str,
    /// Host peak saved by this change after the ones before it (negative: costs).
    pub saves_host_bytes: i64,
    /// GPU peak saved by this change after the ones before it.
    pub saves_gpu_bytes: i64,
}

/// Estimates with the GPU's allocator simulated, cached per (batch, fanout,
/// device size): nothing else changes what the GPU sees.
struct Planner<'a> {
    job: &'a Job,
    coeffs: &'a Coefficients,
    prep: Prepared,
    sims: HashMap<(u64, Vec<i64>, u64), GpuSimulation>,
}

impl<'a> Planner<'a> {
    fn new(job: &'a Job, coeffs: &'a Coefficients) -> Self {
        Planner {
            job,
            coeffs,
            prep: Prepared::new(job),
            sims: HashMap::new(),
        }
    }

    fn simulate(&mut self, s: &Settings, device: u64) -> GpuSimulation {
        let (job, coeffs, prep) = (self.job, self.coeffs, &self.prep);
        self.sims
            .entry((s.batch_size, s.fanout.clone(), device))
            .or_insert_with(|| {
                let bm = BatchModel::new(job, s, prep);
                let context = crate::estimate::cuda_context_bytes(job, coeffs);
                gpu_sim::simulate(
                    job,
                    &bm,
                    s.batch_size,
                    context,
                    device,
                    &job.alloc_conf.with_expandable(false),
                )
            })
            .clone()
    }

    /// The estimate at `s`, its training GPU simulated on the card less the
    /// margin when a GPU is budgeted.
    fn estimate(&mut self, s: &Settings) -> (Estimate, Option<GpuSimulation>) {
        let mut est = estimate(self.job, s, self.coeffs);
        let limits = Limits::of(self.job);
        let (Some(capacity), crate::spec::Device::Cuda) = (limits.gpu, self.job.device) else {
            return (est, None);
        };
        let sim = self.simulate(s, (capacity as f64 * (1.0 - limits.margin)) as u64);
        gpu_sim::apply(&mut est, &sim, s.expandable_segments);
        (est, Some(sim))
    }

    /// The verdict at `s`: the first budget exceeded in run order, the
    /// simulated allocator failing in training counted as the GPU's.
    fn judge(&mut self, s: &Settings) -> (Estimate, Option<GpuSimulation>, Option<Failure>) {
        let (est, sim) = self.estimate(s);
        let limits = Limits::of(self.job);
        let mut failure = judge(self.job, &est, &limits, sim.is_some());
        if let Some(g) = &sim
            && g.run(s.expandable_segments).oom.is_some()
            && failure.as_ref().is_none_or(|f| f.phase >= Phase::Train)
        {
            let full = limits.gpu.map(|c| self.simulate(s, c));
            failure = verdict::simulated_oom(g, full.as_ref(), s.expandable_segments);
        }
        (est, sim, failure)
    }
}

/// Plans `job`: estimate, verdict, recommendation.
pub fn plan(job: &Job, coeffs: &Coefficients, source: &str, warnings: Vec<String>) -> PlanReport {
    let mut planner = Planner::new(job, coeffs);
    let (est, gpu_simulation, failure) = planner.judge(&job.settings);
    let limits = Limits::of(job);
    let (peak_host, host_phase, peak_gpu, gpu_phase) = peaks(&est);
    let (found, searched) = search::search(job, coeffs);
    // The search judged the GPU on its tensors; verify the best candidates
    // with the simulated allocator, as configured and then with expandable segments.
    let mut recommended = None;
    for f in found.into_iter().take(400) {
        let mut s = f.settings.clone();
        if planner.judge(&s).2.is_none() {
            recommended = Some(recommendation(&mut planner, &s, f.epoch_seconds));
            break;
        }
        if !s.expandable_segments {
            s.expandable_segments = true;
            if planner.judge(&s).2.is_none() {
                recommended = Some(recommendation(&mut planner, &s, f.epoch_seconds));
                break;
            }
        }
    }
    let min_host =
        ((peak_host as f64 / (1.0 - job.margin)) / (1u64 << 30) as f64).ceil() as u64 * (1 << 30);
    PlanReport {
        job: job.name.clone(),
        source: source.to_string(),
        fits: failure.is_none(),
        peak_host_bytes: peak_host,
        peak_phase: host_phase,
        peak_gpu_bytes: peak_gpu,
        peak_gpu_phase: gpu_phase,
        predicted_exit_code: failure.as_ref().map(|f| f.exit_code),
        failure,
        limits,
        accounting: job.accounting,
        ranks_per_node: job.ranks_per_node,
        settings: job.settings.clone(),
        components: est.phases,
        train_batch: est.train_batch,
        min_host_bytes: min_host,
        recommended,
        candidates_searched: searched,
        gpu_simulation,
        coefficients: coeffs.source.clone(),
        warnings,
    }
}

/// Describes `found` as changes from the job's settings, each with its saving.
fn recommendation(planner: &mut Planner, to: &Settings, epoch_seconds: f64) -> Recommendation {
    let mut cur = planner.job.settings.clone();
    let mut peak = |s: &Settings| {
        let (h, _, g, _) = peaks(&planner.estimate(s).0);
        (h as i64, g as i64)
    };
    let mut last = peak(&cur);
    let mut changes = Vec::new();
    macro_rules! step {
        ($field:ident, $name:expr, $fmt:expr) => {
            if cur.$field != to.$field {
                let from = $fmt(&cur.$field);
                cur.$field = to.$field.clone();
                let now = peak(&cur);
                changes.push(Change {
                    setting: $name,
                    how: how($name),
                    from,
                    to: $fmt(&to.$field),
                    saves_host_bytes: last.0 - now.0,
                    saves_gpu_bytes: last.1 - now.1,
                });
                last = now;
            }
        };
    }
    step!(shared_sampler, "shared_sampler", |v: &bool| v.to_string());
    step!(is_sorted, "is_sorted", |v: &bool| v.to_string());
    step!(
        eval_loaders,
        "eval_loaders",
        |v: &crate::spec::EvalLoaders| v.to_string()
    );
    step!(num_workers, "num_workers", |v: &u32| v.to_string());
    step!(persistent_workers, "persistent_workers", |v: &bool| v
        .to_string());
    step!(prefetch_factor, "prefetch_factor", |v: &u32| v.to_string());
    step!(pin_memory, "pin_memory", |v: &bool| v.to_string());
    step!(fanout, "fanout", |v: &Vec<i64>| format!("{v:?}"));
    step!(batch_size, "batch_size", |v: &u64| v.to_string());
    step!(expandable_segments, "expandable_segments", |v: &bool| v
        .to_string());
    Recommendation {
        batch_size: to.batch_size,
        fanout: to.fanout.clone(),
        num_workers: to.num_workers,
        persistent_workers: to.persistent_workers,
        eval_loaders: to.eval_loaders,
        pin_memory: to.pin_memory,
        prefetch_factor: to.prefetch_factor,
        shared_sampler: to.shared_sampler,
        is_sorted: to.is_sorted,
        expandable_segments: to.expandable_segments,
        peak_host_bytes: last.0 as u64,
        peak_gpu_bytes: last.1 as u64,
        epoch_seconds,
        changes,
    }
}

/// What to write in the training script for each recommended change.
fn how(setting: &str) -> &'static str {
    match setting {
        "shared_sampler" => {
            "build one NeighborSampler(data, num_neighbors) and pass neighbor_sampler= to every NeighborLoader"
        }
        "is_sorted" => {
            "sort edge_index by destination once (sort_edge_index(..., sort_by_row=False)), save it, pass is_sorted=True"
        }
        "eval_loaders" => {
            "resident: build val/test loaders once at start; on_demand: build, use and del them at each evaluation"
        }
        "num_workers" => "NeighborLoader(num_workers=...)",
        "persistent_workers" => "NeighborLoader(persistent_workers=...)",
        "prefetch_factor" => "NeighborLoader(prefetch_factor=...)",
        "pin_memory" => "NeighborLoader(pin_memory=...)",
        "fanout" => "NeighborLoader(num_neighbors=[...])",
        "batch_size" => "NeighborLoader(batch_size=...); scale the learning rate with it",
        "expandable_segments" => {
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch >= 2.1)"
        }
        _ => "",
    }
}
