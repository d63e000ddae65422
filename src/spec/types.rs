//! The YAML shape of a job spec, with the defaults a PyG user would get.

use serde::{Deserialize, Serialize};

use crate::profiles::DatasetProfile;
use crate::units::Bytes;

/// A job as written by the user (YAML), before names are resolved.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// A name for reports.
    #[serde(default)]
    pub name: Option<String>,
    /// One line for people.
    #[serde(default)]
    pub description: Option<String>,
    /// A dataset profile name or an inline description.
    pub dataset: DatasetRef,
    /// The model trained.
    #[serde(default)]
    pub model: ModelSpec,
    /// The NeighborLoaders (or plain DataLoader) settings.
    #[serde(default)]
    pub loader: LoaderSpec,
    /// How the dataset is loaded.
    #[serde(default)]
    pub load: LoadSpec,
    /// Where training runs.
    #[serde(default)]
    pub device: Device,
    /// The limits the job must fit.
    #[serde(default)]
    pub budget: BudgetSpec,
    /// Training processes per node (DDP ranks); each builds its own loaders.
    #[serde(default = "one")]
    pub ranks_per_node: u32,
    /// Epochs in the run (the largest batch of the whole run sets the peak).
    #[serde(default = "hundred")]
    pub epochs: u32,
    /// CPU cores per rank (`--cpus-per-task`): bounds the worker search.
    #[serde(default)]
    pub cpus: Option<u32>,
    /// The software stack the job runs on, where known (`watch --probe`
    /// records it): `plan` compares it with the calibration file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<super::Stack>,
}

fn one() -> u32 {
    1
}
fn hundred() -> u32 {
    100
}
fn two() -> u32 {
    2
}
fn default_batch() -> u64 {
    1024
}
fn default_fanout() -> Vec<i64> {
    vec![15, 10]
}
fn default_layers() -> u32 {
    2
}
fn default_hidden() -> u64 {
    256
}
fn default_margin() -> f64 {
    0.1
}

/// A dataset given by name or inline.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum DatasetRef {
    /// An embedded profile name or alias.
    Name(String),
    /// A full description.
    Inline(Box<DatasetProfile>),
}

// A visitor rather than a buffered untagged enum: the mapping goes straight
// to `DatasetProfile`'s own deserializer, so its errors name the field, and
// nothing of the document is copied into a generic value first.
impl<'de> Deserialize<'de> for DatasetRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RefVisitor;
        impl<'de> serde::de::Visitor<'de> for RefVisitor {
            type Value = DatasetRef;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "dataset must be a profile name (ogbn-papers100m) or a mapping {nodes, edges, features, ...}",
                )
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<DatasetRef, E> {
                Ok(DatasetRef::Name(name.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<DatasetRef, A::Error> {
                // The error is passed on as it is: it already names the
                // line and column, and its list of expected fields says
                // that it is the dataset's.
                DatasetProfile::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|p| DatasetRef::Inline(Box::new(p)))
            }
        }
        d.deserialize_any(RefVisitor)
    }
}

/// Message-passing layer families the GPU model knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum Conv {
    /// GraphSAGE (mean aggregation, root and neighbor weights).
    #[default]
    Sage,
    /// GCN (symmetric normalisation, self loops).
    Gcn,
    /// GAT (attention per edge and head).
    Gat,
    /// GIN (sum aggregation, 2-layer MLP).
    Gin,
    /// GATv2 (dynamic attention: source and target projections, scored after the sum).
    Gatv2,
    /// TransformerConv (query, key, value and skip projections per head).
    Transformer,
    /// GINE (GIN with edge features added to the messages).
    Gine,
    /// R-GCN (one weight per relation and a root weight).
    Rgcn,
    /// R-GAT (attention with one projection per relation).
    Rgat,
    /// No message passing: linear layers over each node's features.
    Mlp,
}

impl Conv {
    /// The kind whose host-side batch terms (estimate/heap_share.rs) stand
    /// for this one, until they are derived for it: attention kinds as GAT,
    /// GINE as GIN, R-GCN and the MLP as GCN (one weight per layer, no
    /// per-edge attention).
    pub fn family(self) -> Conv {
        match self {
            Conv::Gatv2 | Conv::Transformer | Conv::Rgat => Conv::Gat,
            Conv::Gine => Conv::Gin,
            Conv::Rgcn | Conv::Mlp => Conv::Gcn,
            c => c,
        }
    }
}

/// Which PyG loader samples the training batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "snake_case")]
#[clap(rename_all = "snake_case")]
pub enum LoaderKind {
    /// `torch_geometric.loader.NeighborLoader`: batches carry the sampled
    /// nodes' features and labels, gathered in the worker.
    #[default]
    NeighborLoader,
    /// The legacy `NeighborSampler` (`torch_geometric.loader`/`.data`):
    /// batches carry the sampled adjacency only (n_id and one edge_index per
    /// hop); the training loop indexes the features in the main process.
    NeighborSampler,
}

/// Optimizers by the state they keep per parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// Two moments per parameter.
    #[default]
    Adam,
    /// Two moments per parameter.
    Adamw,
    /// No state.
    Sgd,
    /// One momentum buffer per parameter.
    Momentum,
}

impl Optimizer {
    /// Optimizer state tensors kept per parameter tensor (Adam: exp_avg and exp_avg_sq).
    pub fn state_per_param(self) -> u64 {
        match self {
            Optimizer::Adam | Optimizer::Adamw => 2,
            Optimizer::Momentum => 1,
            Optimizer::Sgd => 0,
        }
    }
}

/// The model: a GNN by layers, or any model by its parameter count and
/// activation bytes per sample (non-GNN jobs such as seeds/004).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Layer family.
    #[serde(default)]
    pub conv: Conv,
    /// Message-passing layers.
    #[serde(default = "default_layers")]
    pub layers: u32,
    /// Hidden channels.
    #[serde(default = "default_hidden")]
    pub hidden: u64,
    /// Attention heads (GAT).
    #[serde(default = "one")]
    pub heads: u32,
    /// Relations with their own weights (`to_hetero`, `HeteroConv`, R-GCN,
    /// R-GAT): the parameters of each layer are kept once per relation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relations: Option<u32>,
    /// Optimizer.
    #[serde(default)]
    pub optimizer: Optimizer,
    /// Parameter count of a non-GNN model (switches to the generic model).
    #[serde(default)]
    pub params: Option<u64>,
    /// Activation bytes one sample needs in forward and backward (generic model).
    #[serde(default)]
    pub activation_bytes_per_sample: Option<Bytes>,
    /// Input bytes one sample occupies in a batch (generic model).
    #[serde(default)]
    pub input_bytes_per_sample: Option<Bytes>,
    /// Coefficient of variation of sample sizes (generic model; default 0.3).
    #[serde(default)]
    pub sample_size_cv: Option<f64>,
    /// Dropout probability after each hidden layer. With p = 0 (PyG
    /// BasicGNN's default) dropout is the identity and keeps nothing; when
    /// absent, dropout is assumed (its output and mask are kept: the safe side).
    #[serde(default)]
    pub dropout: Option<f64>,
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec {
            conv: Conv::Sage,
            layers: 2,
            hidden: 256,
            heads: 1,
            relations: None,
            optimizer: Optimizer::Adam,
            params: None,
            activation_bytes_per_sample: None,
            input_bytes_per_sample: None,
            sample_size_cv: None,
            dropout: None,
        }
    }
}

/// When the validation and test loaders exist.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum, Default,
)]
#[serde(rename_all = "snake_case")]
#[clap(rename_all = "snake_case")]
pub enum EvalLoaders {
    /// Built at start-up beside the train loader and kept for the whole run.
    #[default]
    Resident,
    /// Built for each evaluation, used, and deleted.
    OnDemand,
    /// No evaluation loaders.
    None,
    /// PyG's examples' layer-wise inference: a `subgraph_loader` over every
    /// node with `num_neighbors=[-1]`, built at start-up on a shallow copy
    /// of the data, and `model.inference(x_all, subgraph_loader)` running
    /// each layer over all nodes on the host (batch = the eval batch size).
    Layerwise,
}

impl EvalLoaders {
    /// The snake_case name used in specs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            EvalLoaders::Resident => "resident",
            EvalLoaders::OnDemand => "on_demand",
            EvalLoaders::None => "none",
            EvalLoaders::Layerwise => "layerwise",
        }
    }
}

impl std::fmt::Display for EvalLoaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Loader settings (PyG NeighborLoader / torch DataLoader arguments).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoaderSpec {
    /// NeighborLoader or the legacy NeighborSampler.
    #[serde(default)]
    pub kind: LoaderKind,
    /// Seed nodes per batch.
    #[serde(default = "default_batch")]
    pub batch_size: u64,
    /// Neighbors sampled per hop (`num_neighbors`); -1 takes all.
    #[serde(default = "default_fanout")]
    pub fanout: Vec<i64>,
    /// DataLoader worker processes.
    #[serde(default)]
    pub num_workers: u32,
    /// Keep workers alive across epochs.
    #[serde(default)]
    pub persistent_workers: bool,
    /// Batches each worker prepares ahead (PyTorch default 2).
    #[serde(default = "two")]
    pub prefetch_factor: u32,
    /// Copy batches to page-locked memory before the GPU transfer.
    #[serde(default)]
    pub pin_memory: bool,
    /// When the validation and test loaders exist.
    #[serde(default)]
    pub eval_loaders: EvalLoaders,
    /// Batch size of the evaluation loaders (default: batch_size).
    #[serde(default)]
    pub eval_batch_size: Option<u64>,
    /// Workers of the evaluation loaders (default: num_workers).
    #[serde(default)]
    pub eval_num_workers: Option<u32>,
    /// Epochs between evaluations (`if epoch % 5 == 0: evaluate()`): how
    /// many on-demand loaders a run builds, and so how many can linger.
    #[serde(default = "one")]
    pub eval_every: u32,
    /// Whether edge_index is already sorted by destination (no `perm` kept).
    #[serde(default)]
    pub is_sorted: bool,
    /// One NeighborSampler built once and passed to every loader (`neighbor_sampler=`).
    #[serde(default)]
    pub shared_sampler: bool,
    /// Whether each epoch also evaluates on the train loader.
    #[serde(default)]
    pub evaluate_train: bool,
    /// The script calls gc.collect() after deleting an on-demand loader. A
    /// NeighborLoader refers to itself (its bound collate_fn), so `del` alone
    /// leaves it, and its CSC, alive until the cyclic garbage collector runs.
    #[serde(default)]
    pub gc_collect: bool,
}

impl Default for LoaderSpec {
    fn default() -> Self {
        crate::yaml::from_str("{}").unwrap_or_else(|_| unreachable!("all fields have defaults"))
    }
}

/// How the dataset gets into memory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// `T.ToUndirected()` / `to_undirected` at load: doubles the edges.
    #[serde(default)]
    pub to_undirected: bool,
    /// The first run processes the raw download (one extra copy while collating).
    #[serde(default)]
    pub first_processing: bool,
    /// The script sorts edge_index by destination itself
    /// (`edge_index[:, edge_index[1].argsort()]`) before passing `is_sorted=True`.
    #[serde(default)]
    pub sort_edges: bool,
    /// The script replaces the features with a computed tensor
    /// (`data.x = (data.x - mean) / std`) while the dataset object it took
    /// them from keeps the original: two copies from then on.
    #[serde(default)]
    pub replaces_features: bool,
}

/// Where the model trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// On an NVIDIA GPU.
    #[default]
    Cuda,
    /// On the host CPU: the model lives in host RAM.
    Cpu,
}

/// What the memory limit charges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "snake_case")]
#[clap(rename_all = "snake_case")]
pub enum Accounting {
    /// A memory cgroup (Slurm ConstrainRAMSpace, Kubernetes, systemd): each page once, shmem included.
    #[default]
    Cgroup,
    /// Slurm jobacct_gather without UsePss: RSS summed over processes.
    RssSum,
}

/// The budget.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    /// Host RAM per node (`--mem`).
    #[serde(default)]
    pub host: Option<Bytes>,
    /// GPU: a profile name or a size.
    #[serde(default)]
    pub gpu: Option<String>,
    /// How the host limit is enforced.
    #[serde(default)]
    pub accounting: Accounting,
    /// PYTORCH_CUDA_ALLOC_CONF of the job (e.g. `expandable_segments:True`).
    #[serde(default)]
    pub alloc_conf: Option<String>,
    /// Size of /dev/shm (not checked when absent).
    #[serde(default)]
    pub shm: Option<Bytes>,
    /// Fraction of each budget kept free.
    #[serde(default = "default_margin")]
    pub margin: f64,
}

impl Default for BudgetSpec {
    fn default() -> Self {
        BudgetSpec {
            host: None,
            gpu: None,
            accounting: Accounting::Cgroup,
            alloc_conf: None,
            shm: None,
            margin: 0.1,
        }
    }
}

impl JobSpec {
    /// The default job PyG's examples suggest, on `dataset`.
    pub fn for_dataset(dataset: &str) -> JobSpec {
        JobSpec {
            name: Some(dataset.to_string()),
            description: None,
            dataset: DatasetRef::Name(dataset.to_string()),
            model: ModelSpec::default(),
            loader: LoaderSpec::default(),
            load: LoadSpec::default(),
            device: Device::Cuda,
            budget: BudgetSpec::default(),
            ranks_per_node: 1,
            epochs: 100,
            cpus: None,
            stack: None,
        }
    }
}
