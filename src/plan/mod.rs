//! `headroom plan` and `headroom check`: estimate a job, judge it against its
//! budget, and recommend the fastest settings that fit with the margin.

mod annotate;
pub mod band;
pub mod check_text;
pub mod cli;
mod cli_memory;
pub mod gpu_orders;
pub mod gpu_sim;
mod machine;
mod places;
mod planner;
pub mod provenance;
mod recommend;
mod render;
mod render_advice;
mod render_head;
pub mod search;
pub mod shm_check;
mod speed;
pub mod verdict;

use serde::Serialize;

use crate::estimate::{Coefficients, PhaseEstimate, SampleStats, Settings};
use crate::spec::{Accounting, Job};
use gpu_sim::GpuSimulation;
pub use machine::Recommended;
pub use places::{Places, places_of};
use planner::Planner;
use recommend::recommendation;
use verdict::{Failure, Limits, peaks};

/// The report `plan` and `check` print. JSON and YAML write it through
/// machine.rs, which leaves out GPU figures for a job on the CPU.
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct PlanReport {
    /// Job name.
    pub job: String,
    /// Where the job came from.
    pub source: String,
    /// Whether every phase fits every budget with the margin; null when no
    /// budget was given (nothing was checked).
    pub fits: Option<bool>,
    /// Whether any budget (host, GPU, /dev/shm) was given to check against;
    /// false: the figures are predictions only and nothing was judged.
    pub checked: bool,
    /// Where the model trains (cpu: no GPU figures are reported).
    pub device: crate::spec::Device,
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
    /// Where the real host peak is likely to be, from the model's error on
    /// random real runs, and whether the host limit lies inside that range.
    pub host_band: band::HostBand,
    /// The largest settings that fit with the margin (the user's own when
    /// they fit), or where nothing fits the settings that come closest
    /// (`fits: false`, with the limit they need); null only when no budget
    /// was given.
    pub recommended: Option<Recommendation>,
    /// Where the limit lies inside the model's uncertainty and the worst
    /// under-prediction seen exceeds the margin: the largest settings whose
    /// worst case still fits (null when they are the recommendation's).
    pub recommended_cautious: Option<Recommendation>,
    /// Where the recommendation relies on a preprocessing step (sorting
    /// edge_index once and saving it): the best settings without it.
    pub without_preprocessing: Option<Recommendation>,
    /// The preprocessing step the recommendation relies on: its own peak and time.
    pub preprocessing: Option<Preprocessing>,
    /// Settings the search estimated.
    pub candidates_searched: usize,
    /// The caching-allocator simulation behind the GPU figures (null without a GPU budget).
    pub gpu_simulation: Option<GpuSimulation>,
    /// Where the model's coefficients came from.
    pub coefficients: String,
    /// For each host coefficient the plan used: its value and where it came from.
    pub coefficient_sources: Vec<provenance::CoefficientSource>,
    /// Things to know (sbatch variables the python line overrides, ...).
    pub warnings: Vec<String>,
    /// What the estimate assumed where the job did not say (degree shape, dropout).
    pub assumptions: Vec<String>,
    /// Where each field was read, when the job came from a script: GitHub
    /// annotations are placed there (annotate.rs).
    #[serde(skip)]
    pub places: Places,
}

/// A recommended configuration and what each change does.
#[derive(Debug, Clone, Serialize)]
pub struct Recommendation {
    /// Whether these settings fit with the margin; false: nothing fits and
    /// these come closest.
    pub fits: bool,
    /// The host limit (`--mem`) these settings need with the margin, bytes.
    pub needs_host_bytes: u64,
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
    /// gc.collect() after each on-demand loader is deleted.
    pub gc_collect: bool,
    /// Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
    pub expandable_segments: bool,
    /// Host peak at these settings, bytes.
    pub peak_host_bytes: u64,
    /// GPU peak at these settings, bytes.
    pub peak_gpu_bytes: u64,
    /// /dev/shm peak at these settings, bytes.
    pub peak_shm_bytes: u64,
    /// What the /dev/shm the recommendation needs was checked against,
    /// when it moves a GiB or more there (see `shm_check.rs`).
    pub shm_check: Option<String>,
    /// Each change from the user's settings, applied in order, and the host peak it saves.
    pub changes: Vec<Change>,
}

/// What a change costs the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Training computes the same thing (workers, loaders, sampler sharing, gc).
    Free,
    /// A one-off step before the job (sorting and saving edge_index).
    Preprocessing,
    /// What the model learns from changes (batch size, fanout).
    Training,
}

/// One setting changed by the recommendation.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// Setting name as in the job spec.
    pub setting: &'static str,
    /// What the change costs the user.
    pub kind: ChangeKind,
    /// The user's value.
    pub from: String,
    /// The recommended value.
    pub to: String,
    /// How to make the change in PyG / PyTorch.
    pub how: &'static str,
    /// What a change to batch size or fanout does to training, by the plan's
    /// batch model: nodes a batch and steps an epoch, before and after
    /// (null for the changes that leave training as it is).
    pub effect: Option<String>,
    /// Host peak saved by this change after the ones before it (negative: costs).
    pub saves_host_bytes: i64,
    /// GPU peak saved by this change after the ones before it.
    pub saves_gpu_bytes: i64,
    /// /dev/shm peak saved by this change after the ones before it.
    pub saves_shm_bytes: i64,
}

/// A one-off preprocessing step the recommendation relies on.
#[derive(Debug, Clone, Serialize)]
pub struct Preprocessing {
    /// What to run.
    pub step: &'static str,
    /// Its host peak with the dataset loaded as the job loads it: the
    /// dataset, the sort's keys, indices and scratch, the permuted copy, bytes.
    pub peak_host_bytes: u64,
    /// The host limit that needs with the margin, bytes.
    pub needs_host_bytes: u64,
    /// The peak when only edge_index is loaded for the step (no features), bytes.
    pub edge_index_only_peak_bytes: u64,
    /// The host limit that needs with the margin, bytes.
    pub edge_index_only_needs_bytes: u64,
    /// Edges sorted.
    pub edges: u64,
}

/// The estimate `plan` makes of `job` at its own settings, with the training
/// GPU simulated on the card less the margin (None without a GPU budget).
pub fn estimate_as_planned(
    job: &Job,
    coeffs: &Coefficients,
) -> (crate::estimate::Estimate, Option<GpuSimulation>) {
    Planner::new(job, coeffs).estimate(&job.settings)
}

/// Plans `job`: estimate, verdict, recommendation.
pub fn plan(
    job: &Job,
    coeffs: &Coefficients,
    source: &str,
    mut warnings: Vec<String>,
) -> PlanReport {
    // A calibration's lower fitted values hold only within its runs' regime.
    let (coeffs, beyond) = coeffs.for_job(job);
    let coeffs = &coeffs;
    warnings.extend(beyond);
    let mut planner = Planner::new(job, coeffs);
    let (est, gpu_simulation, failure) = planner.judge(&job.settings);
    let limits = Limits::of(job);
    let (peak_host, host_phase, peak_gpu, gpu_phase) = peaks(&est);
    let checked = limits.host.is_some() || limits.gpu.is_some() || limits.shm.is_some();
    // With no budget there is nothing to fit, so nothing to recommend.
    let searched = if checked {
        search_verified(job, coeffs, &mut planner)
    } else {
        search::Searched::default()
    };
    let recommended = match (searched.fitting.first(), &searched.closest) {
        (Some(f), _) => Some(recommendation(&mut planner, &f.settings, true)),
        (None, Some((s, _))) => Some(recommendation(&mut planner, s, false)),
        (None, None) => None,
    };
    let host_band = band::host_band(peak_host, job.accounting, limits.host);
    let main = (searched.fitting.first().map(|f| &f.settings))
        .or(searched.closest.as_ref().map(|c| &c.0))
        .zip(recommended.as_ref().map(|r| r.peak_host_bytes));
    let recommended_cautious = cautious(job, coeffs, &mut planner, &host_band, main);
    let without_preprocessing = match (
        searched.without_preprocessing.first(),
        &searched.closest_without_preprocessing,
    ) {
        (Some(f), _) => Some(recommendation(&mut planner, &f.settings, true)),
        (None, Some((s, _))) => Some(recommendation(&mut planner, s, false)),
        (None, None) => None,
    };
    let preprocessing = recommended
        .as_ref()
        .filter(|r| r.is_sorted && !job.settings.is_sorted)
        .map(|_| recommend::sort_step(job, coeffs));
    let searched_count = searched.count;
    let min_host = recommend::needs(peak_host, job.margin);
    PlanReport {
        job: job.name.clone(),
        source: source.to_string(),
        fits: checked.then_some(failure.is_none()),
        checked,
        device: job.device,
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
        host_band,
        recommended,
        recommended_cautious,
        without_preprocessing,
        preprocessing,
        candidates_searched: searched_count,
        gpu_simulation,
        coefficients: coeffs.source.clone(),
        coefficient_sources: provenance::coefficient_sources(job, coeffs),
        warnings: [warnings, provenance::risks(job, &est.eval_batch)].concat(),
        assumptions: provenance::assumptions(job),
        places: Places::default(),
    }
}

/// The search over `target` (the job, or the job with its host limit cut).
/// Where the GPU is simulated, each setting that fits by its tensors is
/// verified with the allocator simulation of `planner`'s job, as configured
/// and then with expandable segments (cached per batch size and fanout).
fn search_verified(target: &Job, coeffs: &Coefficients, planner: &mut Planner) -> search::Searched {
    let simulated = Limits::of(target).gpu.is_some() && target.device == crate::spec::Device::Cuda;
    let mut verify = |s: &Settings| {
        let mut s = s.clone();
        if planner.judge(&s).2.is_none() {
            return Some(s);
        }
        if s.expandable_segments {
            return None;
        }
        s.expandable_segments = true;
        planner.judge(&s).2.is_none().then_some(s)
    };
    search::search(
        target,
        coeffs,
        if simulated { Some(&mut verify) } else { None },
    )
}

/// Where the budget lies inside the model's uncertainty, or the advice
/// (`main`: its settings and host peak) fits only at the model's estimate:
/// the largest settings that fit with the worst under-prediction seen on
/// random real runs (the host limit cut so that the search's margin covers
/// it), when they differ from the advice.
fn cautious(
    job: &Job,
    coeffs: &Coefficients,
    planner: &mut Planner,
    band: &band::HostBand,
    main: Option<(&Settings, u64)>,
) -> Option<Recommendation> {
    let (settings, peak) = main?;
    let limit = job.host_budget?;
    let worst = band::host_band(peak, job.accounting, None).worst_high_bytes;
    if !band.straddles && worst <= limit {
        return None;
    }
    let mut tight = job.clone();
    tight.host_budget = Some(band::cautious_limit(limit, job.margin, job.accounting)?);
    let found = search_verified(&tight, coeffs, planner);
    let best = &found.fitting.first()?.settings;
    (best != settings).then(|| recommendation(planner, best, true))
}
