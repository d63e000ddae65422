//! The GPU half of fitting, pure like `fit.rs`: the CUDA context comes from
//! NVML less the live segments of this run, and `plan`'s own prediction of
//! the run's GPU (the estimators' tensors, the caching allocator simulated
//! over the run's steps on the card less the margin, the context) is set
//! against what the device showed.

use super::fit::EstimatorRow;
use super::gpu::GpuMeasured;
use crate::estimate::{Coefficients, Phase, cuda_context_bytes};
use crate::spec::Job;

/// `base` with the CUDA context this run measured. It is the context of
/// headroom's own CUDA process, which loads fewer kernels than PyTorch does:
/// `plan` takes it as a floor under the GPU profile's figure, never below it.
pub fn fit_gpu(base: &Coefficients, g: &GpuMeasured) -> Coefficients {
    let mut c = base.clone();
    c.cuda_context_bytes = g.context_bytes;
    c.cuda_context_measured = true;
    c.provenance.insert(
        "cuda_context_bytes".into(),
        format!(
            "measured by headroom calibrate ({}) on {}: NVML of its own CUDA process less its live segments; a floor for PyTorch's",
            crate::units::utc_date_now(),
            g.device
        ),
    );
    c
}

/// The planner's GPU prediction for `job` (on the GPU measured) against the
/// measurements: the context with the `prior` coefficients (what `plan` said
/// before calibrating), the allocator's peaks and the NVML peak with `fitted`.
pub fn gpu_rows(
    job: &Job,
    prior: &Coefficients,
    fitted: &Coefficients,
    g: &GpuMeasured,
) -> Vec<EstimatorRow> {
    let (est, sim) = crate::plan::estimate_as_planned(job, fitted);
    // The job has a GPU budget, so plan simulated its allocator.
    let (allocated, reserved) = sim.map_or((0, 0), |sim| {
        let run = sim.run(false);
        (run.peak_allocated_bytes, run.peak_reserved_bytes)
    });
    let train_peak = est
        .phases
        .iter()
        .filter(|p| p.phase == Phase::Train)
        .map(|p| p.gpu_bytes)
        .max()
        .unwrap_or(0);
    vec![
        EstimatorRow::new(
            format!("CUDA context (prior: {})", prior.source),
            cuda_context_bytes(job, prior),
            g.context_bytes,
        ),
        EstimatorRow::new(
            "GPU tensors peak (allocated)".into(),
            allocated,
            g.allocated_peak_bytes,
        ),
        EstimatorRow::new(
            "GPU allocator reserve peak".into(),
            reserved,
            g.reserved_peak_bytes,
        ),
        EstimatorRow::new(
            "train GPU peak (NVML)".into(),
            train_peak,
            g.nvml_peak_bytes,
        ),
    ]
}
