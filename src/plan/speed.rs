//! A relative epoch-cost model used only to rank settings that fit: sampling
//! cost on CPU cores (parallel across workers), GPU compute and transfer per
//! batch, worker start-up each epoch unless persistent, and the CSC sort each
//! on-demand evaluation loader repeats. Its constants are seconds-shaped but
//! were never checked against a timed epoch (the corpus times whole runs,
//! load included, not epochs), so the number is an ordering key only: it is
//! never printed or written to JSON. The ordering (more workers faster,
//! persistent faster, resident faster) is what the planner relies on.

use crate::estimate::{SampleStats, Settings};
use crate::spec::{Device, EvalLoaders, Job};

/// Seconds per sampled edge on one core (CSC lookup, random draw, dedup).
const SAMPLE_EDGE_S: f64 = 60e-9;
/// Seconds per byte of features gathered into a batch.
const GATHER_BYTE_S: f64 = 0.4e-9;
/// Seconds per byte moved host to device (about 12 GB/s).
const COPY_BYTE_S: f64 = 1.0 / 12e9;
/// Seconds per sampled edge per hidden channel per layer on the GPU.
const GPU_EDGE_CHANNEL_S: f64 = 4e-12;
/// Fixed seconds per step (kernel launches, Python).
const STEP_S: f64 = 3e-3;
/// Seconds to start one worker process.
const WORKER_START_S: f64 = 1.5;
/// Seconds per edge to sort a graph into CSC.
const SORT_EDGE_S: f64 = 15e-9;

/// The ranking cost of one training epoch plus its evaluation (not seconds).
pub fn epoch_cost(job: &Job, s: &Settings, train: &SampleStats, edges: u64) -> f64 {
    let d = &job.dataset;
    let row_bytes = (d.features * d.feature_dtype.size()) as f64;
    let batches = d.splits().train.div_ceil(s.batch_size) as f64;
    let sample = train.mean_edges * SAMPLE_EDGE_S + train.mean_nodes * row_bytes * GATHER_BYTE_S;
    let width = match &job.model {
        crate::spec::ModelKind::Gnn { hidden, layers, .. } => (*hidden * *layers as u64) as f64,
        crate::spec::ModelKind::Generic { .. } => 1.0,
    };
    let mut compute = train.mean_edges * width * GPU_EDGE_CHANNEL_S
        + train.mean_nodes * row_bytes * COPY_BYTE_S
        + STEP_S;
    if job.device == Device::Cpu {
        compute *= 30.0;
    }
    let w = s.num_workers as f64;
    let per_batch = if s.num_workers == 0 {
        sample + compute
    } else {
        compute.max(sample / w)
    };
    let mut total = batches * per_batch;
    if s.num_workers > 0 && !s.persistent_workers {
        total += WORKER_START_S
            * w
            * if s.eval_loaders == EvalLoaders::None {
                1.0
            } else {
                3.0
            };
    }
    if s.eval_loaders == EvalLoaders::OnDemand && !s.shared_sampler {
        total += 2.0 * edges as f64 * SORT_EDGE_S;
    }
    total
}
