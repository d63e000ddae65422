//! The GPU side of a plan by simulation: the training steps of the job, at
//! its batch-size distribution, replayed through the caching-allocator
//! simulator (as configured, and with expandable segments), with the run's
//! largest batch included. Replaces the reserve fraction of the estimate.
//!
//! The reserve depends on the order of the batch sizes, not only on their
//! distribution: a batch larger than every one before it finds no cached
//! block big enough for its largest tensors and adds segments that stay
//! cached. Measured on an H200 (docs/accuracy.md, "The allocator's reserve
//! over orders of the same batches"), the same batches in 13 orders reserved
//! 1.6 to 3.3 times as much in their highest order as in their lowest. So
//! up to 16 orders are simulated (src/plan/gpu_orders.rs) and the plan
//! takes the one at about the 70th percentile, reporting the range. With
//! expandable segments the reserve is what the tensors need, whatever the
//! order: one order is simulated.

use serde::Serialize;

use super::gpu_orders::{OrderRun, SEED, orders_for, over_orders, planned};
use crate::alloc::{AllocConf, DeviceMemory, run_trace, size_factors, training_trace_with};
use crate::estimate::{BatchModel, Component, Estimate, Phase, step_shape};
use crate::spec::Job;

/// Steps simulated at most; the run's largest batch is always one of them.
const MAX_STEPS: u64 = 2000;

/// The step at which a simulation of `steps` steps meets the run's largest batch.
pub fn largest_batch_step(steps: u64) -> usize {
    (steps / 2) as usize
}

/// The outcome of the simulated runs of one allocator setting.
#[derive(Debug, Clone, Serialize)]
pub struct SimRun {
    /// Highest bytes reserved by the allocator, in the order planned.
    pub peak_reserved_bytes: u64,
    /// Highest bytes allocated to tensors, in the order planned.
    pub peak_allocated_bytes: u64,
    /// The OOM, if the order planned hit one.
    pub oom: Option<SimOom>,
    /// Peak reserved over every order simulated: lowest, median, highest.
    pub reserved_over_orders: [u64; 3],
    /// Orders simulated.
    pub orders: usize,
    /// Orders that ran out of memory.
    pub orders_out_of_memory: usize,
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
    /// Orders of the batch sizes simulated with the allocator as configured
    /// (with the other setting: the reference order alone).
    pub orders_simulated: usize,
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

/// Simulates `job`'s training at batch model `bm` on `device` bytes of card,
/// in up to [`ORDERS`](super::gpu_orders::ORDERS) orders of its batch sizes
/// ([`orders_for`]). The cache grows until the card is full and is released
/// then, so the verdict is whether the run completes, not how high
/// `reserved` climbs.
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
    let device = DeviceMemory::new(device_bytes, context);
    let expandable = conf.with_expandable(true);
    let one = |seed: u64, conf: &AllocConf| -> OrderRun {
        let factors = size_factors(shape.size_cv, seed)
            .take(steps as usize)
            .enumerate()
            .map(|(i, f)| {
                if i == largest_batch_step(steps) {
                    largest
                } else {
                    f
                }
            });
        let out = run_trace(training_trace_with(&shape, factors), conf, &device);
        let oom = out.oom.map(|o| SimOom {
            step: o.step,
            need_bytes: o.state.allocated_bytes + o.state.requested_bytes,
            message: o.message,
        });
        (out.peak_reserved_bytes, out.peak_allocated_bytes, oom)
    };
    // Expandable segments map what the tensors need whatever the order (the
    // test below): the reference order alone.
    let orders = orders_for(steps);
    let configured = over_orders(orders, &|seed| one(seed, conf));
    let expandable = vec![one(SEED, &expandable)];
    GpuSimulation {
        steps_simulated: steps,
        steps_in_run,
        orders_simulated: orders,
        context_bytes: context,
        device_bytes,
        configured: planned(configured),
        expandable: planned(expandable),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_of_varying_batches_reserves_differently_in_different_orders() {
        // A development job of the GPU replays (sealed-2611251's row 50: GCN,
        // 4 layers, 18 steps of batches that differ by a few per cent).
        let text = include_str!("../../tests/fixtures/plan/gcn4-orders.json");
        let spec = crate::spec::from_text(text, "gcn4-orders.json")
            .unwrap()
            .spec;
        let job = Job::from_spec(&spec).unwrap();
        let prep = crate::estimate::Prepared::new(&job);
        let bm = BatchModel::new(&job, &job.settings, &prep);
        let conf = job.alloc_conf.with_expandable(false);
        let sim = simulate(
            &job,
            &bm,
            job.settings.batch_size,
            800 << 20,
            140 << 30,
            &conf,
        );
        let r = &sim.configured;
        let [low, median, high] = r.reserved_over_orders;
        assert!(low < high, "{r:?}");
        assert!(
            median <= r.peak_reserved_bytes && r.peak_reserved_bytes <= high,
            "{r:?}"
        );
        assert_eq!(sim.orders_simulated, super::super::gpu_orders::ORDERS);
        // Expandable segments map what is needed: no order strands a segment.
        let e = &sim.expandable.reserved_over_orders;
        assert!(e[2] <= low, "{e:?} against {low}");
    }
}
