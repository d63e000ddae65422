//! The designed set of real PyG runs that `headroom calibrate` makes on the
//! user's own stack: one generated graph, and settings chosen so that every
//! fitted coefficient the runs can reach is moved by at least two of them
//! (workers or none, persistent or not, one epoch or two, a step whose
//! tensors glibc keeps in its heap and one whose tensors it maps). Which
//! run moves which coefficient is not asserted here: `columns` computes it
//! from the estimate, on the planned jobs before the runs and on the
//! observed ones after.

use serde_json::{Value, json};

use crate::error::Result;
use crate::spec::{Job, JobSpec};

/// The graph every run generates (train.py: Chung-Lu, power-law in-degree).
#[derive(Debug, Clone, Copy)]
pub struct Graph {
    /// Nodes.
    pub nodes: u64,
    /// Directed edges.
    pub edges: u64,
    /// Features per node (float32).
    pub features: u64,
    /// Classes.
    pub classes: u64,
    /// Tail exponent of the in-degree (weights i^(-1/(exponent-1))).
    pub exponent: f64,
    /// Train, validation and test seeds.
    pub splits: (u64, u64, u64),
    /// Neighbors per hop.
    pub fanout: [i64; 2],
}

/// 100,000 nodes of 128 features (49 MiB) and 4.4M edges: each CSC array
/// of a loader (34 MiB) is over glibc's 32 MiB mmap ceiling, as on the
/// large graphs headroom plans for (a smaller graph's build arrays are kept
/// in the heap, which no coefficient of a large job should learn from).
/// Features, hidden channels and classes are the real-run corpus's
/// (benches/pyg/case.py), so that what the model misses on these runs is
/// what it misses on a user's.
pub const GRAPH: Graph = Graph {
    nodes: 100_000,
    edges: 4_400_000,
    features: 128,
    classes: 32,
    exponent: 2.2,
    splits: (2048, 512, 512),
    fanout: [10, 5],
};

/// One run of the design.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// Its name in reports and as its directory.
    pub name: &'static str,
    /// Seeds per batch: up to 256 a step's tensors (256 floats for each of
    /// about 14,000 nodes) stay under glibc's 32 MiB mmap ceiling (heap);
    /// from 768 (36,000 nodes) they are over it (mapped).
    pub batch: u64,
    /// DataLoader workers of every loader.
    pub workers: u32,
    /// Persistent workers.
    pub persistent: bool,
    /// Epochs: a second one runs on a grown heap that workers were forked from.
    pub epochs: u32,
}

/// Hidden channels (the corpus's), the widest tensor of a step.
pub const HIDDEN: u64 = 256;

/// The runs, in the order they are made.
pub const DESIGN: &[Setting] = &[
    Setting {
        name: "heap-w2-persistent",
        batch: 128,
        workers: 2,
        persistent: true,
        epochs: 1,
    },
    Setting {
        name: "heap-w1",
        batch: 256,
        workers: 1,
        persistent: false,
        epochs: 1,
    },
    Setting {
        name: "heap-w2-persistent-2ep",
        batch: 256,
        workers: 2,
        persistent: true,
        epochs: 2,
    },
    Setting {
        name: "heap-w1-2ep",
        batch: 128,
        workers: 1,
        persistent: false,
        epochs: 2,
    },
    Setting {
        name: "mapped-w2-persistent",
        batch: 768,
        workers: 2,
        persistent: true,
        epochs: 1,
    },
    Setting {
        name: "mapped-w1",
        batch: 1024,
        workers: 1,
        persistent: false,
        epochs: 1,
    },
    Setting {
        name: "mapped-w2-persistent-2ep",
        batch: 1024,
        workers: 2,
        persistent: true,
        epochs: 2,
    },
    Setting {
        name: "mapped-w1-2ep",
        batch: 768,
        workers: 1,
        persistent: false,
        epochs: 2,
    },
];

impl Setting {
    /// The settings train.py reads (`train.py run JSON`).
    pub fn script_args(&self, g: &Graph, seed: u64) -> Value {
        json!({
            "nodes": g.nodes, "edges": g.edges, "features": g.features,
            "classes": g.classes, "exponent": g.exponent,
            "train": g.splits.0, "valid": g.splits.1, "test": g.splits.2,
            "fanout": g.fanout, "hidden": HIDDEN, "batch": self.batch,
            "workers": self.workers, "persistent": self.persistent,
            "epochs": self.epochs, "eval_loaders": "resident", "seed": seed,
        })
    }

    /// The job this run is planned as before it runs: the graph's degrees
    /// from the generator's own law (the observed job has the measured ones).
    pub fn planned_job(&self, g: &Graph) -> Result<Job> {
        let (zero_fraction, max) = expected_degrees(g);
        let spec: JobSpec = serde_json::from_value(json!({
            "name": self.name,
            "dataset": {
                "name": "calibration graph", "nodes": g.nodes, "edges": g.edges,
                "features": g.features, "classes": g.classes,
                "splits": {"train": g.splits.0, "valid": g.splits.1, "test": g.splits.2},
                "degree": {"exponent": g.exponent, "zero_fraction": zero_fraction, "max": max},
            },
            "model": {"conv": "sage", "layers": 2, "hidden": HIDDEN,
                      "optimizer": "adam", "dropout": 0.0},
            "loader": {"batch_size": self.batch, "fanout": g.fanout,
                       "num_workers": self.workers, "persistent_workers": self.persistent,
                       "eval_loaders": "resident"},
            "device": "cpu",
            "epochs": self.epochs,
        }))
        .map_err(|e| crate::error::Error::Internal(format!("design job: {e}")))?;
        Job::from_spec(&spec)
    }
}

/// The generator's expected in-degrees: node i (from 1) draws a share
/// F(i+1) − F(i) of the edges, F(x) = (x^q − 1) / ((n+1)^q − 1) with
/// q = 1 − 1/(exponent − 1); a Poisson count of E times that. Returns the
/// expected share of nodes without in-edges and the largest expected degree.
pub fn expected_degrees(g: &Graph) -> (f64, u64) {
    let q = 1.0 - 1.0 / (g.exponent - 1.0);
    let n = g.nodes as f64;
    let cdf = |x: f64| (x.powf(q) - 1.0) / ((n + 1.0).powf(q) - 1.0);
    let e = g.edges as f64;
    let zero: f64 = (1..=g.nodes)
        .map(|i| (-e * (cdf(i as f64 + 1.0) - cdf(i as f64))).exp())
        .sum();
    (zero / n, (e * cdf(2.0)).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::columns::{RunData, phase_bytes};
    use crate::calibrate::fit_runs::coverage;
    use crate::estimate::Coefficients;

    /// The design's runs as planned, each phase "measured" as predicted.
    fn planned() -> Vec<RunData> {
        DESIGN
            .iter()
            .map(|s| {
                let job = s.planned_job(&GRAPH).unwrap();
                let measured = phase_bytes(&job, &Coefficients::default())
                    .into_iter()
                    .map(|(p, b)| (p.to_string(), b))
                    .collect();
                RunData {
                    name: s.name.into(),
                    job,
                    measured,
                }
            })
            .collect()
    }

    #[test]
    fn every_coefficient_the_design_reaches_is_moved_by_two_runs() {
        let runs = planned();
        let c = Coefficients::default();
        for r in &runs {
            let e = crate::estimate::estimate(&r.job, &r.job.settings, &c);
            eprintln!(
                "{}: tail {:.0} nodes, {:.0} edges",
                r.name, e.train_batch.tail_nodes, e.train_batch.tail_edges
            );
        }
        let cov = coverage(&runs, &c);
        for k in &cov {
            let cells: Vec<String> = k
                .effect
                .iter()
                .map(|e| format!("{:5.1}", e * 100.0))
                .collect();
            eprintln!("{:<28} {} -> {}", k.name, cells.join(" "), k.moved_by);
        }
        let once: Vec<&str> = cov
            .iter()
            .filter(|k| k.moved_by == 1)
            .map(|k| k.name)
            .collect();
        assert!(once.is_empty(), "moved by one run only: {once:?}");
        let reached = cov.iter().filter(|k| k.moved_by >= 2).count();
        assert!(
            reached * 2 > cov.len(),
            "most fitted coefficients are reached: {cov:?}"
        );
    }

    #[test]
    fn the_generators_law_has_few_isolated_nodes_and_a_hub() {
        let (zero, max) = expected_degrees(&GRAPH);
        assert!(zero > 0.0 && zero < 0.1, "{zero}");
        // Node 1's share: F(2) = (2^q - 1)/((n+1)^q - 1).
        assert!(max > GRAPH.edges / 100 && max < GRAPH.edges / 10, "{max}");
    }
}
