//! The GPU half of fitting, pure like `fit.rs`: the CUDA context comes from
//! NVML less the live segments of this run, and the planner's prediction of
//! the run's GPU (the estimators' tensors, the caching allocator simulated
//! over the run's steps, the context) is set against what the device showed.

use super::fit::{EstimatorRow, predict};
use super::gpu::GpuMeasured;
use crate::alloc::AllocConf;
use crate::estimate::{BatchModel, Coefficients, Phase, Prepared, cuda_context_bytes};
use crate::plan::gpu_sim;
use crate::spec::Job;

/// `base` with the CUDA context this run measured.
pub fn fit_gpu(base: &Coefficients, g: &GpuMeasured) -> Coefficients {
    let mut c = base.clone();
    c.cuda_context_bytes = g.context_bytes;
    c.cuda_context_measured = true;
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
    let s = &job.settings;
    let bm = BatchModel::new(job, s, &Prepared::new(job));
    let context = cuda_context_bytes(job, fitted);
    let sim = gpu_sim::simulate(
        job,
        &bm,
        s.batch_size,
        context,
        g.total_bytes,
        &AllocConf::default(),
    );
    let mut est = predict(job, fitted);
    gpu_sim::apply(&mut est, &sim, false);
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
            sim.configured.peak_allocated_bytes,
            g.allocated_peak_bytes,
        ),
        EstimatorRow::new(
            "GPU allocator reserve peak".into(),
            sim.configured.peak_reserved_bytes,
            g.reserved_peak_bytes,
        ),
        EstimatorRow::new(
            "train GPU peak (NVML)".into(),
            train_peak,
            g.nvml_peak_bytes,
        ),
    ]
}
