//! Reading the numbers back out of a CUDA OOM message, in both forms PyTorch
//! prints (2.x and 1.x/2.0), for `diagnose` and its expandable-segments what-if.

use std::sync::OnceLock;

use regex::Regex;

use super::oom::OomNumbers;

/// A size as `format_size` prints it: "4.15 GiB", "20.00 MiB", "512 bytes".
fn size(num: &str, unit: &str) -> Option<u64> {
    let v: f64 = num.parse().ok()?;
    let mult = match unit {
        "bytes" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        "TiB" => 1099511627776.0,
        _ => return None,
    };
    Some((v * mult).round() as u64)
}

const SZ: &str = r"([0-9.]+) (bytes|KiB|MiB|GiB|TiB)";

fn re(cell: &'static OnceLock<Regex>, pattern: impl FnOnce() -> String) -> &'static Regex {
    // The patterns are constants of this file, checked by the tests below.
    cell.get_or_init(|| Regex::new(&pattern()).expect("constant pattern"))
}

impl OomNumbers {
    /// The numbers of a PyTorch CUDA OOM message, or None when the text is
    /// not one (or lacks the allocator's figures).
    pub fn from_message(text: &str) -> Option<OomNumbers> {
        static NEW: OnceLock<Regex> = OnceLock::new();
        static PROC: OnceLock<Regex> = OnceLock::new();
        static OLD: OnceLock<Regex> = OnceLock::new();
        let new = re(&NEW, || {
            format!(
                r"Tried to allocate {SZ}\. GPU \d+ has a total capacity of {SZ} of which {SZ} is free\..*?Of the allocated memory {SZ} is allocated by PyTorch, (?:with .*? allocated in private pools \(e\.g\., CUDA Graphs\), )?and {SZ} is reserved by PyTorch but unallocated"
            )
        });
        if let Some(c) = new.captures(text) {
            let g = |i: usize| size(c.get(i)?.as_str(), c.get(i + 1)?.as_str());
            let proc_re = re(&PROC, || format!(r"this process has {SZ} memory in use"));
            let process_in_use = proc_re
                .captures(text)
                .and_then(|p| size(p.get(1)?.as_str(), p.get(2)?.as_str()));
            return Some(OomNumbers {
                requested: g(1)?,
                total: g(3)?,
                free: g(5)?,
                allocated: g(7)?,
                reserved_unallocated: g(9)?,
                process_in_use,
            });
        }
        let old = re(&OLD, || {
            format!(
                r"Tried to allocate {SZ} \(GPU \d+; {SZ} total capacity; {SZ} already allocated; {SZ} free; (?:{SZ} allowed; )?{SZ} reserved in total by PyTorch\)"
            )
        });
        let c = old.captures(text)?;
        let g = |i: usize| size(c.get(i)?.as_str(), c.get(i + 1)?.as_str());
        let (allocated, reserved) = (g(5)?, g(11)?);
        Some(OomNumbers {
            requested: g(1)?,
            total: g(3)?,
            free: g(7)?,
            allocated,
            reserved_unallocated: reserved.saturating_sub(allocated),
            process_in_use: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{AllocConf, Allocator, DeviceMemory, expandable_what_if};

    const GIB: f64 = 1073741824.0;

    #[test]
    fn seed_004_in_the_2x_form() {
        // seeds/004's figures as PyTorch 2.x prints them.
        let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.15 GiB. GPU 0 has a \
                   total capacity of 44.53 GiB of which 3.84 GiB is free. Including non-PyTorch memory, \
                   this process has 40.68 GiB memory in use. Of the allocated memory 36.78 GiB is \
                   allocated by PyTorch, and 3.56 GiB is reserved by PyTorch but unallocated. If reserved \
                   but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
        let n = OomNumbers::from_message(msg).unwrap();
        assert_eq!(n.requested, (4.15 * GIB).round() as u64);
        assert_eq!(n.total, (44.53 * GIB).round() as u64);
        assert_eq!(n.free, (3.84 * GIB).round() as u64);
        assert_eq!(n.allocated, (36.78 * GIB).round() as u64);
        assert_eq!(n.reserved_unallocated, (3.56 * GIB).round() as u64);
        assert_eq!(n.process_in_use, Some((40.68 * GIB).round() as u64));
        assert!(expandable_what_if(&n).would_fit);
    }

    #[test]
    fn the_1x_form() {
        // A real 1.x line: reserved 2.46 GiB - allocated 1.72 GiB = 0.74 GiB unallocated.
        let msg = "RuntimeError: CUDA out of memory. Tried to allocate 376.00 MiB (GPU 0; 3.95 GiB total \
                   capacity; 1.72 GiB already allocated; 354.88 MiB free; 2.46 GiB reserved in total by PyTorch)";
        let n = OomNumbers::from_message(msg).unwrap();
        assert_eq!(n.requested, 376 << 20);
        assert_eq!(n.free, (354.88 * 1048576.0_f64).round() as u64);
        assert_eq!(
            n.reserved_unallocated,
            (2.46 * GIB).round() as u64 - (1.72 * GIB).round() as u64
        );
        assert_eq!(n.process_in_use, None);
        // 354.88 MiB free + 757.76 MiB unallocated - 40 MiB slack = 1072.6 MiB
        // >= 380 MiB (376 rounded up to 20 MiB pages): expandable would fit.
        assert!(expandable_what_if(&n).would_fit);
    }

    #[test]
    fn reads_back_what_the_simulator_prints() {
        let mut a = Allocator::new(AllocConf::default(), DeviceMemory::new(100 << 20, 0));
        let r1 = a.malloc(60 << 20).unwrap();
        a.free(r1);
        let _r2 = a.malloc(20 << 20).unwrap();
        let oom = a.malloc(50 << 20).unwrap_err();
        for msg in [oom.message(), oom.legacy_message()] {
            let n = OomNumbers::from_message(&msg).unwrap();
            assert_eq!(
                (n.requested, n.total, n.free),
                (50 << 20, 100 << 20, 40 << 20)
            );
            assert_eq!((n.allocated, n.reserved_unallocated), (20 << 20, 40 << 20));
        }
        assert!(OomNumbers::from_message("Killed").is_none());
    }
}
