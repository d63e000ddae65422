//! From a run's measurements to coefficients and back to predictions, all
//! pure: the `Job` that describes the calibration workload to the real
//! estimators, the coefficients fitted from what this run measured, and the
//! table of predicted against measured for every estimator compared.

use serde::Serialize;

use super::workload::{Config, Measured};
use crate::error::Result;
use crate::estimate::{Coefficients, Estimate, estimate};
use crate::spec::{Job, JobSpec};

/// The calibration workload as a job the estimators understand: an inline
/// dataset with the synthetic graph's shape, a 2-layer SAGE trained with SGD
/// on the CPU, one train loader (no evaluation loaders), cgroup accounting.
pub fn job_for(cfg: &Config, edges: u64) -> Result<Job> {
    job_on(cfg, edges, None)
}

/// [`job_for`] trained on a GPU of `gpu_bytes` when given, else on the CPU.
pub fn job_on(cfg: &Config, edges: u64, gpu_bytes: Option<u64>) -> Result<Job> {
    let mut spec = serde_json::json!({
        "name": "calibration",
        "dataset": {
            "name": "calibration-graph",
            "nodes": cfg.nodes,
            "edges": edges,
            "undirected": true,
            "features": cfg.features,
            "classes": cfg.classes,
            "splits": {"train": cfg.train_nodes(), "valid": 0, "test": 0},
            "degree": {"exponent": cfg.shape.exponent, "zero_fraction": cfg.shape.zero_fraction, "max": cfg.shape.max},
        },
        "model": {"conv": "sage", "layers": 2, "hidden": cfg.hidden, "optimizer": "sgd"},
        "loader": {
            "batch_size": cfg.batch_size, "fanout": cfg.fanout, "num_workers": cfg.workers,
            "prefetch_factor": cfg.prefetch, "eval_loaders": "none",
        },
        "device": "cpu",
        "epochs": 1,
    });
    if let Some(b) = gpu_bytes {
        spec["device"] = "cuda".into();
        spec["budget"] = serde_json::json!({ "gpu": format!("{b}B") });
    }
    let spec: JobSpec = serde_json::from_value(spec)
        .map_err(|e| crate::error::Error::Internal(format!("calibration job: {e}")))?;
    Job::from_spec(&spec)
}

/// Index bytes of a batch in a worker while it samples: n_id, row, col, e_id.
fn index_bytes(nodes: u64, edges: u64) -> u64 {
    8 * (nodes + 3 * edges)
}

/// Bytes per edge alive at the workload's CSC-building moment: the
/// permutation, the sorted column and the permuted row (8 each; its
/// `sort_unstable` needs no scratch), against torch's 32 (values, indices
/// and a second buffer of each).
pub const WORKLOAD_SORT_BYTES: u64 = 24;

/// Coefficients fitted from one run; those it cannot measure (CUDA) keep `base`'s.
///
/// - runtime_bytes: the parent's PSS before any data.
/// - worker_private_bytes: the mean USS of the idle workers at the end of training.
/// - sampler_bytes_per_node: least squares through the origin of each batch's
///   sampler scratch (the worker's USS growth at the sampler's peak less the
///   index arrays it holds) against its sampled nodes.
/// - sort_bytes_per_element: not fitted but the workload's own mechanism
///   ([`WORKLOAD_SORT_BYTES`]): its CSC is built with Rust's in-place sort,
///   not torch's, so torch's radix scratch must not be predicted for it.
pub fn fit(m: &Measured, base: &Coefficients) -> Coefficients {
    let mut c = base.clone();
    c.sort_bytes_per_element = WORKLOAD_SORT_BYTES;
    c.runtime_bytes = m.baseline_pss;
    if !m.idle_worker_uss.is_empty() {
        c.worker_private_bytes =
            m.idle_worker_uss.iter().sum::<u64>() / m.idle_worker_uss.len() as u64;
    }
    let (mut xy, mut xx) = (0.0f64, 0.0f64);
    for b in &m.batches {
        let grown = b.uss_sampled.saturating_sub(b.uss_before);
        let scratch = grown.saturating_sub(index_bytes(b.nodes, b.edges)) as f64;
        xy += b.nodes as f64 * scratch;
        xx += (b.nodes as f64).powi(2);
    }
    if xx > 0.0 {
        c.sampler_bytes_per_node = (xy / xx).round() as u64;
    }
    c.source = "headroom calibrate".into();
    c
}

/// One estimator's prediction against this run's measurement.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EstimatorRow {
    /// What is compared.
    pub name: String,
    /// What the estimator predicts, bytes.
    pub predicted_bytes: u64,
    /// What was measured, bytes.
    pub measured_bytes: u64,
    /// (predicted − measured) / measured.
    pub rel_error: f64,
}

impl EstimatorRow {
    pub(super) fn new(name: String, predicted: u64, measured: u64) -> EstimatorRow {
        EstimatorRow {
            name,
            predicted_bytes: predicted,
            measured_bytes: measured,
            rel_error: (predicted as f64 - measured as f64) / (measured.max(1) as f64),
        }
    }
}

/// The estimate of the calibration job with `coeffs`.
pub fn predict(job: &Job, coeffs: &Coefficients) -> Estimate {
    estimate(job, &job.settings, coeffs)
}

/// Predicted against measured: each phase's host peak (PSS sum plus the
/// shared memory nobody maps: every page once, as a cgroup charges) and the
/// mean batch in shared memory. RSS is reported per phase but not compared:
/// it counts the binary's and libraries' file pages in full, as many as this
/// process happened to fault in (fault-around maps more of them when other
/// processes have read them), which is neither what a cgroup charges nor
/// what the estimators model.
pub fn compare(job: &Job, coeffs: &Coefficients, m: &Measured) -> Vec<EstimatorRow> {
    let est = predict(job, coeffs);
    let mut rows = Vec::new();
    for (phase, peak) in &m.phases {
        let Some(p) = est.phases.iter().find(|p| p.phase.as_str() == *phase) else {
            continue;
        };
        rows.push(EstimatorRow::new(
            format!("{phase} host peak (PSS sum)"),
            p.host_bytes,
            peak.pss_sum,
        ));
    }
    if !m.batches.is_empty() {
        let mean = m.batches.iter().map(|b| b.bytes).sum::<u64>() / m.batches.len() as u64;
        let seeds = job.settings.batch_size as f64;
        let t = &est.train_batch;
        let predicted: f64 = crate::estimate::batch_tensors(job, seeds, t.mean_nodes, t.mean_edges)
            .iter()
            .sum();
        rows.push(EstimatorRow::new(
            "mean batch in shared memory".into(),
            predicted as u64,
            mean,
        ));
    }
    rows
}

/// The peak host bytes the estimators predict for the calibration job.
pub fn predicted_peak(job: &Job, coeffs: &Coefficients) -> u64 {
    predict(job, coeffs)
        .phases
        .iter()
        .map(|p| p.host_bytes)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::worker::Done;

    fn batch(nodes: u64, edges: u64, scratch: u64) -> Done {
        let before = 10 << 20;
        Done {
            slot: 0,
            nodes,
            edges,
            bytes: 0,
            uss_before: before,
            uss_sampled: before + index_bytes(nodes, edges) + scratch,
            uss_built: 0,
        }
    }

    #[test]
    fn the_fit_reads_the_slope_and_the_idle_workers() {
        // Scratch 40 B/node at 1000 nodes and 60 B/node at 2000:
        // Σxy = 1000·40,000 + 2000·120,000 = 280,000,000; Σx² = 5,000,000 → 56.
        let m = Measured {
            baseline_pss: 5 << 20,
            idle_worker_uss: vec![3 << 20, 5 << 20],
            batches: vec![batch(1000, 3000, 40_000), batch(2000, 7000, 120_000)],
            ..Measured::default()
        };
        let c = fit(&m, &Coefficients::default());
        assert_eq!(c.sampler_bytes_per_node, 56);
        assert_eq!(c.worker_private_bytes, 4 << 20);
        assert_eq!(c.runtime_bytes, 5 << 20);
        assert_eq!(
            c.cuda_context_bytes,
            Coefficients::default().cuda_context_bytes
        );
    }
}
