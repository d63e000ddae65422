//! PyTorch's CUDA out-of-memory message, every format its caching allocator
//! has printed, read into numbers, and the capacity-or-fragmentation rule.
//!
//! Formats (c10/cuda/CUDACachingAllocator.cpp, THCCachingAllocator before):
//! - 2.1+: `Tried to allocate X. GPU 0 has a total capacity of T of which F is
//!   free. [Process P has M memory in use.] [Including non-PyTorch memory, this
//!   process has U memory in use.] Of the allocated memory A is allocated by
//!   PyTorch, and R is reserved by PyTorch but unallocated.` (2.1 spelled
//!   "capacty").
//! - 1.4 to 2.0: `Tried to allocate X (GPU 0; T total capacity; A already
//!   allocated; F free; R reserved in total by PyTorch)`: unallocated = R - A.
//! - 1.0 to 1.3: `... F free; C cached)`: C is already the unallocated part.
//!
//! The message is one line in a traceback, but people paste it wrapped, so a
//! message missing its numbers may be completed by the next few lines.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::diagnose::category::Category;

/// The numbers of one CUDA OOM message, in bytes, exactly as the JSON names them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CudaOom {
    /// Which PyTorch message format it was.
    pub format: CudaOomFormat,
    /// The GPU index the message names.
    pub device: Option<u32>,
    /// The allocation that failed ("Tried to allocate").
    pub requested_bytes: Option<u64>,
    /// The card's total memory.
    pub total_bytes: Option<u64>,
    /// Free memory on the card as the driver reported it.
    pub free_bytes: Option<u64>,
    /// All memory this process holds, CUDA context included (2.x only; null when not printed).
    pub process_in_use_bytes: Option<u64>,
    /// Memory in live tensors.
    pub allocated_bytes: Option<u64>,
    /// Memory the allocator holds but no tensor uses (old formats: reserved - allocated).
    pub reserved_unallocated_bytes: Option<u64>,
}

/// The message format, which also says which allocator settings exist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CudaOomFormat {
    /// PyTorch 2.1 and later ("reserved by PyTorch but unallocated").
    Pytorch2,
    /// PyTorch 1.4 to 2.0 ("reserved in total by PyTorch").
    Pytorch1Reserved,
    /// PyTorch 1.0 to 1.3 ("cached").
    Pytorch1Cached,
    /// A CUDA OOM without the allocator's numbers (cut off, or `CUDA error: out of memory`).
    #[default]
    NoNumbers,
}

/// Least memory held by others that names another process as the cause.
const OTHER_PROCESS_MIN: u64 = 1 << 30;

const SIZE: &str = r"([0-9]+(?:\.[0-9]+)?) ?(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)\b";

static RE: LazyLock<[Regex; 11]> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(&p.replace("SIZE", SIZE)).expect("static regex");
    [
        r(r"[Tt]ried to allocate SIZE"),
        r(r"GPU ([0-9]+)(?: has a total|;)"),
        r(r"total capac(?:i)?ty of SIZE"),
        r(r"of which SIZE is free"),
        r(r"this process has SIZE memory in use"),
        r(r"Of the allocated memory SIZE is allocated by PyTorch"),
        r(r"and SIZE is reserved by PyTorch but unallocated"),
        r(r"SIZE total capacity"),
        r(r"SIZE already allocated"),
        r(r"SIZE free;"),
        r(r"SIZE (reserved in total by PyTorch|cached)"),
    ]
});

/// Converts `4.15` `GiB` to bytes. PyTorch prints binary units; KB/MB/GB
/// are read the same way since only hand-edited logs write them.
fn to_bytes(num: &str, unit: &str) -> Option<u64> {
    let v: f64 = num.parse().ok()?;
    let mult = match unit {
        "bytes" | "B" => 1.0,
        "KiB" | "KB" => 1024.0,
        "MiB" | "MB" => 1024.0 * 1024.0,
        "GiB" | "GB" => 1024.0 * 1024.0 * 1024.0,
        _ => 1024.0 * 1024.0 * 1024.0 * 1024.0,
    };
    let b = v * mult;
    (b.is_finite() && b < 1e19).then(|| b.round() as u64)
}

fn size(re: &Regex, text: &str) -> Option<u64> {
    let c = re.captures(text)?;
    to_bytes(c.get(1)?.as_str(), c.get(2)?.as_str())
}

impl CudaOom {
    /// Reads whatever numbers `text` holds (one line, or a few joined).
    pub fn parse(text: &str) -> CudaOom {
        let re = &*RE;
        let mut oom = CudaOom {
            requested_bytes: size(&re[0], text),
            device: re[1]
                .captures(text)
                .and_then(|c| c.get(1)?.as_str().parse().ok()),
            ..CudaOom::default()
        };
        if let Some(total) = size(&re[2], text) {
            oom.format = CudaOomFormat::Pytorch2;
            oom.total_bytes = Some(total);
            oom.free_bytes = size(&re[3], text);
            oom.process_in_use_bytes = size(&re[4], text);
            oom.allocated_bytes = size(&re[5], text);
            oom.reserved_unallocated_bytes = size(&re[6], text);
        } else if let Some(total) = size(&re[7], text) {
            oom.total_bytes = Some(total);
            oom.allocated_bytes = size(&re[8], text);
            oom.free_bytes = size(&re[9], text);
            if let Some(c) = re[10].captures(text) {
                let held = to_bytes(&c[1], &c[2]);
                if &c[3] == "cached" {
                    oom.format = CudaOomFormat::Pytorch1Cached;
                    oom.reserved_unallocated_bytes = held;
                } else {
                    oom.format = CudaOomFormat::Pytorch1Reserved;
                    oom.reserved_unallocated_bytes = held
                        .zip(oom.allocated_bytes)
                        .map(|(r, a)| r.saturating_sub(a));
                }
            }
        }
        oom
    }

    /// Whether every number the verdict needs was found.
    pub fn is_complete(&self) -> bool {
        self.requested_bytes.is_some()
            && self.total_bytes.is_some()
            && self.free_bytes.is_some()
            && self.allocated_bytes.is_some()
            && self.reserved_unallocated_bytes.is_some()
    }

    /// Memory on the card this process does not account for: total − free −
    /// what the process holds ("this process has" when printed, else what the
    /// allocator reserved), CUDA context included. None without the numbers.
    pub fn held_by_others(&self) -> Option<u64> {
        let own = self.process_in_use_bytes.or_else(|| {
            self.allocated_bytes?
                .checked_add(self.reserved_unallocated_bytes?)
        })?;
        Some(
            self.total_bytes?
                .saturating_sub(self.free_bytes?)
                .saturating_sub(own),
        )
    }

    /// The rules, in order: another process when the memory this process
    /// cannot account for is over a third of the card and over 1 GiB (a CUDA
    /// context is 0.3–1 GiB, a display server less); otherwise fragmentation
    /// when the reserved-but-unallocated memory is at least the request (the
    /// bytes exist, just not in one usable piece); capacity otherwise. None
    /// when the message lacks the request or the unallocated figure.
    pub fn classify(&self) -> Option<Category> {
        let (req, unalloc) = (self.requested_bytes?, self.reserved_unallocated_bytes?);
        if let (Some(others), Some(total)) = (self.held_by_others(), self.total_bytes)
            && others > total / 3
            && others > OTHER_PROCESS_MIN
        {
            return Some(Category::CudaOomOtherProcess);
        }
        Some(if unalloc >= req {
            Category::CudaOomFragmentation
        } else {
            Category::CudaOomCapacity
        })
    }

    /// The fraction of the current batch that would fit, assuming the memory
    /// in live tensors scales with the batch: at the failure the step needed
    /// `allocated + requested` and could have had `allocated + free` (the
    /// reserved-but-unallocated part is left out: it did not serve this
    /// request). Fixed memory (parameters, optimizer state) makes the true
    /// factor smaller, so the caller takes a margin below it.
    pub fn fitting_batch_fraction(&self) -> Option<f64> {
        let (a, r, f) = (
            self.allocated_bytes?,
            self.requested_bytes?,
            self.free_bytes?,
        );
        let need = a.checked_add(r)?;
        (need > 0).then(|| ((a + f) as f64 / need as f64).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_from_bytes_to_gib() {
        assert_eq!(to_bytes("512", "bytes"), Some(512));
        assert_eq!(to_bytes("1.50", "KiB"), Some(1536));
        assert_eq!(to_bytes("20.00", "MiB"), Some(20 << 20));
        assert_eq!(to_bytes("2", "GiB"), Some(2 << 30));
    }

    #[test]
    fn unallocated_equal_to_the_request_is_fragmentation() {
        // "at least the request": 2.00 GiB unallocated vs 2.00 GiB requested.
        let msg = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 23.65 GiB of which 1.00 GiB is free. Of the allocated memory 20.00 GiB is allocated by PyTorch, and 2.00 GiB is reserved by PyTorch but unallocated.";
        let oom = CudaOom::parse(msg);
        assert_eq!(oom.device, Some(1));
        assert_eq!(oom.process_in_use_bytes, None);
        assert_eq!(oom.classify(), Some(Category::CudaOomFragmentation));
        // One byte less unallocated would be capacity: 1.99 GiB < 2.00 GiB.
        let oom = CudaOom::parse(&msg.replace("and 2.00 GiB", "and 1.99 GiB"));
        assert_eq!(oom.classify(), Some(Category::CudaOomCapacity));
    }

    #[test]
    fn batch_fraction_is_allocated_plus_free_over_allocated_plus_request() {
        // seeds/004: (36.78 + 3.84) / (36.78 + 4.15) = 40.62 / 40.93 = 0.99243
        let oom = CudaOom::parse(
            "Tried to allocate 4.15 GiB. GPU 0 has a total capacity of 44.53 GiB of which 3.84 GiB is free. Of the allocated memory 36.78 GiB is allocated by PyTorch, and 3.56 GiB is reserved by PyTorch but unallocated.",
        );
        let f = oom.fitting_batch_fraction().unwrap();
        assert!((f - 40.62 / 40.93).abs() < 1e-4, "{f}");
    }

    #[test]
    fn cut_off_message_keeps_what_it_has() {
        let oom = CudaOom::parse(
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capac",
        );
        assert_eq!(oom.requested_bytes, Some(2 << 30));
        assert!(!oom.is_complete());
        assert_eq!(oom.classify(), None);
    }
}
