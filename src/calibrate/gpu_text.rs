//! The GPU step's facts for people: the card through the driver, PyTorch's
//! context and host cost, the allocator's rounding and a real step, each
//! beside what headroom's simulator says.

use std::io::Write;

use super::gpu::GpuOutcome;
use crate::units::fmt_bytes;

fn diff(measured: u64, simulated: u64) -> String {
    if measured == simulated {
        "same".into()
    } else {
        format!(
            "{:+.1}%",
            (simulated as f64 - measured as f64) / measured.max(1) as f64 * 100.0
        )
    }
}

/// Writes the GPU step's outcome.
pub fn write(g: &GpuOutcome, w: &mut dyn Write) -> std::io::Result<()> {
    writeln!(w, "{}", g.note)?;
    let Some(f) = &g.facts else {
        return Ok(());
    };
    if let Some(d) = &f.device {
        writeln!(
            w,
            "  card: {} (sm_{}{}), {}; bare driver context {} (NVML, {}), {} after one kernel",
            d.device,
            d.compute_capability.0,
            d.compute_capability.1,
            fmt_bytes(d.total_bytes),
            fmt_bytes(d.context_bytes),
            d.nvml_source,
            fmt_bytes(d.context_after_kernel_bytes)
        )?;
        writeln!(
            w,
            "  allocation granularity: minimum {}, recommended {}",
            fmt_bytes(d.granularity.0),
            fmt_bytes(d.granularity.1)
        )?;
        for c in &d.alloc_costs {
            writeln!(
                w,
                "  cuMemAlloc({} B): NVML +{}",
                c.request,
                fmt_bytes(c.nvml_bytes)
            )?;
        }
    }
    if let Some(t) = &f.torch {
        writeln!(
            w,
            "  PyTorch {}: context {} (NVML less reserved after the step, plus cuBLAS's workspace; {} after one matrix product), CUDA adds {} of host memory",
            t.torch,
            t.context_bytes.map_or("unknown".into(), fmt_bytes),
            t.context_after_matmul_bytes
                .map_or("unknown".into(), fmt_bytes),
            fmt_bytes(t.cuda_host_bytes)
        )?;
        writeln!(
            w,
            "  before the requests: {} allocated, {} reserved (cuBLAS's workspace, kept by PyTorch's allocator); the simulator starts from it",
            fmt_bytes(t.baseline.0),
            fmt_bytes(t.baseline.1)
        )?;
        writeln!(
            w,
            "  {:>12} {:>11} {:>11} {:>11} {:>11}",
            "request", "allocated", "reserved", "simulated", "NVML"
        )?;
        for r in &t.rounding {
            writeln!(
                w,
                "  {:>12} {:>11} {:>11} {:>11} {:>11}",
                r.request,
                fmt_bytes(r.allocated),
                fmt_bytes(r.reserved),
                format!(
                    "{} {}",
                    fmt_bytes(r.simulated.1),
                    diff(r.reserved, r.simulated.1)
                ),
                r.nvml.map_or("-".into(), fmt_bytes)
            )?;
        }
        match (t.step_peaks, t.step_simulated) {
            (Some((a, r)), Some((sa, sr))) => writeln!(
                w,
                "  {} step: allocated peak {} (simulated {}), reserved peak {} (simulated {})",
                t.step_model.as_deref().unwrap_or("GraphSAGE"),
                fmt_bytes(a),
                diff(a, sa),
                fmt_bytes(r),
                diff(r, sr)
            )?,
            (Some((a, r)), None) => writeln!(
                w,
                "  {} step: allocated peak {}, reserved peak {} (not simulated: {})",
                t.step_model.as_deref().unwrap_or("GraphSAGE"),
                fmt_bytes(a),
                fmt_bytes(r),
                t.step_skipped.as_deref().unwrap_or("no snapshot")
            )?,
            _ => writeln!(
                w,
                "  GraphSAGE step: {}",
                t.step_skipped.as_deref().unwrap_or("did not run")
            )?,
        }
    }
    Ok(())
}
