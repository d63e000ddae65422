//! What an estimate is: the phases of a run and, for each, its memory at the
//! worst moment by component, on the host and on the GPU.

use serde::Serialize;

use super::dataset::DatasetBytes;
use super::fanout::SampleStats;
use super::gpu::GpuBreakdown;

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
