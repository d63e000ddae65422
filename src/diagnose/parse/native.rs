//! Failures reported without a Python traceback around them: what native
//! code, a launcher or a platform prints on its own.
//!
//! - CUDA kernels' device-side assertions (`…/Indexing.cu:1284:
//!   indexSelectLargeIndex: block: [134,0,0], thread: [0,0,0] Assertion
//!   `srcIndex < srcSelectDimSize` failed.`, PyTorch 1.x's `THCTensorIndex.cu`
//!   form) and `CUDA error: device-side assert triggered`: an index out of
//!   range on the GPU, a Python error;
//! - an exception's last line with no `Traceback` header before it (IPython's
//!   and rich's tracebacks, a paste of the last line only);
//! - C++'s `std::bad_alloc`: an allocation refused;
//! - PyTorch's `unable to write to file </torch_…>`: its shared-memory file
//!   could not grow, /dev/shm is full;
//! - Ray's memory monitor killing workers when the node's memory use passes
//!   its threshold (node memory pressure, like a kubelet eviction);
//! - runc's `container init was OOM-killed (memory limit too low?)`;
//! - a launcher's `died with <Signals.SIGKILL: 9>` (accelerate, kohya):
//!   the child's signal, which its own CalledProcessError only reports.

use std::sync::LazyLock;

use regex::Regex;

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};
use crate::diagnose::exit::ExitStatus;

struct Patterns {
    device_assert: Regex,
    exception: Regex,
    died_with: Regex,
}

static RE: LazyLock<Patterns> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(p).expect("static regex");
    Patterns {
        device_assert: r(r"\.cu:[0-9]+: .*Assertion `"),
        exception: r(r"^([A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception))(?::\s|:$|$)"),
        died_with: r(r"died with <Signals\.(SIG[A-Z]+): ([0-9]+)>"),
    }
});

/// Exceptions another parser reads with more meaning, or that only report
/// a failure elsewhere.
fn read_elsewhere(name: &str) -> bool {
    ["OutOfMemoryError", "MemoryError", "ChildFailedError"]
        .iter()
        .any(|n| name.ends_with(n))
}

/// Reads one line.
pub fn parse(at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
    use Confidence::*;
    let ev = |kind, cat, strength| Evidence::line(kind, cat, strength, at, line);
    let t = line.trim();
    if RE.device_assert.is_match(t) || t.contains("device-side assert triggered") {
        out.push(ev("cuda_device_assert", Category::PythonError, Likely));
    } else if t.contains("std::bad_alloc") || t.contains("std;;bad_alloc") {
        out.push(ev("cpp_bad_alloc", Category::HostAllocFailed, Certain));
    } else if t.contains("unable to write to file </torch_") {
        out.push(ev("torch_shm_write_failed", Category::ShmBusError, Likely));
    } else if t.contains("killed due to memory pressure (OOM)")
        || t.contains("which exceeds the memory usage threshold")
    {
        out.push(ev(
            "ray_memory_monitor_kill",
            Category::HostOomKernel,
            Likely,
        ));
    } else if t.contains("was OOM-killed (memory limit") {
        out.push(ev("runc_oom_killed", Category::HostOomCgroup, Likely));
    } else if let Some(c) = RE.died_with.captures(t) {
        died_with(at, line, &c[1], &c[2], out);
    } else if let Some(c) = RE.exception.captures(t)
        && !read_elsewhere(&c[1])
    {
        // The traceback reader gives the same line "likely" when the header
        // was there; alone, the line only says an exception ended something.
        let name = c[1].to_string();
        out.push(ev("python_exception_line", Category::PythonError, Possible).with_label(name));
    }
}

/// A launcher's report that its child died of a signal: the signal is the
/// cause, the launcher's own exception a consequence.
fn died_with(at: &Location<'_>, line: &str, name: &str, num: &str, out: &mut Sink<'_>) {
    let (category, strength) = match name {
        "SIGKILL" => (Category::HostOomKernel, Confidence::Likely),
        "SIGSEGV" => (Category::Segfault, Confidence::Likely),
        "SIGBUS" => (Category::ShmBusError, Confidence::Likely),
        "SIGTERM" | "SIGINT" | "SIGHUP" => (Category::TimeLimit, Confidence::Likely),
        _ => (Category::Unknown, Confidence::Possible),
    };
    out.push(
        Evidence::line("launcher_child_signal", category, strength, at, line)
            .with_label(name.to_string()),
    );
    if let Ok(status) = ExitStatus::parse(&format!("-{num}")) {
        *out.exit_from_logs = Some(status);
    }
}
