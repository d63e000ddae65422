//! Resolving a [`JobSpec`] into a [`Job`]: profile names looked up, GPU
//! resolved, every number checked for sense, the loader settings the planner
//! varies gathered into one [`Settings`](crate::estimate::Settings).

use serde::Serialize;

use super::types::*;
use crate::error::{Error, Result};
use crate::estimate::Settings;
use crate::profiles::{DatasetProfile, GpuProfile};

/// The model as the GPU estimator sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelKind {
    /// A message-passing GNN.
    Gnn {
        /// Layer family.
        conv: Conv,
        /// Layers.
        layers: u32,
        /// Hidden channels.
        hidden: u64,
        /// Attention heads.
        heads: u32,
        /// Relations with their own weights (1: a homogeneous model).
        relations: u32,
    },
    /// Any model, by parameters and bytes per sample.
    Generic {
        /// Parameter count.
        params: u64,
        /// Activation bytes per sample.
        activation_bytes_per_sample: u64,
        /// Input bytes per sample.
        input_bytes_per_sample: u64,
        /// Coefficient of variation of sample sizes.
        sample_size_cv: f64,
    },
}

/// A validated job: what every estimator takes.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    /// Name for reports.
    pub name: String,
    /// The dataset.
    pub dataset: DatasetProfile,
    /// The model.
    pub model: ModelKind,
    /// The optimizer.
    pub optimizer: Optimizer,
    /// The loader settings the planner may change.
    pub settings: Settings,
    /// Evaluation batch size, when it differs from training's.
    pub eval_batch_size: Option<u64>,
    /// Evaluation workers, when they differ from training's.
    pub eval_num_workers: Option<u32>,
    /// Epochs between evaluations.
    pub eval_every: u32,
    /// Each epoch also evaluates on the train loader.
    pub evaluate_train: bool,
    /// NeighborLoader or the legacy NeighborSampler (adjacency-only batches).
    pub loader_kind: LoaderKind,
    /// Hidden layers are followed by dropout with p > 0 (its output and mask kept).
    pub dropout: bool,
    /// How the dataset is loaded.
    pub load: LoadSpec,
    /// Where training runs.
    pub device: Device,
    /// Host RAM per node, bytes.
    pub host_budget: Option<u64>,
    /// The GPU.
    pub gpu: Option<GpuProfile>,
    /// How the host limit is enforced.
    pub accounting: Accounting,
    /// The caching allocator's settings (PYTORCH_CUDA_ALLOC_CONF).
    #[serde(skip)]
    pub alloc_conf: crate::alloc::AllocConf,
    /// /dev/shm size, bytes.
    pub shm: Option<u64>,
    /// Fraction of each budget kept free.
    pub margin: f64,
    /// Ranks per node.
    pub ranks_per_node: u32,
    /// Epochs in the run.
    pub epochs: u32,
    /// CPU cores per rank.
    pub cpus: u32,
}

fn check(ok: bool, msg: impl FnOnce() -> String) -> Result<()> {
    if ok { Ok(()) } else { Err(Error::bad(msg())) }
}

impl Job {
    /// Resolves and validates `spec`.
    pub fn from_spec(spec: &JobSpec) -> Result<Job> {
        let dataset = match &spec.dataset {
            DatasetRef::Name(name) => crate::profiles::dataset(name)?,
            DatasetRef::Inline(d) => (**d).clone(),
        };
        dataset.validate()?;
        let l = &spec.loader;
        check(!l.fanout.is_empty(), || {
            "fanout has zero hops: give at least one, e.g. fanout: [15, 10]".into()
        })?;
        for (hop, &f) in l.fanout.iter().enumerate() {
            check(f == -1 || (1..=1_000_000).contains(&f), || {
                format!(
                    "fanout {f} at hop {} is not a neighbor count (1..1000000, or -1 for all)",
                    hop + 1
                )
            })?;
        }
        check(l.fanout.len() <= 8, || {
            format!("fanout has {} hops; headroom plans up to 8", l.fanout.len())
        })?;
        check((1..=100_000_000).contains(&l.batch_size), || {
            format!("batch_size {} is not in 1..100000000", l.batch_size)
        })?;
        if let Some(b) = l.eval_batch_size {
            check((1..=100_000_000).contains(&b), || {
                format!("eval_batch_size {b} is not in 1..100000000")
            })?;
        }
        check((1..=100_000).contains(&l.eval_every), || {
            format!(
                "eval_every {} is not in 1..100000 (epochs between evaluations)",
                l.eval_every
            )
        })?;
        check(l.num_workers <= 1024, || {
            format!("num_workers {} is absurd", l.num_workers)
        })?;
        check((1..=64).contains(&l.prefetch_factor), || {
            format!("prefetch_factor {} is not in 1..64", l.prefetch_factor)
        })?;
        let b = &spec.budget;
        // Slurm's --mem=0 is "all of the node's memory" (sbatch(1)); planning
        // against 0 bytes would call every job a failure.
        check(b.host != Some(crate::units::Bytes(0)), || {
            "host budget 0 is Slurm's --mem=0, all of the node's memory: give the node's size \
             with --node-mem (`sinfo -N -o '%N %m'` prints it in MiB) or a size with --mem"
                .into()
        })?;
        check((0.0..0.9).contains(&b.margin), || {
            format!("margin {} must be in [0, 0.9)", b.margin)
        })?;
        check((1..=64).contains(&spec.ranks_per_node), || {
            format!("ranks_per_node {} is not in 1..64", spec.ranks_per_node)
        })?;
        check((1..=1_000_000).contains(&spec.epochs), || {
            format!("epochs {} is not in 1..1000000", spec.epochs)
        })?;
        let m = &spec.model;
        let model = match m.params {
            Some(params) => {
                let act = m.activation_bytes_per_sample.ok_or_else(|| {
                    Error::bad("model.params given without model.activation_bytes_per_sample")
                })?;
                let cv = m.sample_size_cv.unwrap_or(0.3);
                check((0.0..=3.0).contains(&cv), || {
                    format!("sample_size_cv {cv} is not in 0..3")
                })?;
                check(params <= 1 << 42, || format!("params {params} is absurd"))?;
                ModelKind::Generic {
                    params,
                    activation_bytes_per_sample: act.0,
                    input_bytes_per_sample: m.input_bytes_per_sample.map_or(0, |b| b.0),
                    sample_size_cv: cv,
                }
            }
            None => {
                check((1..=16).contains(&m.layers), || {
                    format!("layers {} is not in 1..16", m.layers)
                })?;
                check((1..=1 << 16).contains(&m.hidden), || {
                    format!("hidden {} is not in 1..65536", m.hidden)
                })?;
                check((1..=64).contains(&m.heads), || {
                    format!("heads {} is not in 1..64", m.heads)
                })?;
                let relations = m.relations.unwrap_or(1);
                check((1..=1024).contains(&relations), || {
                    format!("relations {relations} is not in 1..1024")
                })?;
                ModelKind::Gnn {
                    conv: m.conv,
                    layers: m.layers,
                    hidden: m.hidden,
                    heads: m.heads,
                    relations,
                }
            }
        };
        let gpu = b
            .gpu
            .as_deref()
            .map(crate::profiles::resolve_gpu)
            .transpose()?;
        let alloc_conf = crate::alloc::AllocConf::parse(b.alloc_conf.as_deref().unwrap_or(""))
            .map_err(|e| Error::bad(format!("alloc_conf: {e}")))?;
        Ok(Job {
            name: spec.name.clone().unwrap_or_else(|| dataset.name.clone()),
            dataset,
            model,
            optimizer: m.optimizer,
            settings: Settings {
                batch_size: l.batch_size,
                fanout: l.fanout.clone(),
                num_workers: l.num_workers,
                persistent_workers: l.persistent_workers && l.num_workers > 0,
                prefetch_factor: l.prefetch_factor,
                pin_memory: l.pin_memory,
                eval_loaders: l.eval_loaders,
                shared_sampler: l.shared_sampler,
                is_sorted: l.is_sorted,
                gc_collect: l.gc_collect,
                expandable_segments: alloc_conf.expandable_segments,
            },
            eval_batch_size: l.eval_batch_size,
            eval_num_workers: l.eval_num_workers,
            eval_every: l.eval_every,
            evaluate_train: l.evaluate_train,
            loader_kind: l.kind,
            dropout: spec.model.dropout.is_none_or(|p| p > 0.0),
            load: spec.load.clone(),
            device: spec.device,
            host_budget: b.host.map(|h| h.0),
            gpu,
            accounting: b.accounting,
            alloc_conf,
            shm: b.shm.map(|s| s.0),
            margin: b.margin,
            ranks_per_node: spec.ranks_per_node,
            epochs: spec.epochs,
            cpus: spec.cpus.unwrap_or(8).max(1),
        })
    }
}
