//! NVML readings of one process's GPU memory for the GPU step. NVML's
//! per-process figure is preferred; inside a container without the host's
//! pid namespace NVML lists processes under pids this process cannot match,
//! so the device's used memory less what was used before the context
//! existed stands in (exact when nothing else runs on the card).

use std::collections::HashSet;

use crate::collect::gpu::GpuReader;

/// Reads one process's GPU memory.
pub struct Meter {
    reader: GpuReader,
    pids: HashSet<u32>,
    /// Device memory in use before this process created a context.
    baseline: u64,
    per_process: bool,
}

impl Meter {
    /// Opens NVML for process `pid` and takes the baseline; call before
    /// that process creates its context.
    pub fn open(pid: u32) -> Result<Meter, String> {
        let reader = GpuReader::open()?;
        let pids = HashSet::from([pid]);
        let baseline = reader.read(&pids).device_used;
        Ok(Meter {
            reader,
            pids,
            baseline,
            per_process: true,
        })
    }

    /// Bytes the process holds on the GPUs, or None without a reading.
    pub fn read(&mut self) -> Option<u64> {
        let m = self.reader.read(&self.pids);
        match m.process_used {
            Some(p) if p > 0 && self.per_process => Some(p),
            _ => {
                // Once per-process data has failed, stay on the delta: mixing
                // the two sources would make the context jump.
                self.per_process = false;
                (m.device_used > 0).then(|| m.device_used.saturating_sub(self.baseline))
            }
        }
    }

    /// Which reading [`Meter::read`] used.
    pub fn source(&self) -> &'static str {
        if self.per_process {
            "per-process"
        } else {
            "device delta"
        }
    }

    /// The driver's version.
    pub fn driver_version(&self) -> Option<String> {
        self.reader.driver_version()
    }
}
