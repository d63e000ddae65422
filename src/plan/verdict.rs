//! Whether an estimate fits its budget, and if not, how the job dies: which
//! budget, in which phase, with which exit code, and for a GPU whose mean
//! batch fits but whose largest does not, in about which epoch.

use serde::Serialize;

use crate::estimate::{Estimate, Phase, PhaseEstimate};
use crate::spec::{Accounting, Job};

/// The budget that runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    /// Host RAM (`--mem`).
    Host,
    /// GPU memory.
    Gpu,
    /// /dev/shm.
    Shm,
}

/// How a job that does not fit is expected to end.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Which budget runs out first in run order.
    pub budget: Budget,
    /// The phase where it runs out.
    pub phase: Phase,
    /// The exit code the user will see.
    pub exit_code: i32,
    /// Whether the estimate exceeds the limit itself (true) or only the safety margin.
    pub over_limit: bool,
    /// One line for people.
    pub message: String,
}

/// The budget figures an estimate is judged against, bytes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Limits {
    /// Host limit per node.
    pub host: Option<u64>,
    /// GPU capacity per device.
    pub gpu: Option<u64>,
    /// /dev/shm size.
    pub shm: Option<u64>,
    /// Margin kept free of each.
    pub margin: f64,
}

impl Limits {
    /// The limits of `job`.
    pub fn of(job: &Job) -> Limits {
        Limits {
            host: job.host_budget,
            // A job that trains on the CPU has no GPU budget to meet.
            gpu: job
                .gpu
                .as_ref()
                .filter(|_| job.device == crate::spec::Device::Cuda)
                .map(|g| g.pytorch_total_bytes.unwrap_or(g.total_bytes())),
            shm: job.shm,
            margin: job.margin,
        }
    }

    pub(crate) fn usable(&self, limit: u64) -> u64 {
        (limit as f64 * (1.0 - self.margin)) as u64
    }
}

/// Peaks of an estimate and the phases where they occur.
pub fn peaks(est: &Estimate) -> (u64, Phase, u64, Phase) {
    let host = est
        .phases
        .iter()
        .max_by_key(|p| p.host_bytes)
        .map_or((0, Phase::Load), |p| (p.host_bytes, p.phase));
    // The first phase at the highest figure: evaluation carries training's
    // cache, and the peak is training's.
    let gpu = est
        .phases
        .iter()
        .rev()
        .max_by_key(|p| p.gpu_bytes)
        .map_or((0, Phase::Train), |p| (p.gpu_bytes, p.phase));
    (host.0, host.1, gpu.0, gpu.1)
}

/// The first failure in run order, or None when every budget fits with its margin.
/// Whether every phase fits every budget with the margin: the search's fast
/// path, the same tests as [`judge`] without building messages.
pub fn fits(est: &Estimate, l: &Limits) -> bool {
    est.phases.iter().all(|p| {
        l.shm.is_none_or(|s| p.shm_bytes <= s)
            && l.host.is_none_or(|h| p.host_bytes <= l.usable(h))
            && l.gpu.is_none_or(|g| p.gpu_bytes <= l.usable(g))
    })
}

/// A phase that exceeds a limit itself wins over an earlier one that only
/// eats into the margin: the first is where the job is killed.
/// With `simulated_train`, the training GPU is judged by the allocator
/// simulation instead (see [`simulated_oom`]).
pub fn judge(job: &Job, est: &Estimate, limits: &Limits, simulated_train: bool) -> Option<Failure> {
    let mut margin_only = None;
    for p in &est.phases {
        let l = if simulated_train && p.phase == Phase::Train {
            Limits {
                gpu: None,
                ..*limits
            }
        } else {
            *limits
        };
        match judge_phase(job, p, &l) {
            Some(f) if f.over_limit => return Some(f),
            Some(f) if margin_only.is_none() => margin_only = Some(f),
            _ => {}
        }
    }
    margin_only
}

fn judge_phase(job: &Job, p: &PhaseEstimate, l: &Limits) -> Option<Failure> {
    if let Some(shm) = l.shm
        && p.shm_bytes > shm
    {
        return Some(Failure {
            budget: Budget::Shm,
            phase: p.phase,
            exit_code: 135,
            over_limit: true,
            message: format!(
                "/dev/shm ({}) cannot hold {} in {}: a worker or the main process dies of SIGBUS (exit 135, \"Bus error\" / \"insufficient shared memory\")",
                crate::units::fmt_bytes(shm),
                crate::units::fmt_bytes(p.shm_bytes),
                p.phase.as_str()
            ),
        });
    }
    if let Some(host) = l.host
        && p.host_bytes > l.usable(host)
    {
        let over = p.host_bytes > host;
        let killer = match job.accounting {
            Accounting::Cgroup => {
                "the cgroup OOM killer sends SIGKILL: exit 137, Slurm state OUT_OF_MEMORY"
            }
            Accounting::RssSum => {
                "Slurm's accounting sees the summed RSS over --mem and kills the step: exit 137, \"Exceeded job memory limit\""
            }
        };
        let how = if over {
            "exceeds"
        } else {
            "is inside the safety margin of"
        };
        return Some(Failure {
            budget: Budget::Host,
            phase: p.phase,
            exit_code: 137,
            over_limit: over,
            message: format!(
                "host memory {} {how} the {} limit while {}: {killer}",
                crate::units::fmt_bytes(p.host_bytes),
                crate::units::fmt_bytes(host),
                p.moment
            ),
        });
    }
    if let Some(gpu) = l.gpu
        && p.gpu_bytes > l.usable(gpu)
    {
        let over = p.gpu_bytes > gpu;
        return Some(Failure {
            budget: Budget::Gpu,
            phase: p.phase,
            exit_code: 1,
            over_limit: over,
            message: format!(
                "GPU memory {} {} the {} card in {}: torch.OutOfMemoryError (CUDA out of memory), a Python traceback and exit 1",
                crate::units::fmt_bytes(p.gpu_bytes),
                if over {
                    "exceeds"
                } else {
                    "leaves less than the margin of"
                },
                crate::units::fmt_bytes(gpu),
                p.phase.as_str()
            ),
        });
    }
    None
}

/// When only the run's largest batches overflow, the epoch in which the first
/// one is expected: batch sizes are near-normal, and what a batch needs beyond
/// the `fixed` memory (context, parameters, gradients, optimizer state) grows
/// in proportion to its nodes; the largest batch needed `need_at_tail`.
fn first_failure_epoch(
    job: &Job,
    est: &Estimate,
    fixed: u64,
    need_at_tail: u64,
    cap: u64,
) -> String {
    let b = &est.train_batch;
    let dynamic = need_at_tail.saturating_sub(fixed) as f64;
    if b.sd_nodes <= 0.0 || dynamic <= 0.0 || b.tail_nodes <= 0.0 {
        return String::new();
    }
    let fits_nodes = b.tail_nodes * cap.saturating_sub(fixed) as f64 / dynamic;
    if fits_nodes <= b.mean_nodes || fits_nodes >= b.tail_nodes {
        return String::new();
    }
    let unit = if matches!(job.model, crate::spec::ModelKind::Generic { .. }) {
        "samples"
    } else {
        "sampled nodes"
    };
    let z = (fits_nodes - b.mean_nodes) / b.sd_nodes;
    let p_over = 0.5 * erfc(z / std::f64::consts::SQRT_2);
    let per_epoch = job.dataset.splits().train.div_ceil(est.train_seeds.max(1)) as f64;
    if p_over <= 0.0 {
        return String::new();
    }
    let epoch = (1.0 / p_over / per_epoch).ceil().max(1.0);
    format!(
        "; only the run's largest batches fail (over {fits_nodes:.1} {unit}, about one batch in {:.0}): the first is expected around epoch {epoch:.0}",
        1.0 / p_over
    )
}

/// The failure the simulated allocator predicts in training, if any:
/// `sim` ran on the card less the margin; `full`, run only when that failed,
/// on the whole card tells a real OOM from one inside the margin.
pub fn simulated_oom(
    job: &Job,
    est: &Estimate,
    sim: &super::gpu_sim::GpuSimulation,
    full: Option<&super::gpu_sim::GpuSimulation>,
    expandable: bool,
) -> Option<Failure> {
    let mut oom = sim.run(expandable).oom.as_ref()?;
    let mut device = sim.device_bytes;
    let real = full.and_then(|f| f.run(expandable).oom.as_ref().map(|o| (o, f.device_bytes)));
    let over = real.is_some();
    if let Some((o, d)) = real {
        (oom, device) = (o, d);
    }
    let (step, message) = (&oom.step, &oom.message);
    let first = message.lines().next().unwrap_or(message);
    // Every batch before the run's largest went through: when does one that large come?
    let when = if *step == super::gpu_sim::largest_batch_step(sim.steps_simulated) {
        let fixed = est
            .phases
            .iter()
            .filter(|p| p.phase == Phase::Train)
            .flat_map(|p| &p.gpu)
            .filter(|c| {
                matches!(
                    c.name,
                    "CUDA context" | "parameters" | "gradients" | "optimizer state"
                )
            })
            .map(|c| c.bytes)
            .sum();
        first_failure_epoch(job, est, fixed, oom.need_bytes + sim.context_bytes, device)
    } else {
        String::new()
    };
    let rescue = if !expandable && sim.expandable.oom.is_none() {
        "; with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the same run completes"
    } else {
        ""
    };
    Some(Failure {
        budget: Budget::Gpu,
        phase: Phase::Train,
        exit_code: 1,
        over_limit: over,
        message: format!(
            "{} step {} of {} simulated: \"{first}\"{when}{rescue}; torch.OutOfMemoryError, a Python traceback and exit 1",
            if over {
                "the caching allocator fails at"
            } else {
                "with the margin kept free, the caching allocator fails at"
            },
            step + 1,
            sim.steps_simulated
        ),
    })
}

/// Complementary error function (Numerical Recipes' erfcc, |error| < 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::erfc;

    #[test]
    fn erfc_matches_tables() {
        // erfc(0) = 1, erfc(1) = 0.157299, erfc(2) = 0.004678, erfc(-1) = 1.842701
        assert!((erfc(0.0) - 1.0).abs() < 1e-6);
        assert!((erfc(1.0) - 0.157_299).abs() < 1e-6);
        assert!((erfc(2.0) - 0.004_678).abs() < 1e-6);
        assert!((erfc(-1.0) - 1.842_701).abs() < 1e-6);
    }
}
