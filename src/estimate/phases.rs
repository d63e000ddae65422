//! Assembling the phases of a run from the pieces: what is alive at the worst
//! moment of loading, of building the loaders, of a training epoch and of an
//! evaluation, per component, on the host and on the GPU.

use serde::Serialize;

use super::dataset::{DatasetBytes, dataset_bytes};
use super::degree::DegreeTable;
use super::fanout::{SampleStats, extreme_z, sample_stats};
use super::gpu::{GpuBreakdown, gpu_breakdown, reserve};
use super::host::{InFlight, in_flight};
use super::{Coefficients, Settings};
use crate::spec::{Accounting, Device, EvalLoaders, Job, ModelKind};

/// The phases of a training run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Loading (and converting) the dataset.
    Load,
    /// Building the NeighborLoaders that exist at start-up.
    BuildLoaders,
    /// A training epoch with its batches in flight.
    Train,
    /// Evaluating on the validation and test splits.
    Evaluate,
}

impl Phase {
    /// Lower-case name as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::BuildLoaders => "build_loaders",
            Phase::Train => "train",
            Phase::Evaluate => "evaluate",
        }
    }
}

/// One named share of a phase's memory.
#[derive(Debug, Clone, Serialize)]
pub struct Component {
    /// What it is.
    pub name: &'static str,
    /// Bytes (already multiplied by ranks per node on the host side).
    pub bytes: u64,
}

/// Memory at the worst moment of one phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseEstimate {
    /// The phase.
    pub phase: Phase,
    /// The worst moment within it.
    pub moment: &'static str,
    /// Host components as the limit's accounting sees them.
    pub host: Vec<Component>,
    /// Host total, bytes, per node.
    pub host_bytes: u64,
    /// Part of the host total living in /dev/shm.
    pub shm_bytes: u64,
    /// GPU components (empty before the model reaches the GPU).
    pub gpu: Vec<Component>,
    /// GPU total, bytes, per device.
    pub gpu_bytes: u64,
}

/// The whole estimate of one job at one setting.
#[derive(Debug, Clone, Serialize)]
pub struct Estimate {
    /// Phases in run order.
    pub phases: Vec<PhaseEstimate>,
    /// Training batch sizes.
    pub train_batch: SampleStats,
    /// Evaluation batch sizes.
    pub eval_batch: SampleStats,
    /// Dataset bytes.
    pub dataset: DatasetBytes,
    /// GPU pieces.
    pub gpu: GpuBreakdown,
    /// Seed nodes (or samples) per training batch.
    pub train_seeds: u64,
}

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

/// Estimates `job` at `settings`, every component named.
pub fn estimate(job: &Job, settings: &Settings, coeffs: &Coefficients) -> Estimate {
    let prep = Prepared::new(job);
    let batches = BatchModel::new(job, settings, &prep);
    estimate_with(job, settings, coeffs, &batches, true)
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

/// A phase under construction: components in order, zero ones dropped.
/// With `detail` off (the planner's search) only totals are kept.
struct Builder {
    host: Vec<Component>,
    total: u64,
    shm: f64,
    ranks: f64,
    detail: bool,
}

impl Builder {
    fn new(ranks: u32, detail: bool) -> Builder {
        Builder {
            host: Vec::with_capacity(if detail { 12 } else { 0 }),
            total: 0,
            shm: 0.0,
            ranks: ranks as f64,
            detail,
        }
    }
    fn add(&mut self, name: &'static str, bytes: f64) {
        if bytes >= 1.0 {
            let bytes = (bytes * self.ranks) as u64;
            self.total += bytes;
            if self.detail {
                self.host.push(Component { name, bytes });
            }
        }
    }
    fn add_shm(&mut self, name: &'static str, bytes: f64) {
        self.shm += bytes * self.ranks;
        self.add(name, bytes);
    }
    fn in_flight(&mut self, f: &InFlight, eval: bool) {
        let (main, shm, work) = if eval {
            (
                "eval batches (main process)",
                "eval batches in /dev/shm",
                "eval batches being built in workers",
            )
        } else {
            (
                "batches in flight (main process)",
                "batches in flight in /dev/shm",
                "batches being built in workers",
            )
        };
        self.add(main, f.private);
        self.add_shm(shm, f.shm);
        self.add(work, f.in_workers);
        self.add(
            if eval {
                "pinned eval batches"
            } else {
                "pinned batches"
            },
            f.pinned,
        );
    }
    fn finish(self, phase: Phase, moment: &'static str, gpu: &[Component]) -> PhaseEstimate {
        let gpu_bytes = gpu.iter().map(|c| c.bytes).sum();
        let gpu = if self.detail {
            gpu.to_vec()
        } else {
            Vec::new()
        };
        PhaseEstimate {
            phase,
            moment,
            host: self.host,
            host_bytes: self.total,
            shm_bytes: self.shm as u64,
            gpu,
            gpu_bytes,
        }
    }
}

/// Estimates `job` at `settings` from its precomputed batch model; without
/// `detail` only phase totals are filled in (the planner's fast path).
pub fn estimate_with(
    job: &Job,
    settings: &Settings,
    coeffs: &Coefficients,
    bm: &BatchModel,
    detail: bool,
) -> Estimate {
    let (train, eval) = (&bm.train, &bm.eval);
    let w = settings.num_workers;
    let we = job.eval_num_workers.unwrap_or(w);
    let ds = dataset_bytes(job, w.max(we), settings.is_sorted);
    let cuda = job.device == Device::Cuda;
    let runtime = coeffs.runtime_bytes as f64
        + if cuda {
            coeffs.cuda_host_bytes as f64
        } else {
            0.0
        };
    let resident = ds.resident() as f64;
    let csc = ds.csc as f64;
    let eval_seeds = job.eval_batch_size.unwrap_or(settings.batch_size);
    let gpu = bm.gpu;
    let (train_gpu, eval_gpu) = gpu_components(job, coeffs, &gpu);
    let rss_sum = job.accounting == Accounting::RssSum;
    // Under RSS-sum accounting a forked worker's RSS counts every page of the
    // parent it maps (the whole dataset) and the CSC pages it has touched.
    let apparent = coeffs.runtime_bytes as f64 + resident + csc;
    let private = coeffs.worker_private_bytes as f64;
    let eval_splits = match settings.eval_loaders {
        EvalLoaders::None => 0.0,
        _ => 2.0,
    };
    // Loaders that each hold their own CSC: one when they share a sampler.
    let resident_loaders = if settings.shared_sampler {
        1.0
    } else {
        1.0 + if settings.eval_loaders == EvalLoaders::Resident {
            eval_splits
        } else {
            0.0
        }
    };
    let train_flight = in_flight(
        job,
        train,
        settings.batch_size,
        w,
        settings.prefetch_factor,
        settings.pin_memory,
        coeffs.sampler_bytes_per_node,
    );
    let eval_flight = in_flight(
        job,
        eval,
        eval_seeds,
        we,
        settings.prefetch_factor,
        settings.pin_memory,
        coeffs.sampler_bytes_per_node,
    );
    // Training on the CPU moves nothing: `batch.to("cpu")` is the batch the
    // loader already holds (counted in flight), so only the model's own
    // tensors are added, not a second copy of the batch.
    let on_host = |v: &[Component]| -> f64 {
        v.iter()
            .filter(|c| c.name != "batch")
            .map(|c| c.bytes as f64)
            .sum()
    };
    let model_host = if cuda { 0.0 } else { on_host(&train_gpu) };
    let model_host_eval = if cuda { 0.0 } else { on_host(&eval_gpu) };
    let mut phases = Vec::with_capacity(4);

    let mut b = Builder::new(job.ranks_per_node, detail);
    b.add("runtime (python, torch, PyG)", coeffs.runtime_bytes as f64);
    base_dataset(&mut b, &ds);
    b.add("load transient", ds.load_extra as f64);
    phases.push(b.finish(Phase::Load, ds.load_extra_cause, &[]));

    let csc_name = if w > 0 {
        "CSC copies in /dev/shm"
    } else {
        "CSC copies (one per loader)"
    };
    let mut b = Builder::new(job.ranks_per_node, detail);
    b.add("runtime (python, torch, PyG)", runtime);
    base_dataset(&mut b, &ds);
    add_csc(&mut b, csc_name, w > 0, resident_loaders * csc);
    b.add(
        "CSC build transient (sort, share)",
        ds.csc_build_extra as f64,
    );
    let moment = if resident_loaders > 1.0 {
        "building the last of the resident loaders"
    } else {
        "building the train loader"
    };
    phases.push(b.finish(Phase::BuildLoaders, moment, &[]));

    // Eval workers of resident, persistent loaders stay alive through training.
    let idle_eval_workers =
        if settings.eval_loaders == EvalLoaders::Resident && settings.persistent_workers {
            eval_splits * we as f64
        } else {
            0.0
        };
    let mut b = Builder::new(job.ranks_per_node, detail);
    b.add("runtime (python, torch, PyG)", runtime);
    base_dataset(&mut b, &ds);
    add_csc(&mut b, csc_name, w > 0, resident_loaders * csc);
    b.in_flight(&train_flight, false);
    b.add("train workers (private pages)", w as f64 * private);
    b.add("idle persistent eval workers", idle_eval_workers * private);
    if rss_sum {
        b.add(
            "workers' apparent copies (RSS sum)",
            (w as f64 + idle_eval_workers) * apparent,
        );
    }
    b.add("model on the host (CPU training)", model_host);
    phases.push(b.finish(
        Phase::Train,
        "the largest training batch in flight",
        &train_gpu,
    ));

    if settings.eval_loaders != EvalLoaders::None || job.evaluate_train {
        phases.push(evaluate_phase(
            job,
            settings,
            &ds,
            EvalCtx {
                runtime,
                csc_name,
                eval_splits,
                we,
                private,
                apparent,
                model_host_eval,
                rss_sum,
                detail,
            },
            &eval_flight,
            &train_flight,
            &eval_gpu,
        ));
    }
    Estimate {
        phases,
        train_batch: *train,
        eval_batch: *eval,
        dataset: ds,
        gpu,
        train_seeds: settings.batch_size,
    }
}

struct EvalCtx {
    runtime: f64,
    csc_name: &'static str,
    eval_splits: f64,
    we: u32,
    private: f64,
    apparent: f64,
    model_host_eval: f64,
    rss_sum: bool,
    detail: bool,
}

fn evaluate_phase(
    job: &Job,
    settings: &Settings,
    ds: &DatasetBytes,
    c: EvalCtx,
    eval_flight: &InFlight,
    train_flight: &InFlight,
    eval_gpu: &[Component],
) -> PhaseEstimate {
    let detail = c.detail;
    let w = settings.num_workers as f64;
    let csc = ds.csc as f64;
    let shm = settings.num_workers > 0 || c.we > 0;
    // Persistent train workers idle through evaluation.
    let idle_train = if settings.persistent_workers { w } else { 0.0 };
    let start = |b: &mut Builder| {
        b.add("runtime (python, torch, PyG)", c.runtime);
        base_dataset(b, ds);
    };
    match settings.eval_loaders {
        EvalLoaders::Resident => {
            let mut b = Builder::new(job.ranks_per_node, detail);
            start(&mut b);
            let copies = if settings.shared_sampler {
                1.0
            } else {
                1.0 + c.eval_splits
            };
            add_csc(&mut b, c.csc_name, shm, copies * csc);
            b.in_flight(eval_flight, true);
            b.add("eval workers (private pages)", c.we as f64 * c.private);
            // The validation loader's persistent workers live on while test evaluates.
            let idle_eval = if settings.persistent_workers {
                c.we as f64
            } else {
                0.0
            };
            b.add(
                "idle persistent workers",
                (idle_train + idle_eval) * c.private,
            );
            if c.rss_sum {
                b.add(
                    "workers' apparent copies (RSS sum)",
                    (c.we as f64 + idle_train + idle_eval) * c.apparent,
                );
            }
            b.add("model on the host (CPU training)", c.model_host_eval);
            b.finish(Phase::Evaluate, "evaluating on the test split", eval_gpu)
        }
        EvalLoaders::OnDemand if settings.shared_sampler => {
            // A loader built on demand around the shared sampler adds no CSC.
            let mut run = Builder::new(job.ranks_per_node, detail);
            start(&mut run);
            add_csc(&mut run, c.csc_name, shm, csc);
            run.in_flight(eval_flight, true);
            run.add("eval workers (private pages)", c.we as f64 * c.private);
            run.add("idle persistent workers", idle_train * c.private);
            if c.rss_sum {
                run.add(
                    "workers' apparent copies (RSS sum)",
                    (c.we as f64 + idle_train) * c.apparent,
                );
            }
            run.add("model on the host (CPU training)", c.model_host_eval);
            run.finish(
                Phase::Evaluate,
                "evaluating with an on-demand loader on the shared sampler",
                eval_gpu,
            )
        }
        EvalLoaders::OnDemand => {
            // Building an eval loader: the train loader's CSC, the new one and its sort.
            let mut build = Builder::new(job.ranks_per_node, detail);
            start(&mut build);
            add_csc(&mut build, c.csc_name, shm, 2.0 * csc);
            build.add(
                "CSC build transient (sort, share)",
                ds.csc_build_extra as f64,
            );
            build.add("idle persistent workers", idle_train * c.private);
            if c.rss_sum {
                build.add(
                    "workers' apparent copies (RSS sum)",
                    idle_train * c.apparent,
                );
            }
            build.add("model on the host (CPU training)", c.model_host_eval);
            let mut run = Builder::new(job.ranks_per_node, detail);
            start(&mut run);
            add_csc(&mut run, c.csc_name, shm, 2.0 * csc);
            run.in_flight(eval_flight, true);
            run.add("eval workers (private pages)", c.we as f64 * c.private);
            run.add("idle persistent workers", idle_train * c.private);
            if c.rss_sum {
                run.add(
                    "workers' apparent copies (RSS sum)",
                    (c.we as f64 + idle_train) * c.apparent,
                );
            }
            run.add("model on the host (CPU training)", c.model_host_eval);
            let build = build.finish(
                Phase::Evaluate,
                "building an evaluation loader on demand",
                eval_gpu,
            );
            let run = run.finish(
                Phase::Evaluate,
                "evaluating with the on-demand loader",
                eval_gpu,
            );
            if build.host_bytes >= run.host_bytes {
                build
            } else {
                run
            }
        }
        EvalLoaders::None => {
            // Only evaluate_train: the train loader iterated once more.
            let mut b = Builder::new(job.ranks_per_node, detail);
            start(&mut b);
            add_csc(&mut b, c.csc_name, settings.num_workers > 0, csc);
            b.in_flight(train_flight, false);
            b.add("train workers (private pages)", w * c.private);
            if c.rss_sum {
                b.add("workers' apparent copies (RSS sum)", w * c.apparent);
            }
            b.add("model on the host (CPU training)", c.model_host_eval);
            b.finish(Phase::Evaluate, "evaluating on the train split", eval_gpu)
        }
    }
}

fn base_dataset(b: &mut Builder, ds: &DatasetBytes) {
    b.add("features", ds.features as f64);
    b.add("labels", ds.labels as f64);
    b.add("edge_index", ds.edge_index as f64);
    b.add("split indices", ds.splits as f64);
}

fn add_csc(b: &mut Builder, name: &'static str, in_shm: bool, bytes: f64) {
    if in_shm {
        b.add_shm(name, bytes)
    } else {
        b.add(name, bytes)
    }
}

/// (training, evaluation) GPU components, per device.
fn gpu_components(
    job: &Job,
    coeffs: &Coefficients,
    g: &GpuBreakdown,
) -> (Vec<Component>, Vec<Component>) {
    let context = super::gpu::cuda_context_bytes(job, coeffs);
    let cuda = job.device == Device::Cuda;
    let mut train = Vec::with_capacity(8);
    let mut eval = Vec::with_capacity(8);
    let push = |v: &mut Vec<Component>, name, bytes: u64| {
        if bytes > 0 {
            v.push(Component { name, bytes });
        }
    };
    if cuda {
        push(&mut train, "CUDA context", context);
        push(&mut eval, "CUDA context", context);
    }
    for v in [&mut train, &mut eval] {
        push(v, "parameters", g.params);
        push(v, "gradients", g.grads);
        push(v, "optimizer state", g.optimizer);
    }
    push(&mut train, "batch", g.batch);
    push(&mut train, "activations", g.activations);
    push(&mut eval, "batch", g.eval_batch);
    push(&mut eval, "activations", g.eval_activations);
    if cuda {
        push(
            &mut train,
            "allocator reserve",
            reserve(coeffs, g.batch + g.activations),
        );
        push(
            &mut eval,
            "allocator reserve",
            reserve(coeffs, g.eval_batch + g.eval_activations),
        );
    }
    (train, eval)
}
