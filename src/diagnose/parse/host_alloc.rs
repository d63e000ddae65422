//! Host memory refused without a kill: an allocation that failed and raised
//! instead of the OOM killer stepping in. Windows has no OOM killer (the
//! commit limit, RAM plus page file, refuses the allocation); Linux refuses
//! under `vm.overcommit_memory=2`, `ulimit -v`, or one absurd request.
//!
//! - torch: `RuntimeError: [enforce fail at alloc_cpu.cpp:81] data.
//!   DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824
//!   bytes.` (1.x: `... allocate 3GB. Buy new RAM!`, 0.3/0.4's TH allocator:
//!   `$ Torch: not enough memory: you tried to allocate 72GB. Buy new RAM!`;
//!   Linux: `can't allocate
//!   memory: ... Error code 12 (Cannot allocate memory)`);
//! - Python and numpy: `MemoryError`, `numpy.core._exceptions._ArrayMemoryError:
//!   Unable to allocate 3.50 GiB for an array ...`;
//! - any `[Errno 12] Cannot allocate memory` (fork, mmap, a worker start).

use std::sync::LazyLock;

use regex::Regex;

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};

struct Patterns {
    torch: Regex,
    python: Regex,
}

static RE: LazyLock<Patterns> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(p).expect("static regex");
    Patterns {
        torch: r(
            r"(?:DefaultCPUAllocator|\$ Torch): (?:not enough memory|can't allocate memory)(?:: ?you tried to allocate ([0-9]+) ?(bytes|GB))?",
        ),
        // Glued to what precedes or follows it in a paste: `…solveMemoryError:`,
        // `MemoryErrorTraceback`, `from_parent)MemoryError`.
        python: r(r"_?(?:Array)?MemoryError"),
    }
});

/// Reads one line.
pub fn parse(at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
    let ev = |kind| {
        Evidence::line(
            kind,
            Category::HostAllocFailed,
            Confidence::Certain,
            at,
            line,
        )
    };
    if let Some(c) = RE.torch.captures(line) {
        let shift = if c.get(2).is_some_and(|u| u.as_str() == "GB") {
            30
        } else {
            0
        };
        let bytes = c
            .get(1)
            .and_then(|n| n.as_str().parse::<u64>().ok())
            .and_then(|n| n.checked_mul(1 << shift));
        out.push(ev("cpu_allocator_failed").with("alloc_requested_bytes", bytes));
    } else if !line.contains("OutOfMemoryError") && RE.python.is_match(line) {
        out.push(ev("python_memory_error"));
    } else if line.contains("Cannot allocate memory") {
        out.push(ev("enomem"));
    }
}
