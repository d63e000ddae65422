//! The constants of the memory model that depend on the machine and the
//! software stack rather than on the job. Defaults are typical readings for
//! CPython 3.10+ with PyTorch 2.x and PyG 2.5+; `headroom calibrate` measures
//! them and writes a file that replaces these.

use serde::{Deserialize, Serialize};

/// Machine- and stack-dependent constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Coefficients {
    /// Resident bytes of one training process after importing torch and PyG, before data.
    pub runtime_bytes: u64,
    /// Extra host bytes once CUDA is initialised (driver, cuBLAS/cuDNN pages touched).
    pub cuda_host_bytes: u64,
    /// Pages a forked DataLoader worker writes itself: Python objects copied by
    /// reference counting, its own allocator arenas, sampler buffers.
    pub worker_private_bytes: u64,
    /// Sampler scratch per sampled node while a batch is built (hash map, buffers).
    pub sampler_bytes_per_node: u64,
    /// CUDA context as NVML sees it when the GPU profile does not say.
    pub cuda_context_bytes: u64,
    /// Whether `cuda_context_bytes` was measured on this machine's GPU by
    /// `headroom calibrate` (it then wins over the GPU profile's figure).
    pub cuda_context_measured: bool,
    /// Caching-allocator reserve as a fraction of the per-batch GPU allocations.
    pub allocator_reserve_fraction: f64,
    /// Where these came from (`defaults` or a calibration file).
    pub source: String,
}

impl Default for Coefficients {
    fn default() -> Self {
        Coefficients {
            runtime_bytes: 700 << 20,
            cuda_host_bytes: 1200 << 20,
            worker_private_bytes: 200 << 20,
            sampler_bytes_per_node: 64,
            cuda_context_bytes: 500 << 20,
            cuda_context_measured: false,
            allocator_reserve_fraction: 0.25,
            source: "defaults".into(),
        }
    }
}

/// A calibration file: what `headroom calibrate --out` writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CalibrationFile {
    /// The fitted coefficients.
    pub coefficients: Coefficients,
    /// The GPU it was measured on, when the GPU step ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuProvenance>,
}

/// Where a calibration's GPU figures came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuProvenance {
    /// The device's name as the driver reports it.
    pub device: String,
    /// The NVIDIA driver's version.
    pub driver_version: Option<String>,
    /// Total memory of the device, bytes.
    pub total_bytes: u64,
    /// NVML's peak for the calibration workload, bytes.
    pub nvml_peak_bytes: u64,
    /// What `plan` predicted for it with these coefficients, bytes.
    pub predicted_peak_bytes: u64,
}

/// Where `calibrate` writes and `plan` looks by default.
pub fn default_calibration_path() -> Option<std::path::PathBuf> {
    dirs::config_dir().map(|d| d.join("headroom").join("calibration.yaml"))
}

/// Coefficients from `path`, else from the default file if it exists, else defaults.
pub fn load_coefficients(path: Option<&std::path::Path>) -> crate::error::Result<Coefficients> {
    use crate::error::Error;
    let (path, explicit) = match path {
        Some(p) => (p.to_path_buf(), true),
        None => match default_calibration_path() {
            Some(p) if p.is_file() => (p, false),
            _ => return Ok(Coefficients::default()),
        },
    };
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let file: CalibrationFile = serde_yaml::from_str(&text).map_err(|e| {
        Error::bad(format!(
            "{}: not a calibration file: {}",
            path.display(),
            e.to_string().replace('\n', " ")
        ))
    })?;
    let mut c = file.coefficients;
    c.source = format!(
        "{}{}",
        path.display(),
        if explicit { "" } else { " (default location)" }
    );
    Ok(c)
}
