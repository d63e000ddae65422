//! The GPU side of a plan by simulation: the training steps of the job, at
//! its batch-size distribution, replayed through the caching-allocator
//! simulator (as configured, and with expandable segments), with the run's
//! largest batch included. Replaces the reserve fraction of the estimate.

use serde::Serialize;

use crate::alloc::{AllocConf, DeviceMemory, run_trace, size_factors, training_trace_with};
use crate::estimate::{BatchModel, Component, Estimate, Phase, step_shape};
use crate::spec::Job;

/// Steps simulated at most; the run's largest batch is always one of them.
const MAX_STEPS: u64 = 2000;

/// The step at which a simulation of `steps` steps meets the run's largest batch.
pub fn largest_batch_step(steps: u64) -> usize {
    (steps / 2) as usize
}

/// The outcome of one simulated run.
#[derive(Debug, Clone, Serialize)]
pub struct SimRun {
    /// Highest bytes reserved by the allocator.
    pub peak_reserved_bytes: u64,
    /// Highest bytes allocated to tensors.
    pub peak_allocated_bytes: u64,
    /// The OOM, if the run hit one.
    pub oom: Option<SimOom>,
}

/// Where a simulated run ran out of memory.
#[derive(Debug, Clone, Serialize)]
pub struct SimOom {
    /// Steps completed before the failing one.
    pub step: usize,
    /// Allocated plus the failed request: what that step needed from the allocator.
    pub need_bytes: u64,
    /// The message PyTorch would print.
    pub message: String,
}

/// The simulated GPU of a plan.
#[derive(Debug, Clone, Serialize)]
pub struct GpuSimulation {
    /// Training steps simulated.
    pub steps_simulated: u64,
    /// Training steps in the whole run.
    pub steps_in_run: u64,
    /// CUDA context (outside the allocator).
    pub context_bytes: u64,
    /// Device memory simulated: the card, or the card less the margin.
    pub device_bytes: u64,
    /// With the allocator settings as given.
    pub configured: SimRun,
    /// The same with `expandable_segments:True`.
    pub expandable: SimRun,
}

impl GpuSimulation {
    /// The run with or without expandable segments.
    pub fn run(&self, expandable: bool) -> &SimRun {
        if expandable {
            &self.expandable
        } else {
            &self.configured
        }
    }
}

/// Simulates `job`'s training at batch model `bm` on `device` bytes of card.
/// The cache grows until the card is full and is released then, so the
/// verdict is whether the run completes, not how high `reserved` climbs.
pub fn simulate(
    job: &Job,
    bm: &BatchModel,
    batch_size: u64,
    context: u64,
    device_bytes: u64,
    conf: &AllocConf,
) -> GpuSimulation {
    let shape = step_shape(job, &bm.train, batch_size);
    let steps_in_run = job.dataset.splits().train.div_ceil(batch_size.max(1)) * job.epochs as u64;
    let steps = steps_in_run.clamp(1, MAX_STEPS);
    // The run's largest batch, placed half-way so fragmentation from the
    // batches before it counts, among batches drawn from the size distribution.
    let largest = if bm.train.mean_nodes > 0.0 {
        bm.train.tail_nodes / bm.train.mean_nodes
    } else {
        1.0
    };
    let factors: Vec<f64> = size_factors(shape.size_cv, 0x5EED)
        .take(steps as usize)
        .enumerate()
        .map(|(i, f)| {
            if i == largest_batch_step(steps) {
                largest
            } else {
                f
            }
        })
        .collect();
    let device = DeviceMemory::new(device_bytes, context);
    let run = |conf: &AllocConf| {
        let out = run_trace(
            training_trace_with(&shape, factors.iter().copied()),
            conf,
            &device,
        );
        SimRun {
            peak_reserved_bytes: out.peak_reserved_bytes,
            peak_allocated_bytes: out.peak_allocated_bytes,
            oom: out.oom.map(|o| SimOom {
                step: o.step,
                need_bytes: o.state.allocated_bytes + o.state.requested_bytes,
                message: o.message,
            }),
        }
    };
    GpuSimulation {
        steps_simulated: steps,
        steps_in_run,
        context_bytes: context,
        device_bytes,
        configured: run(conf),
        expandable: run(&conf.with_expandable(true)),
    }
}

/// Puts the simulated reserve into the train phase of `est`: the reserve is
/// what the allocator holds beyond the estimated tensors at its peak.
pub fn apply(est: &mut Estimate, sim: &GpuSimulation, expandable: bool) {
    let run = sim.run(expandable);
    for p in est.phases.iter_mut().filter(|p| p.phase == Phase::Train) {
        p.gpu.retain(|c| c.name != "allocator reserve");
        let tensors: u64 = p
            .gpu
            .iter()
            .filter(|c| c.name != "CUDA context")
            .map(|c| c.bytes)
            .sum();
        let reserve = run.peak_reserved_bytes.saturating_sub(tensors);
        p.gpu.push(Component {
            name: "allocator reserve (simulated)",
            bytes: reserve,
        });
        p.gpu_bytes = p.gpu.iter().map(|c| c.bytes).sum();
    }
    est.carry_training_cache();
}
