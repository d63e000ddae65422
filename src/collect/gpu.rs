//! GPU memory through NVML, loaded at run time: per device (what
//! `nvidia-smi` shows, the CUDA context included) and per process.
//!
//! Without a driver [`GpuReader::open`] says why in one line ("no NVIDIA
//! driver") and callers leave their GPU columns empty; nothing here links
//! against libnvidia-ml at build time.

use std::collections::HashSet;

use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;

/// An open NVML session.
pub struct GpuReader {
    nvml: Nvml,
    devices: u32,
}

/// One GPU reading, in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuMemory {
    /// Memory in use on every device together (NVML `memory_info().used`).
    pub device_used: u64,
    /// Memory of all devices together.
    pub device_total: u64,
    /// Memory NVML charges to the given processes, summed over devices;
    /// `None` when the driver does not report per-process use (e.g. in
    /// containers without the host pid namespace).
    pub process_used: Option<u64>,
}

impl GpuReader {
    /// Loads NVML; the error is the line to show the user.
    pub fn open() -> Result<Self, String> {
        let nvml = Nvml::init().map_err(|e| match e {
            nvml_wrapper::error::NvmlError::LibloadingError(_) => "no NVIDIA driver".to_string(),
            other => format!("no NVIDIA driver usable ({other})"),
        })?;
        let devices = nvml
            .device_count()
            .map_err(|e| format!("NVML cannot count devices: {e}"))?;
        if devices == 0 {
            return Err("no NVIDIA GPU".into());
        }
        Ok(GpuReader { nvml, devices })
    }

    /// Loads NVML if it can, with the line watch's summary shows either
    /// way: the devices' names, or why there are none.
    pub fn open_for_summary() -> (Option<Self>, String) {
        match Self::open() {
            Ok(g) => {
                let names = g.device_names().join(", ");
                (Some(g), names)
            }
            Err(why) => (None, why),
        }
    }

    /// The names of the devices, for the summary.
    pub fn device_names(&self) -> Vec<String> {
        (0..self.devices)
            .filter_map(|i| self.nvml.device_by_index(i).ok()?.name().ok())
            .collect()
    }

    /// The driver's version (`nvidia-smi`'s "Driver Version").
    pub fn driver_version(&self) -> Option<String> {
        self.nvml.sys_driver_version().ok()
    }

    /// Reads every device once; `pids` selects whose per-process use is summed.
    pub fn read(&self, pids: &HashSet<u32>) -> GpuMemory {
        let mut out = GpuMemory::default();
        let mut any_process_info = false;
        let mut process_used = 0u64;
        for i in 0..self.devices {
            let Ok(dev) = self.nvml.device_by_index(i) else {
                continue;
            };
            if let Ok(mem) = dev.memory_info() {
                out.device_used += mem.used;
                out.device_total += mem.total;
            }
            let procs = dev
                .running_compute_processes()
                .into_iter()
                .chain(dev.running_graphics_processes())
                .flatten();
            // A process can be listed as compute and as graphics: count it once.
            let mut counted = HashSet::new();
            for p in procs {
                any_process_info = true;
                if !counted.insert(p.pid) {
                    continue;
                }
                if let (true, UsedGpuMemory::Used(b)) = (pids.contains(&p.pid), &p.used_gpu_memory)
                {
                    process_used += b;
                }
            }
        }
        out.process_used = any_process_info.then_some(process_used);
        out
    }
}
