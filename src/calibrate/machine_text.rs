//! The machine's facts for people, and the report of a calibration that
//! could measure only the machine (no torch or PyG in the Python given)
//! and, where a GPU is found, the card.

use std::io::Write;

use serde::Serialize;

use super::machine::Machine;
use crate::output::Report;
use crate::units::fmt_bytes;

/// Writes the machine's facts, one line each.
pub fn write(m: &Machine, w: &mut dyn Write) -> std::io::Result<()> {
    match &m.cgroup {
        Some(c) => writeln!(
            w,
            "cgroup: {} at {}, limit {}, shmem {}, swap {}",
            c.version,
            c.path,
            c.limit_bytes.map_or("none".into(), fmt_bytes),
            if c.counts_shmem {
                "counted"
            } else {
                "not split out"
            },
            if c.swap_accounted {
                "accounted"
            } else {
                "not accounted"
            }
        )?,
        None => writeln!(w, "cgroup: this process is in no memory cgroup")?,
    }
    writeln!(
        w,
        "/dev/shm: {}; page size {}; transparent huge pages: {}",
        m.dev_shm_bytes.map_or("not mounted".into(), fmt_bytes),
        fmt_bytes(m.page_size),
        m.transparent_hugepages.as_deref().unwrap_or("unknown")
    )?;
    match &m.glibc_malloc {
        Some(g) => writeln!(
            w,
            "glibc {} malloc: maps requests from {} on its own; a freed mapping raises that up to {}",
            g.version,
            fmt_bytes(g.mmap_threshold),
            fmt_bytes(g.mmap_threshold_max)
        )?,
        None => writeln!(
            w,
            "glibc malloc: not probed (not glibc, or the probe could not tell)"
        )?,
    }
    for o in &m.malloc_overrides {
        writeln!(w, "  set in this environment (the jobs inherit it): {o}")?;
    }
    Ok(())
}

/// A calibration that measured the machine only.
#[derive(Debug, Clone, Serialize)]
pub struct MachineOnly {
    /// Why no run was made, in one line.
    pub note: String,
    /// What was measured.
    pub machine: Machine,
    /// The GPU step (none: --no-gpu).
    pub gpu: Option<super::gpu::GpuOutcome>,
}

impl Report for MachineOnly {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(w, "{}", self.note)?;
        write(&self.machine, w)?;
        match &self.gpu {
            Some(g) => super::gpu_text::write(g, w),
            None => Ok(()),
        }
    }
}
