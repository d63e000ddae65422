//! What the planner can compute once per job or per (batch size, fanout) and
//! reuse across every other setting: the degree table, the batch statistics,
//! the GPU pieces.

use super::Settings;
use super::degree::DegreeTable;
use super::fanout::{SampleStats, extreme_z, sample_stats};
use super::gpu::{GpuBreakdown, gpu_breakdown};
use crate::spec::{Job, ModelKind};

/// What does not change while the planner varies loader settings.
#[derive(Debug, Clone)]
pub struct Prepared {
    table: DegreeTable,
    undirected: bool,
}

impl Prepared {
    /// Builds the degree table of `job`'s graph as loaded.
    pub fn new(job: &Job) -> Prepared {
        let d = &job.dataset;
        let doubles = job.load.to_undirected && !d.undirected;
        let edges = if doubles { 2 * d.edges } else { d.edges };
        let mut shape = d.degree();
        if doubles {
            // in-degree + out-degree: no more isolated nodes than before, twice the mean.
            shape.zero_fraction *= shape.zero_fraction;
        }
        Prepared {
            table: DegreeTable::new(&shape, edges as f64 / d.nodes as f64),
            undirected: d.undirected || doubles,
        }
    }

    /// Batch statistics for `seeds` seeds a batch over a split of `split` nodes.
    pub fn stats(&self, job: &Job, seeds: u64, fanout: &[i64], split: u64) -> SampleStats {
        let batches = split.div_ceil(seeds.max(1)) as f64 * job.epochs as f64;
        if let ModelKind::Generic { sample_size_cv, .. } = job.model {
            // Generic jobs: a batch is `seeds` samples whose sizes vary with this cv.
            let n = seeds as f64;
            let sd = sample_size_cv * n.sqrt();
            let z = extreme_z(batches);
            return SampleStats {
                mean_nodes: n,
                mean_edges: 0.0,
                sd_nodes: sd,
                sd_edges: 0.0,
                tail_nodes: n + z * sd,
                tail_edges: 0.0,
                tail_z: z,
            };
        }
        sample_stats(
            &self.table,
            job.dataset.nodes as f64,
            self.undirected,
            seeds as f64,
            fanout,
            batches,
        )
    }
}

/// What depends only on batch size and fanout: batch statistics and GPU pieces.
#[derive(Debug, Clone, Copy)]
pub struct BatchModel {
    /// Training batches.
    pub train: SampleStats,
    /// Evaluation batches.
    pub eval: SampleStats,
    /// GPU pieces at those batches.
    pub gpu: GpuBreakdown,
}

impl BatchModel {
    /// Computes the batch model of `settings` (only batch size and fanout matter).
    pub fn new(job: &Job, settings: &Settings, prep: &Prepared) -> BatchModel {
        let (train, eval) = batch_stats(job, settings, prep);
        let eval_seeds = job.eval_batch_size.unwrap_or(settings.batch_size);
        let gpu = gpu_breakdown(job, &train, &eval, settings.batch_size, eval_seeds);
        BatchModel { train, eval, gpu }
    }
}

/// Training and evaluation batch statistics at `settings`.
pub fn batch_stats(job: &Job, settings: &Settings, prep: &Prepared) -> (SampleStats, SampleStats) {
    let s = job.dataset.splits();
    let train = prep.stats(job, settings.batch_size, &settings.fanout, s.train);
    let eval_seeds = job.eval_batch_size.unwrap_or(settings.batch_size);
    let eval = prep.stats(job, eval_seeds, &settings.fanout, (s.valid + s.test).max(1));
    (train, eval)
}
