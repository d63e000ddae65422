//! The planner's view of one job: estimates at any setting with the training
//! GPU simulated (cached per batch size, fanout and device size: nothing else
//! changes what the GPU sees), and the verdict that combines both.

use std::collections::HashMap;

use super::gpu_sim::{self, GpuSimulation};
use super::verdict::{self, Failure, Limits, judge};
use crate::estimate::{BatchModel, Coefficients, Estimate, Phase, Prepared, Settings, estimate};
use crate::spec::Job;

/// Estimates with the GPU's allocator simulated, cached per (batch, fanout,
/// device size): nothing else changes what the GPU sees.
pub(super) struct Planner<'a> {
    pub(super) job: &'a Job,
    coeffs: &'a Coefficients,
    prep: Prepared,
    sims: HashMap<(u64, Vec<i64>, u64), GpuSimulation>,
}

impl<'a> Planner<'a> {
    pub(super) fn new(job: &'a Job, coeffs: &'a Coefficients) -> Self {
        Planner {
            job,
            coeffs,
            prep: Prepared::new(job),
            sims: HashMap::new(),
        }
    }

    fn simulate(&mut self, s: &Settings, device: u64) -> GpuSimulation {
        let (job, coeffs, prep) = (self.job, self.coeffs, &self.prep);
        self.sims
            .entry((s.batch_size, s.fanout.clone(), device))
            .or_insert_with(|| {
                let bm = BatchModel::new(job, s, prep);
                let context = crate::estimate::cuda_context_bytes(job, coeffs);
                gpu_sim::simulate(
                    job,
                    &bm,
                    s.batch_size,
                    context,
                    device,
                    &job.alloc_conf.with_expandable(false),
                )
            })
            .clone()
    }

    /// Mean nodes of a training batch at `s`, by the batch model.
    pub(super) fn mean_batch_nodes(&self, s: &Settings) -> f64 {
        BatchModel::new(self.job, s, &self.prep).train.mean_nodes
    }

    /// The estimate at `s`, its training GPU simulated on the card less the
    /// margin when a GPU is budgeted.
    pub(super) fn estimate(&mut self, s: &Settings) -> (Estimate, Option<GpuSimulation>) {
        let mut est = estimate(self.job, s, self.coeffs);
        let limits = Limits::of(self.job);
        let (Some(capacity), crate::spec::Device::Cuda) = (limits.gpu, self.job.device) else {
            return (est, None);
        };
        let sim = self.simulate(s, (capacity as f64 * (1.0 - limits.margin)) as u64);
        gpu_sim::apply(&mut est, &sim, s.expandable_segments);
        (est, Some(sim))
    }

    /// The verdict at `s`: the first budget exceeded in run order, the
    /// simulated allocator failing in training counted as the GPU's.
    pub(super) fn judge(
        &mut self,
        s: &Settings,
    ) -> (Estimate, Option<GpuSimulation>, Option<Failure>) {
        let (est, sim) = self.estimate(s);
        let limits = Limits::of(self.job);
        let mut failure = judge(self.job, &est, &limits, sim.is_some());
        if let Some(g) = &sim
            && g.run(s.expandable_segments).oom.is_some()
            // A host kill in training is not masked; one only inside the margin is.
            && failure.as_ref().is_none_or(|f| f.phase > Phase::Train || (f.phase == Phase::Train && !f.over_limit))
        {
            let full = limits.gpu.map(|c| self.simulate(s, c));
            failure =
                verdict::simulated_oom(self.job, &est, g, full.as_ref(), s.expandable_segments);
        }
        (est, sim, failure)
    }
}
