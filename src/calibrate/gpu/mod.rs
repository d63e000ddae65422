//! The GPU step of calibration, where a CUDA driver is present: the driver
//! library is looked for with cudarc's `is_culib_present()` before any CUDA
//! call (cudarc panics without it), then NVRTC for the kernels. Batches of
//! the calibration graph are copied to GPU 0 and trained on with the SAGE
//! step of `step.rs`, every tensor allocated by the caching allocator's
//! rules on real segments (`backed.rs`), while NVML reads what the process
//! holds. NVML less the live segments is the CUDA context; the peaks are
//! compared with what `plan` predicts in `fit::gpu_rows`.

pub mod backed;
pub mod batches;
pub mod cuda;
pub mod kernels;
mod launch;
pub mod meter;
pub mod ops;
pub mod step;

use serde::Serialize;

use crate::alloc::{AllocConf, DeviceMemory};
use crate::calibrate::workload::Config;

/// What the GPU step measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuMeasured {
    /// The device's name.
    pub device: String,
    /// The NVIDIA driver's version, from NVML.
    pub driver_version: Option<String>,
    /// Total memory of the device (`totalGlobalMem`), bytes.
    pub total_bytes: u64,
    /// NVML's reading less the live segments (median over the readings): the CUDA context.
    pub context_bytes: u64,
    /// Highest NVML reading of this process, bytes.
    pub nvml_peak_bytes: u64,
    /// Highest reserve of the allocator (live segments), bytes.
    pub reserved_peak_bytes: u64,
    /// Highest bytes allocated to tensors, bytes.
    pub allocated_peak_bytes: u64,
    /// How NVML was read: `per-process` or `device delta` (no per-process data).
    pub nvml_source: String,
    /// Training steps run.
    pub steps: u64,
    /// Loss of the first and of the last step (the step learns: it falls).
    pub loss_first_last: (f32, f32),
    /// Edges of the graph the batches came from.
    pub edges: u64,
}

/// What the GPU step did (it ran when there are measurements).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuOutcome {
    /// One line for people.
    pub note: String,
    /// The measurements, when it ran.
    pub measured: Option<GpuMeasured>,
}

/// Whether the CUDA driver library can be loaded.
pub fn culib_present() -> bool {
    // SAFETY: only tries to dlopen the driver library; no CUDA call is made.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Whether NVRTC (which compiles the kernels) can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen libnvrtc.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// An outcome without measurements, and why.
pub fn skipped(note: impl Into<String>) -> GpuOutcome {
    GpuOutcome {
        note: note.into(),
        measured: None,
    }
}

/// Runs the GPU step when a driver, NVRTC and a device are there; never fails.
pub fn run(cfg: &Config) -> GpuOutcome {
    if !culib_present() {
        return skipped("no GPU: GPU calibration skipped");
    }
    let names = match crate::collect::gpu::GpuReader::open() {
        Ok(r) if !r.device_names().is_empty() => r.device_names(),
        _ => {
            return skipped(
                "no GPU: GPU calibration skipped (CUDA library present, no device through NVML)",
            );
        }
    };
    if !nvrtc_present() {
        return skipped(format!(
            "GPU found ({}) but NVRTC (libnvrtc.so.12) is not on the library path, so the kernels cannot be compiled: pip's nvidia-cuda-nvrtc-cu12 ships it; add its lib/ directory to LD_LIBRARY_PATH. GPU calibration skipped",
            names.join(", ")
        ));
    }
    match measure(cfg) {
        Ok(m) => GpuOutcome {
            note: format!(
                "GPU: {} (driver {}): {} steps, NVML peak {} ({}), CUDA context {}",
                m.device,
                m.driver_version.as_deref().unwrap_or("unknown"),
                m.steps,
                crate::units::fmt_bytes(m.nvml_peak_bytes),
                m.nvml_source,
                crate::units::fmt_bytes(m.context_bytes)
            ),
            measured: Some(m),
        },
        Err(e) => skipped(format!("GPU calibration failed: {e}")),
    }
}

/// Trains on GPU 0 and measures it.
fn measure(cfg: &Config) -> Result<GpuMeasured, String> {
    let mut meter = meter::Meter::open()?;
    let dev = cuda::Cuda::open(0)?;
    let (device, total) = (dev.name(), dev.total_mem()?);
    dev.synchronize()?;
    // Before any segment, NVML sees the context (and the loaded module) alone.
    let context_now = meter
        .read()
        .ok_or("NVML gives no reading for this process")?;
    let device_memory = DeviceMemory::new(total, context_now);
    let mut a = backed::BackedAllocator::new(AllocConf::default(), device_memory, dev)?;
    let mut src = batches::BatchSource::new(cfg);
    let model = step::DeviceSage::new(&mut a, [cfg.features, cfg.hidden, cfg.classes], cfg.seed)?;
    let mut losses = Vec::new();
    let mut readings = vec![(context_now, 0u64)];
    for i in 0..cfg.batches.min(src.len()) {
        let b = src.batch(i);
        // Segments are cuMemAlloc'd synchronously: NVML sees them at once.
        let loss = model.step(&mut a, &b, cfg.seed ^ i as u64, &mut |a| {
            if let Some(nvml) = meter.read() {
                readings.push((nvml, a.segment_bytes()));
            }
        })?;
        losses.push(loss);
        a.driver_mut().synchronize()?;
        if let Some(nvml) = meter.read() {
            readings.push((nvml, a.segment_bytes()));
        }
    }
    let stats = *a.stats();
    let mut context: Vec<u64> = readings
        .iter()
        .map(|&(n, seg)| n.saturating_sub(seg))
        .collect();
    context.sort_unstable();
    Ok(GpuMeasured {
        device,
        driver_version: meter.driver_version(),
        total_bytes: total,
        context_bytes: context[context.len() / 2],
        nvml_peak_bytes: readings.iter().map(|r| r.0).max().unwrap_or(0),
        reserved_peak_bytes: stats.reserved.peak,
        allocated_peak_bytes: stats.allocated.peak,
        nvml_source: meter.source().into(),
        steps: losses.len() as u64,
        loss_first_last: (
            losses.first().copied().unwrap_or(0.0),
            losses.last().copied().unwrap_or(0.0),
        ),
        edges: src.edges(),
    })
}

#[cfg(test)]
mod tests;
