//! The GPU step of calibration, where a CUDA driver is present. Detection
//! only for now: the driver library is looked for with cudarc's
//! `is_culib_present()` before anything else, then NVML for a device. The
//! device workload (batches copied to the card, SAGE kernels, allocations
//! through the caching-allocator rules) is not built yet: the CPU
//! calibration leaves the CUDA coefficients at their defaults and says so.

/// What the GPU step did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GpuOutcome {
    /// Whether it ran.
    pub ran: bool,
    /// One line for people.
    pub note: String,
}

/// Whether the CUDA driver library can be loaded.
pub fn culib_present() -> bool {
    // SAFETY: only tries to dlopen the driver library; no CUDA call is made.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Looks for a driver and a device; never fails.
pub fn run() -> GpuOutcome {
    if !culib_present() {
        return GpuOutcome {
            ran: false,
            note: "no GPU: GPU calibration skipped".into(),
        };
    }
    match crate::collect::gpu::GpuReader::open() {
        Ok(r) if !r.device_names().is_empty() => GpuOutcome {
            ran: false,
            note: format!(
                "GPU found ({}), but the device workload is not built yet: CUDA coefficients keep their defaults",
                r.device_names().join(", ")
            ),
        },
        _ => GpuOutcome {
            ran: false,
            note: "no GPU: GPU calibration skipped (CUDA library present, no device through NVML)"
                .into(),
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_a_gpu_the_step_says_it_skipped() {
        let out = super::run();
        if super::culib_present() {
            eprintln!("a CUDA driver is present: {}", out.note);
            return;
        }
        eprintln!("skipped: no GPU on this machine");
        assert!(!out.ran);
        assert_eq!(out.note, "no GPU: GPU calibration skipped");
    }
}
