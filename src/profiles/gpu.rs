//! GPU profiles (memory as NVML reports it) and resolving `--gpu` text,
//! which is a profile name, an alias, or a size such as `44.53GiB`.

use serde::{Deserialize, Serialize};

use super::{EMBEDDED, normalize, parse_embedded, unknown};
use crate::error::Result;
use crate::units::{BareNumber, parse_size};

/// One GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuProfile {
    /// Profile name (`a100-80gb`).
    pub name: String,
    /// Other spellings, including Slurm gres type names.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Marketing name.
    #[serde(default)]
    pub description: String,
    /// Total memory as NVML reports it, MiB.
    pub memory_mib: u64,
    /// What torch.cuda reports as total capacity, bytes, where known.
    #[serde(default)]
    pub pytorch_total_bytes: Option<u64>,
    /// CUDA context plus PyTorch's kernels as NVML sees them, MiB.
    #[serde(default)]
    pub context_mib: Option<u64>,
    /// Whether the figures were seen in real output or estimated.
    #[serde(default)]
    pub confidence: Option<String>,
}

impl GpuProfile {
    /// Total device memory in bytes (NVML's figure).
    pub fn total_bytes(&self) -> u64 {
        self.memory_mib << 20
    }

    fn matches(&self, wanted: &str) -> bool {
        normalize(&self.name) == wanted || self.aliases.iter().any(|a| normalize(a) == wanted)
    }
}

/// Every embedded GPU profile.
pub fn all_gpus() -> Result<Vec<GpuProfile>> {
    EMBEDDED
        .iter()
        .filter(|(k, _, _)| *k == "gpus")
        .map(|(k, n, t)| parse_embedded(k, n, t))
        .collect()
}

/// Resolves `--gpu`: a size (`80G`, `44.53GiB`) or a profile name or alias.
pub fn resolve_gpu(text: &str) -> Result<GpuProfile> {
    let starts_numeric = text.trim().starts_with(|c: char| c.is_ascii_digit());
    if starts_numeric {
        let bytes = parse_size(text, BareNumber::Refuse)
            .map_err(|e| crate::error::Error::bad(format!("--gpu: {e}")))?;
        return Ok(GpuProfile {
            name: text.trim().to_string(),
            aliases: vec![],
            description: format!("a GPU with {} of memory", crate::units::fmt_bytes(bytes)),
            memory_mib: bytes >> 20,
            pytorch_total_bytes: Some(bytes),
            context_mib: None,
            confidence: None,
        });
    }
    let wanted = normalize(text);
    let gpus = all_gpus()?;
    if let Some(g) = gpus.iter().find(|g| g.matches(&wanted)) {
        return Ok(g.clone());
    }
    Err(unknown(
        "GPU",
        text,
        gpus.iter().map(|g| g.name.as_str()).collect(),
    ))
}
