//! The GPU side of calibration, where a CUDA driver and a device are found:
//! the driver library is looked for with cudarc's `is_culib_present()`
//! before any CUDA call (cudarc panics without it), then NVML for a device.
//! `device` measures the card with the driver alone (a bare context, one
//! kernel in hand-written PTX, the allocation granularity, what cuMemAlloc
//! costs); `torch` measures PyTorch's side with the user's Python and holds
//! it against `src/alloc`'s simulator. No NVRTC and no CUDA toolkit are
//! needed: the driver JIT-compiles the PTX.

pub mod device;
pub mod kernel;
pub mod meter;
pub mod torch;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::estimate::Coefficients;

/// What the GPU step measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuFacts {
    /// The NVIDIA driver's version, from NVML.
    pub driver_version: Option<String>,
    /// The driver's side (none: it failed, see `notes`).
    pub device: Option<device::DeviceFacts>,
    /// PyTorch's side (none: no torch with CUDA, see `notes`).
    pub torch: Option<torch::TorchFacts>,
    /// What could not be measured, and why.
    pub notes: Vec<String>,
}

/// What the GPU step did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuOutcome {
    /// One line for people.
    pub note: String,
    /// The measurements, when it ran.
    pub facts: Option<GpuFacts>,
}

/// Whether the CUDA driver library can be loaded.
pub fn culib_present() -> bool {
    // SAFETY: only tries to dlopen the driver library; no CUDA call is made.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// An outcome without measurements, and why.
pub fn skipped(note: impl Into<String>) -> GpuOutcome {
    GpuOutcome {
        note: note.into(),
        facts: None,
    }
}

/// Runs the GPU step; `python` and `script` run PyTorch's side where given
/// (a Python with torch). Never fails: what fails is a note.
pub fn run(python: Option<(&Path, &Path)>) -> GpuOutcome {
    if !culib_present() {
        return skipped("no GPU: no CUDA driver library (libcuda.so.1); GPU calibration skipped");
    }
    let nvml = match crate::collect::gpu::GpuReader::open() {
        Ok(r) if !r.device_names().is_empty() => r,
        _ => {
            return skipped(
                "no GPU: CUDA library present, no device through NVML; GPU calibration skipped",
            );
        }
    };
    let mut notes = Vec::new();
    let device = device::measure()
        .map_err(|e| notes.push(format!("driver side: {e}")))
        .ok();
    let total = device.as_ref().map_or(0, |d| d.total_bytes);
    let torch = match python {
        Some((py, script)) if total > 0 => torch::measure(py, script, total)
            .map_err(|e| notes.push(format!("PyTorch side: {e}")))
            .ok(),
        Some(_) => None,
        None => {
            notes.push("PyTorch side: no Python with torch given".into());
            None
        }
    };
    let name = device
        .as_ref()
        .map(|d| d.device.clone())
        .or_else(|| nvml.device_names().first().cloned())
        .unwrap_or_default();
    let facts = GpuFacts {
        driver_version: nvml.driver_version(),
        device,
        torch,
        notes,
    };
    GpuOutcome {
        note: format!(
            "GPU: {name} (driver {}){}",
            facts.driver_version.as_deref().unwrap_or("unknown"),
            if facts.notes.is_empty() {
                String::new()
            } else {
                format!("; {}", facts.notes.join("; "))
            }
        ),
        facts: Some(facts),
    }
}

/// Sets in `c` what the GPU step measured directly (PyTorch's context and
/// the host bytes CUDA adds) and names them.
pub fn apply(f: &GpuFacts, c: &mut Coefficients, provenance: &str) -> Vec<&'static str> {
    let Some(t) = &f.torch else {
        return Vec::new();
    };
    let mut set = Vec::new();
    if let Some(ctx) = t.context_bytes {
        c.cuda_context_bytes = ctx;
        c.cuda_context_measured = true;
        c.provenance.insert(
            "cuda_context_bytes".into(),
            format!("measured: NVML less PyTorch's reserve after a real training step, plus cuBLAS's workspace, {provenance}"),
        );
        set.push("cuda_context_bytes");
    }
    c.cuda_host_bytes = t.cuda_host_bytes;
    c.provenance.insert(
        "cuda_host_bytes".into(),
        format!("measured: RssAnon + RssShmem added by CUDA's initialisation and a matrix product, {provenance}"),
    );
    set.push("cuda_host_bytes");
    set
}
