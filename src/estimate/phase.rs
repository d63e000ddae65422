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
    /// Part of the host total that is kernel memory (workers' page tables):
    /// charged by a cgroup, absent from its anon + shmem counters.
    pub kernel_bytes: u64,
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

/// The name of the evaluate phase's share of training's allocator cache.
pub const TRAINING_CACHE: &str = "allocator cache kept from training";

impl Estimate {
    /// PyTorch's caching allocator keeps training's segments through
    /// evaluation (a training loop calls no `empty_cache()` between them),
    /// so NVML shows at least training's figure while evaluating: the
    /// evaluate phase is raised to it by what the cache keeps. Measured on an
    /// H200: each of the 55 replayed jobs with an evaluation showed its
    /// training figure or more after it (tests/fixtures/gpu). It adds no
    /// failure: the cache is given back before an allocation fails, and
    /// training's figure was judged already.
    pub fn carry_training_cache(&mut self) {
        let Some(train) = self.phases.iter().find(|p| p.phase == Phase::Train) else {
            return;
        };
        let train = train.gpu_bytes;
        for p in self
            .phases
            .iter_mut()
            .filter(|p| p.phase == Phase::Evaluate)
        {
            p.gpu.retain(|c| c.name != TRAINING_CACHE);
            p.gpu_bytes = p.gpu.iter().map(|c| c.bytes).sum();
            if p.gpu_bytes > 0 && train > p.gpu_bytes {
                p.gpu.push(Component {
                    name: TRAINING_CACHE,
                    bytes: train - p.gpu_bytes,
                });
                p.gpu_bytes = train;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Device, Job, JobSpec};

    fn gpu_of(est: &Estimate, phase: Phase) -> &PhaseEstimate {
        est.phases.iter().find(|p| p.phase == phase).unwrap()
    }

    #[test]
    fn evaluation_shows_the_cache_training_left_and_the_peak_stays_trainings() {
        let mut spec = JobSpec::for_dataset("ogbn-arxiv");
        spec.budget.gpu = Some("h100".into());
        let job = Job::from_spec(&spec).unwrap();
        let est = crate::estimate::estimate(&job, &job.settings, &Default::default());
        let (train, eval) = (gpu_of(&est, Phase::Train), gpu_of(&est, Phase::Evaluate));
        let cache = eval.gpu.iter().find(|c| c.name == TRAINING_CACHE);
        // Evaluation's own tensors are fewer than training's here.
        let own: u64 = eval
            .gpu
            .iter()
            .filter(|c| c.name != TRAINING_CACHE)
            .map(|c| c.bytes)
            .sum();
        assert!(own < train.gpu_bytes, "{own} >= {}", train.gpu_bytes);
        assert_eq!(cache.map(|c| c.bytes), Some(train.gpu_bytes - own));
        assert_eq!(eval.gpu_bytes, train.gpu_bytes);
        assert_eq!(crate::plan::verdict::peaks(&est).3, Phase::Train);
        // Carried twice, counted once.
        let mut again = est.clone();
        again.carry_training_cache();
        assert_eq!(gpu_of(&again, Phase::Evaluate).gpu_bytes, train.gpu_bytes);
        assert_eq!(
            gpu_of(&again, Phase::Evaluate)
                .gpu
                .iter()
                .filter(|c| c.name == TRAINING_CACHE)
                .count(),
            1
        );
        // A CPU job has no CUDA cache to keep.
        let mut cpu = job.clone();
        cpu.device = Device::Cpu;
        let est = crate::estimate::estimate(&cpu, &cpu.settings, &Default::default());
        assert!(
            gpu_of(&est, Phase::Evaluate)
                .gpu
                .iter()
                .all(|c| c.name != TRAINING_CACHE)
        );
    }
}
