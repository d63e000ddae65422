//! What the planner can compute once per job or per (batch size, fanout) and
//! reuse across every other setting: the degree table, the batch statistics,
//! the GPU pieces.

use super::Settings;
use super::degree::DegreeTable;
use super::fanout::{SampleStats, SampledGraph, extreme_z, sample_bound, sample_stats};
use super::frontier::{PointReach, reached_out_degrees};
use super::gpu::{GpuBreakdown, gpu_breakdown};
use crate::spec::{EvalLoaders, Job, ModelKind};

/// What does not change while the planner varies loader settings.
#[derive(Debug, Clone)]
pub struct Prepared {
    table: DegreeTable,
    /// In-degrees of the nodes reached after the first hop.
    hop_table: DegreeTable,
    /// Whether `hop_table` is to be degree-biased.
    hop_biased: bool,
    /// The out-degree table: where neighbor draws land.
    reach: DegreeTable,
    /// The mean out-degree of each `hop_table` point's nodes (empty where
    /// the graph does not say how in- and out-degrees go together).
    hop_reach: PointReach,
    /// Whether the dataset gives its degrees (a histogram or a shape); if
    /// not, batches are planned at the largest any such graph can give.
    degrees_known: bool,
}

/// Uniform sources: every node equally likely to be a drawn neighbor.
fn uniform(mean: f64) -> DegreeTable {
    DegreeTable {
        degree: vec![mean],
        prob: vec![1.0],
        mean,
    }
}

impl Prepared {
    /// Builds the degree table of `job`'s graph as loaded.
    pub fn new(job: &Job) -> Prepared {
        let d = &job.dataset;
        let doubles = job.load.to_undirected && !d.undirected;
        let mean = super::dataset::loaded_edges(job) as f64 / d.nodes as f64;
        let undirected = d.undirected || doubles;
        // A measured histogram describes the graph as the sampler sees it.
        let table = match &d.degree_histogram {
            Some(h) => DegreeTable::from_histogram(h, mean),
            None => {
                let mut shape = d.degree();
                if doubles {
                    // in-degree + out-degree: no more isolated nodes than before, twice the mean.
                    shape.zero_fraction *= shape.zero_fraction;
                }
                DegreeTable::new(&shape, mean)
            }
        };
        // On an undirected graph out-degrees are the in-degrees; on a directed
        // one they are measured, or taken as uniform (the most distinct nodes).
        let reach = if undirected {
            table.clone()
        } else {
            match d.degree_histogram.as_ref().and_then(|h| h.out()) {
                Some(out) => DegreeTable::from_histogram(&out, mean),
                None => uniform(mean),
            }
        };
        // After the first hop: the measured in-degree of reached nodes, else
        // the in-degree biased by degree (exact on an undirected graph, the
        // safe side on a directed one).
        let reached = d.degree_histogram.as_ref().and_then(|h| h.reached());
        let (hop_table, hop_biased) = match reached.filter(|_| !undirected) {
            Some(r) => {
                let m = r.mean().unwrap_or(mean);
                (DegreeTable::from_histogram(&r, m), false)
            }
            None => (table.clone(), true),
        };
        let nodes = d.nodes as f64;
        let hop_reach = if undirected {
            // A node's out-degree is its in-degree.
            PointReach {
                out: hop_table.degree.clone(),
                zero_out: 0.0,
                mean,
                nodes,
            }
        } else {
            match d.degree_histogram.as_ref().filter(|_| !hop_biased) {
                Some(h) => reached_out_degrees(h, mean, nodes),
                None => PointReach::default(),
            }
        };
        Prepared {
            table,
            hop_table,
            hop_biased,
            reach,
            hop_reach,
            degrees_known: d.degree_histogram.is_some() || d.degree.is_some(),
        }
    }

    /// Whether the dataset gives its degrees (else batches are bounded from above).
    pub fn degrees_known(&self) -> bool {
        self.degrees_known
    }

    /// Batch statistics for `seeds` seeds a batch over a split of `split`
    /// nodes. For a graph whose degrees are not given, the largest batch any
    /// graph of its size can give (see `sample_bound`).
    pub fn stats(&self, job: &Job, seeds: u64, fanout: &[i64], split: u64) -> SampleStats {
        if !self.degrees_known && matches!(job.model, ModelKind::Gnn { .. }) {
            let edges = super::dataset::loaded_edges(job) as f64;
            return sample_bound(job.dataset.nodes as f64, edges, seeds as f64, fanout);
        }
        self.shaped_stats(job, seeds, fanout, split)
    }

    /// Batch statistics from the degree table (the generic power law when
    /// the dataset gives none): the bottom of the range plan prints for a
    /// dataset without degrees.
    pub fn shaped_stats(&self, job: &Job, seeds: u64, fanout: &[i64], split: u64) -> SampleStats {
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
        let graph = SampledGraph {
            nodes: job.dataset.nodes as f64,
            in_degree: &self.table,
            hop: &self.hop_table,
            hop_biased: self.hop_biased,
            reach: &self.reach,
            hop_reach: &self.hop_reach,
        };
        sample_stats(&graph, seeds as f64, fanout, batches)
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
    let eval = if settings.eval_loaders == EvalLoaders::Layerwise {
        // The subgraph loader: every node once per layer, all in-neighbours,
        // one hop, whatever the training fanout.
        let layers = match job.model {
            ModelKind::Gnn { layers, .. } => u64::from(layers.max(1)),
            ModelKind::Generic { .. } => 1,
        };
        let nodes = job.dataset.nodes.max(1);
        prep.stats(job, eval_seeds, &[-1], nodes.saturating_mul(layers))
    } else {
        prep.stats(job, eval_seeds, &settings.fanout, (s.valid + s.test).max(1))
    };
    (train, eval)
}
