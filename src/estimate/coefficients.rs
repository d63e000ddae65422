//! The constants of the memory model that depend on the machine and the
//! software stack rather than on the job. The host defaults are measured on
//! real CPython + PyTorch + PyG processes (the corpus in benches/pyg); each
//! coefficient keeps where its value came from, and a figure measured on
//! headroom's own Rust workload never replaces a Python one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Machine- and stack-dependent constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Coefficients {
    /// Resident bytes of one training process after importing torch and PyG, before data.
    pub runtime_bytes: u64,
    /// Library pages (torch's shared objects) in the main process's RSS:
    /// counted only where the limit sums RSS.
    pub runtime_file_bytes: u64,
    /// Library pages in a DataLoader worker's RSS (it touches few of them).
    pub worker_file_bytes: u64,
    /// Extra host bytes once CUDA is initialised (driver, cuBLAS/cuDNN pages touched).
    pub cuda_host_bytes: u64,
    /// Pages a forked DataLoader worker writes itself: Python objects copied by
    /// reference counting, its own allocator arenas, sampler buffers.
    pub worker_private_bytes: u64,
    /// Pages a persistent worker keeps private while it idles between
    /// iterations (its batch buffers are gone, its interpreter's are not).
    pub idle_worker_private_bytes: u64,
    /// Sampler scratch per sampled node while a batch is built (hash map, buffers).
    pub sampler_bytes_per_node: u64,
    /// Bytes per element alive at the worst moment of sorting int64 keys
    /// with their indices (torch's CPU sort: values, indices and the radix
    /// sort's second buffers). Building the CSC, sorting edge_index in the
    /// script and to_undirected's coalesce each peak at such a sort.
    pub sort_bytes_per_element: u64,
    /// Share of the CSC build's transient (its sort and share copies) that
    /// stays resident after the build: where those arrays are under glibc's
    /// dynamic mmap threshold (up to 32 MiB, small graphs) they are freed
    /// into the heap and kept. 0 on large graphs (mmapped, given back).
    pub build_heap_retained: f64,
    /// CPU training, first epoch: heap kept beyond the live step bytes, per
    /// byte of the step's heap-resident tensors (those under glibc's 32 MiB
    /// mmap threshold ceiling: served from the heap, fragmenting), when the
    /// step's largest tensor is under that ceiling too.
    pub cpu_heap_small_tensors: f64,
    /// The same when the largest tensors are mmapped (freed exactly).
    pub cpu_heap_large_tensors: f64,
    /// Evaluation whose workers are forked from the grown heap (the pages
    /// they and the main process rewrite are copied), per heap-resident
    /// byte, small tensors, for one set of forked workers (3.6 from the
    /// three `pl200k-a-*` rows of the corpus; 3.3 while the in-flight count
    /// held seven batches of a two-batch split, which this ratio absorbed).
    pub cpu_heap_small_eval_forked: f64,
    /// The same, large tensors.
    pub cpu_heap_large_eval_forked: f64,
    /// Later epochs while workers forked from the grown heap share its pages
    /// (the parent's rewrites copy them), small tensors.
    pub cpu_heap_small_shared: f64,
    /// The same, large tensors, per live byte of the step: the most it
    /// reaches (see `cpu_heap_large_shared_resident`).
    pub cpu_heap_large_shared: f64,
    /// The same, large tensors, per byte of the step's heap-resident tensors:
    /// a step whose tensors are nearly all mmapped keeps next to nothing
    /// whatever workers were forked from its heap (glibc's mallinfo2 on
    /// sealed-cow-2611274's draw 33: a heap of 199 MiB, 47 MiB of it free).
    pub cpu_heap_large_shared_resident: f64,
    /// CUDA context as NVML sees it when the GPU profile does not say.
    pub cuda_context_bytes: u64,
    /// Whether `cuda_context_bytes` was measured on this machine's GPU by
    /// `headroom calibrate` (it then wins over the GPU profile's figure).
    pub cuda_context_measured: bool,
    /// Caching-allocator reserve as a fraction of the per-batch GPU allocations.
    pub allocator_reserve_fraction: f64,
    /// Where these came from (`defaults` or a calibration file).
    pub source: String,
    /// For each coefficient by name: what it was measured from, and when.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provenance: BTreeMap<String, String>,
    /// The largest graph and batch the fitted values were fitted on (a
    /// calibration's; none for the defaults): see `regime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<super::regime::Regime>,
}

/// The provenance of the built-in values (the table's).
fn default_provenance() -> BTreeMap<String, String> {
    super::coeff_table::TABLE
        .iter()
        .map(|k| {
            (
                k.name.to_string(),
                format!("default: {}", k.provenance.trim_start_matches("default: ")),
            )
        })
        .collect()
}

impl Coefficients {
    /// Where `name` came from, as recorded (or the file it was read from).
    pub fn provenance_of(&self, name: &str) -> String {
        self.provenance
            .get(name)
            .cloned()
            .unwrap_or_else(|| format!("{} (no provenance recorded)", self.source))
    }
}

impl Default for Coefficients {
    /// The table's defaults (`coeff_table::TABLE`).
    fn default() -> Self {
        let mut c = Coefficients {
            runtime_bytes: 0,
            runtime_file_bytes: 0,
            worker_file_bytes: 0,
            cuda_host_bytes: 0,
            worker_private_bytes: 0,
            idle_worker_private_bytes: 0,
            sampler_bytes_per_node: 0,
            sort_bytes_per_element: 0,
            build_heap_retained: 0.0,
            cpu_heap_small_tensors: 0.0,
            cpu_heap_large_tensors: 0.0,
            cpu_heap_small_eval_forked: 0.0,
            cpu_heap_large_eval_forked: 0.0,
            cpu_heap_small_shared: 0.0,
            cpu_heap_large_shared: 0.0,
            cpu_heap_large_shared_resident: 0.0,
            cuda_context_bytes: 0,
            cuda_context_measured: false,
            allocator_reserve_fraction: 0.0,
            source: "defaults".into(),
            provenance: default_provenance(),
            regime: None,
        };
        for k in super::coeff_table::TABLE {
            (k.set)(&mut c, k.default);
        }
        c
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
    let (path, explicit) = match path {
        Some(p) => (p.to_path_buf(), true),
        None => match default_calibration_path() {
            Some(p) if p.is_file() => (p, false),
            _ => return Ok(Coefficients::default()),
        },
    };
    let text = crate::input::read_text(&path, "a calibration file", true)?;
    let file = super::coeff_bounds::parse_calibration(&text, &path)?;
    let mut c = file.coefficients;
    c.source = format!(
        "{}{}",
        path.display(),
        if explicit { "" } else { " (default location)" }
    );
    Ok(c)
}
