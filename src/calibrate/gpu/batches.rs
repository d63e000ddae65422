//! Batches for the GPU step, sampled in this process from the same kind of
//! graph the CPU run used (same generator, degree shape and seed), with the
//! features gathered and every tensor a worker would hand over. The GPU step
//! measures the device, so in-process sampling keeps the workers' host
//! memory out of its readings.

use super::step::HostBatch;
use crate::calibrate::graph::{Graph, GraphSpec};
use crate::calibrate::rng::Rng;
use crate::calibrate::sampler::{gather, sample};
use crate::calibrate::workload::Config;

/// The graph, its features and labels, and the seed order of one epoch.
pub struct BatchSource {
    graph: Graph,
    features: Vec<f32>,
    labels: Vec<i64>,
    order: Vec<i64>,
    dim: usize,
    batch_size: usize,
    fanout: Vec<i64>,
    rng: Rng,
}

impl BatchSource {
    /// Generates the graph and data of `cfg`.
    pub fn new(cfg: &Config) -> BatchSource {
        let graph = Graph::generate(&GraphSpec {
            nodes: cfg.nodes,
            mean_degree: cfg.avg_degree,
            shape: cfg.shape,
            seed: cfg.seed,
        });
        let mut rng = Rng::new(cfg.seed ^ 0x6B0);
        let features = (0..cfg.nodes * cfg.features)
            .map(|_| rng.next_f64() as f32)
            .collect();
        let labels = (0..cfg.nodes)
            .map(|_| rng.below(cfg.classes as u64) as i64)
            .collect();
        // The train split in shuffled order (a partial Fisher-Yates).
        let mut order: Vec<i64> = (0..cfg.nodes as i64).collect();
        let train = cfg.train_nodes();
        for i in 0..train {
            let j = i + rng.below((cfg.nodes - i) as u64) as usize;
            order.swap(i, j);
        }
        order.truncate(train);
        BatchSource {
            graph,
            features,
            labels,
            order,
            dim: cfg.features,
            batch_size: cfg.batch_size,
            fanout: cfg.fanout.clone(),
            rng,
        }
    }

    /// Edges of the graph.
    pub fn edges(&self) -> u64 {
        self.graph.row.len() as u64
    }

    /// Batches in one epoch.
    pub fn len(&self) -> usize {
        self.order.len().div_ceil(self.batch_size.max(1))
    }

    /// Whether an epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Batch `i` of the epoch (i < len()).
    pub fn batch(&mut self, i: usize) -> HostBatch {
        let lo = (i * self.batch_size).min(self.order.len());
        let hi = (lo + self.batch_size).min(self.order.len());
        let seeds = &self.order[lo..hi];
        let b = sample(self.graph.view(), seeds, &self.fanout, &mut self.rng);
        let mut x = Vec::new();
        gather(&self.features, self.dim, &b.n_id, &mut x);
        let y = b.n_id.iter().map(|&v| self.labels[v as usize]).collect();
        HostBatch {
            x,
            y,
            input: seeds.to_vec(),
            n_id: b.n_id,
            row: b.row,
            col: b.col,
            e_id: b.e_id,
        }
    }
}
