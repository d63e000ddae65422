//! The calibration workload, run by the parent in the phases `plan` models:
//! load (the synthetic graph as a shuffled COO edge_index, features, labels
//! and the train split), build the loader (CSC from COO by sorting, as PyG's
//! `to_csc`, then moved into shared memory for the workers), and train (W
//! re-executed workers sampling into a ring of prefetch·W + 1 batch slots,
//! the parent running a SAGE step on each batch). Every phase is probed at
//! the moment the estimators call its worst.

use std::time::Instant;

use super::epoch::train;
use super::graph::{Graph, GraphSpec};
use super::layout::Layout;
use super::measure::{PhasePeak, Probe};
use super::rng::Rng;
use super::shm::Region;
use super::worker::Done;
use crate::error::{Error, Result};
use crate::profiles::DegreeShape;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Nodes.
    pub nodes: usize,
    /// Mean in-degree.
    pub avg_degree: f64,
    /// Degree shape of the graph.
    pub shape: DegreeShape,
    /// Features per node (float32).
    pub features: usize,
    /// Classes.
    pub classes: usize,
    /// Hidden width of the SAGE model.
    pub hidden: usize,
    /// Worker processes.
    pub workers: u32,
    /// Batches each worker prepares ahead.
    pub prefetch: u32,
    /// Seeds per batch.
    pub batch_size: usize,
    /// Neighbors per hop.
    pub fanout: Vec<i64>,
    /// Training batches (the train split is batches · batch_size nodes).
    pub batches: usize,
    /// Seed.
    pub seed: u64,
}

impl Config {
    /// Nodes of the train split.
    pub fn train_nodes(&self) -> usize {
        (self.batches * self.batch_size).min(self.nodes)
    }
}

/// What a run measured.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Edges of the generated graph.
    pub edges: u64,
    /// The parent's PSS before any data: the runtime.
    pub baseline_pss: u64,
    /// Peaks of load, build_loaders and train.
    pub phases: Vec<(&'static str, PhasePeak)>,
    /// Each worker's USS when idle at the end of training.
    pub idle_worker_uss: Vec<u64>,
    /// Every batch's report from its worker.
    pub batches: Vec<Done>,
    /// Seconds the run took.
    pub seconds: f64,
}

/// Called with (phase, fraction of the run done).
pub type Progress<'a> = &'a mut dyn FnMut(&str, f64);

pub(super) fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("calibration: {what}: {e}"))
}

/// Runs the workload once.
pub fn run(cfg: &Config, progress: Progress) -> Result<Measured> {
    let started = Instant::now();
    super::fix_malloc_threshold();
    let mut probe = Probe::new();
    let mut m = Measured {
        baseline_pss: probe.probe("baseline", 0).root_pss,
        ..Measured::default()
    };
    progress("load", 0.0);
    // Load: the graph as a shuffled COO edge_index (row, col), as a dataset stores it.
    let g = Graph::generate(&GraphSpec {
        nodes: cfg.nodes,
        mean_degree: cfg.avg_degree,
        shape: cfg.shape,
        seed: cfg.seed,
    });
    let edges = g.row.len();
    m.edges = edges as u64;
    let mut col: Vec<i64> = Vec::with_capacity(edges);
    for v in 0..cfg.nodes {
        col.extend(std::iter::repeat_n(v as i64, g.neighbors(v).len()));
    }
    let Graph {
        row: mut src,
        colptr,
        ..
    } = g;
    drop(colptr);
    let mut rng = Rng::new(cfg.seed ^ 0xC0FFEE);
    for i in (1..edges).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        src.swap(i, j);
        col.swap(i, j);
    }
    let l = Layout {
        nodes: cfg.nodes,
        edges,
        features: cfg.features,
        train: cfg.train_nodes(),
    };
    let mut data =
        Region::create("headroom-calibrate-data", l.data_len()).map_err(|e| internal("data", e))?;
    for v in data.slice_mut::<f32>(0, l.nodes * l.features) {
        *v = rng.next_f64() as f32;
    }
    for v in data.slice_mut::<i64>(l.labels_at(), l.nodes) {
        *v = rng.below(cfg.classes as u64) as i64;
    }
    // The train split: distinct random nodes (a partial Fisher-Yates by swaps).
    let mut picked = std::collections::HashMap::with_capacity(l.train);
    for (i, t) in data
        .slice_mut::<i64>(l.train_at(), l.train)
        .iter_mut()
        .enumerate()
    {
        let j = i + rng.below((cfg.nodes - i) as u64) as usize;
        let vj = *picked.get(&j).unwrap_or(&j);
        let vi = *picked.get(&i).unwrap_or(&i);
        picked.insert(j, vi);
        *t = vj as i64;
    }
    drop(picked);
    probe.probe("load", 0);
    progress("build_loaders", 0.3);
    // Build the loader: perm = argsort by (col, row); col[perm] → colptr; row[perm].
    let mut perm: Vec<i64> = (0..edges as i64).collect();
    perm.sort_unstable_by_key(|&e| (col[e as usize], src[e as usize]));
    let col_sorted: Vec<i64> = perm.iter().map(|&e| col[e as usize]).collect();
    let mut colptr = vec![0i64; cfg.nodes + 1];
    for &c in &col_sorted {
        colptr[c as usize + 1] += 1;
    }
    for v in 0..cfg.nodes {
        colptr[v + 1] += colptr[v];
    }
    let row_sorted: Vec<i64> = perm.iter().map(|&e| src[e as usize]).collect();
    probe.probe("build_loaders", 0);
    drop(col_sorted);
    // share_memory_(): each tensor copied into shared memory, then freed.
    let mut graph = Region::create("headroom-calibrate-csc", l.graph_len())
        .map_err(|e| internal("graph", e))?;
    graph
        .slice_mut::<i64>(0, cfg.nodes + 1)
        .copy_from_slice(&colptr);
    drop(colptr);
    graph
        .slice_mut::<i64>(l.row_at(), edges)
        .copy_from_slice(&row_sorted);
    probe.probe("build_loaders", 0);
    drop(row_sorted);
    graph
        .slice_mut::<i64>(l.perm_at(), edges)
        .copy_from_slice(&perm);
    drop(perm);
    probe.probe("build_loaders", 0);
    progress("train", 0.5);
    train(cfg, &l, &graph, &data, &mut probe, &mut m, progress)?;
    // The dataset stays referenced until the end, as in a training script.
    drop((src, col));
    m.phases = ["load", "build_loaders", "train"]
        .iter()
        .map(|&p| (p, probe.peaks.get(p).cloned().unwrap_or_default()))
        .collect();
    m.seconds = started.elapsed().as_secs_f64();
    Ok(m)
}
