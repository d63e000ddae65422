//! The jobs a calibration's fitted coefficients were fitted on, and the rule
//! that keeps a fitted value from being carried beyond them downwards.
//!
//! A coefficient `calibrate` fits to phase peaks is what made the model
//! match *those* runs; on a larger job it stands for whatever the model
//! misses there too. Measured on the defaults' own stack, the designed
//! runs (100,000 nodes) fit `worker_private_bytes` at 11.8 MiB against the
//! 44 MiB the real-run corpus (graphs of 100k-4M nodes) gives: the stack is
//! the same, so the difference is the regime, not the stack. Under-
//! prediction gets jobs killed, so a fitted value *lower* than the default
//! applies only to jobs within the runs' graph and batch; beyond them the
//! default stands. A higher fitted value, and a measured one (a stack fact:
//! the runtime, library pages), apply everywhere.

use serde::{Deserialize, Serialize};

use super::Coefficients;
use super::coeff_table::TABLE;
use crate::spec::Job;

/// The largest graph and batch among a calibration's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Regime {
    /// Nodes of the largest graph.
    pub nodes: u64,
    /// Edges of the largest graph.
    pub edges: u64,
    /// Seeds per batch of the largest batch.
    pub batch_size: u64,
}

impl Regime {
    /// The envelope of `jobs` (None for none).
    pub fn of<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> Option<Regime> {
        jobs.into_iter()
            .map(|j| Regime {
                nodes: j.dataset.nodes,
                edges: j.dataset.edges,
                batch_size: j.settings.batch_size,
            })
            .reduce(|a, b| Regime {
                nodes: a.nodes.max(b.nodes),
                edges: a.edges.max(b.edges),
                batch_size: a.batch_size.max(b.batch_size),
            })
    }

    /// What of `job` lies beyond the regime, in words (None: within it).
    pub fn beyond(&self, job: &Job) -> Option<String> {
        let mut out = Vec::new();
        let d = &job.dataset;
        if d.nodes > self.nodes {
            out.push(format!("{} nodes (runs: up to {})", d.nodes, self.nodes));
        }
        if d.edges > self.edges {
            out.push(format!("{} edges (runs: up to {})", d.edges, self.edges));
        }
        if job.settings.batch_size > self.batch_size {
            out.push(format!(
                "batch {} (runs: up to {})",
                job.settings.batch_size, self.batch_size
            ));
        }
        (!out.is_empty()).then(|| out.join(", "))
    }
}

/// Marks the provenance of a fitted coefficient (`calibrate`'s fit writes it).
pub const FITTED: &str = "fitted to the per-phase peaks";

impl Coefficients {
    /// These coefficients as they apply to `job`: a fitted value below the
    /// default goes back to the default when `job` is beyond the runs it
    /// was fitted on. Also returns what was put back and why, for the plan.
    pub fn for_job(&self, job: &Job) -> (Coefficients, Option<String>) {
        let Some(why) = self.regime.as_ref().and_then(|r| r.beyond(job)) else {
            return (self.clone(), None);
        };
        let defaults = Coefficients::default();
        let mut out = self.clone();
        let mut back = Vec::new();
        for k in TABLE.iter().filter(|k| k.fitted) {
            let fitted = self
                .provenance
                .get(k.name)
                .is_some_and(|p| p.starts_with(FITTED));
            let (value, default) = ((k.get)(self), (k.get)(&defaults));
            if fitted && value < default {
                (k.set)(&mut out, default);
                out.provenance.insert(
                    k.name.into(),
                    format!(
                        "default: the calibration's lower fit ({}) is not carried to this job's {why}",
                        k.amount(value, false)
                    ),
                );
                back.push(k.name);
            }
        }
        let note = (!back.is_empty()).then(|| {
            format!(
                "calibration {}: {} kept at the default, since this job's {why} is beyond the runs they were fitted to (a lower fitted value is not extrapolated)",
                self.source,
                back.join(", ")
            )
        });
        (out, note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::JobSpec;

    fn job(dataset: &str, batch: u64) -> Job {
        let mut spec = JobSpec::for_dataset(dataset);
        spec.loader.batch_size = batch;
        Job::from_spec(&spec).expect("job")
    }

    /// A calibration fitted on ogbn-arxiv at batch 1024 that lowered
    /// `worker_private_bytes`, raised `cpu_heap_small_tensors` and
    /// measured a lower runtime.
    fn calibrated() -> Coefficients {
        let mut c = Coefficients {
            source: "cal.yaml".into(),
            ..Coefficients::default()
        };
        c.worker_private_bytes /= 4;
        c.provenance
            .insert("worker_private_bytes".into(), format!("{FITTED}, 8 runs"));
        c.cpu_heap_small_tensors *= 2.0;
        c.provenance
            .insert("cpu_heap_small_tensors".into(), format!("{FITTED}, 8 runs"));
        c.runtime_bytes /= 2;
        c.provenance
            .insert("runtime_bytes".into(), "measured: the runtime".into());
        c.regime = Regime::of([&job("ogbn-arxiv", 1024)]);
        c
    }

    #[test]
    fn a_lower_fitted_value_applies_within_the_runs_and_not_beyond() {
        let c = calibrated();
        let d = Coefficients::default();
        let (within, note) = c.for_job(&job("ogbn-arxiv", 512));
        assert_eq!(within, c);
        assert_eq!(note, None);
        // A larger graph: the lowered fit goes back to the default, the
        // raised one and the measured one stay.
        let (beyond, note) = c.for_job(&job("ogbn-products", 512));
        assert_eq!(beyond.worker_private_bytes, d.worker_private_bytes);
        assert_eq!(beyond.cpu_heap_small_tensors, c.cpu_heap_small_tensors);
        assert_eq!(beyond.runtime_bytes, c.runtime_bytes);
        let note = note.expect("a note");
        assert!(
            note.contains("worker_private_bytes kept at the default"),
            "{note}"
        );
        assert!(note.contains("nodes (runs: up to 169343)"), "{note}");
        assert!(!note.contains("cpu_heap_small_tensors"), "{note}");
        assert!(
            beyond
                .provenance_of("worker_private_bytes")
                .starts_with("default: "),
            "{}",
            beyond.provenance_of("worker_private_bytes")
        );
        // A larger batch on the same graph is beyond them too.
        let (b, note) = c.for_job(&job("ogbn-arxiv", 4096));
        assert_eq!(b.worker_private_bytes, d.worker_private_bytes);
        assert!(
            note.expect("a note")
                .contains("batch 4096 (runs: up to 1024)")
        );
    }

    #[test]
    fn coefficients_without_a_regime_apply_as_they_are() {
        let mut c = calibrated();
        c.regime = None;
        assert_eq!(c.for_job(&job("ogbn-products", 8192)), (c.clone(), None));
    }

    #[test]
    fn the_regime_is_the_envelope_of_the_runs() {
        let (a, b) = (job("ogbn-arxiv", 4096), job("ogbn-products", 512));
        let r = Regime::of([&a, &b]).expect("two runs");
        assert_eq!(r.nodes, b.dataset.nodes);
        assert_eq!(r.edges, b.dataset.edges.max(a.dataset.edges));
        assert_eq!(r.batch_size, 4096);
        assert_eq!(Regime::of(std::iter::empty::<&Job>()), None);
    }
}
