//! What a Python training process prints as it dies: DataLoader worker
//! failures (torch/utils/data/_utils/signal_handling.py, dataloader.py and the
//! C++ worker signal handlers), broken pipes, NCCL errors and watchdog
//! timeouts, and the final line of a traceback (torchrun's lines are read in
//! [`super::launcher`]).

use std::sync::LazyLock;

use regex::Regex;

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};

struct Patterns {
    worker_signal: Regex,
    worker_exited: Regex,
    watchdog: Regex,
    exception: Regex,
}

static RE: LazyLock<Patterns> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(p).expect("static regex");
    Patterns {
        worker_signal: r(r"DataLoader worker \(pid ([0-9]+)\) is killed by signal: ([A-Za-z ]+)"),
        worker_exited: r(r"DataLoader worker \(pid(?:\(s\))? ([0-9, ]+)\) exited unexpectedly"),
        watchdog: r(
            r"Watchdog caught collective operation timeout.*?Timeout\(ms\)=([0-9]+)\)(?:.*? ran for ([0-9]+) milliseconds)?",
        ),
        exception: r(
            r"^([A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Exit|Interrupt|Failure))(?::|$)",
        ),
    }
});

/// Reads one line of a Python process's output. `mp_pipe`: multiprocessing
/// frames (ForkingPickler, connection.py) came before, so a broken pipe is
/// the pipe to a worker that never started or died, not stdout's reader.
pub fn parse(at: &Location<'_>, line: &str, mp_pipe: bool, out: &mut Sink<'_>) {
    use Confidence::*;
    let re = &*RE;
    let ev = |kind, cat, strength| Evidence::line(kind, cat, strength, at, line);
    if let Some(c) = re.worker_signal.captures(line) {
        let pid = c[1].parse().ok();
        let (kind, cat) = match c[2].trim() {
            "Bus error" => ("dataloader_worker_bus_error", Category::ShmBusError),
            "Segmentation fault" => ("dataloader_worker_segfault", Category::Segfault),
            _ => ("dataloader_worker_killed", Category::DataloaderWorkerKilled),
        };
        out.push(ev(kind, cat, Certain).with("worker_pid", pid));
        if cat == Category::Segfault {
            // The crash is the cause; the worker's death is what it did (a
            // SIGSEGV only kills the process it happens in).
            out.push(
                ev(
                    "dataloader_worker_died",
                    Category::DataloaderWorkerKilled,
                    Likely,
                )
                .with("worker_pid", pid),
            );
        }
    } else if let Some(c) = re.worker_exited.captures(line) {
        let pid = c[1].split(',').next().and_then(|p| p.trim().parse().ok());
        out.push(
            ev(
                "dataloader_worker_exited",
                Category::DataloaderWorkerKilled,
                Likely,
            )
            .with("worker_pid", pid),
        );
    } else if line.contains("insufficient shared memory (shm)")
        || line.contains("Unexpected bus error encountered in worker")
    {
        out.push(ev("shm_insufficient", Category::ShmBusError, Certain));
    } else if line.contains("Unexpected segmentation fault encountered in")
        || line.contains("Fatal Python error: Segmentation fault")
    {
        out.push(ev("python_segfault", Category::Segfault, Certain));
    } else if mp_pipe && line.contains("BrokenPipeError") {
        out.push(ev(
            "multiprocessing_broken_pipe",
            Category::PythonError,
            Likely,
        ));
    } else if line.contains("BrokenPipeError") || line.contains("Broken pipe") {
        out.push(ev("broken_pipe", Category::Sigpipe, Likely));
    } else if let Some(c) = re.watchdog.captures(line) {
        let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse().ok());
        out.push(
            ev("nccl_watchdog_timeout", Category::Nccl, Certain)
                .with("nccl_timeout_ms", n(1))
                .with("nccl_ran_ms", n(2)),
        );
    } else if line.contains("Watchdog caught collective operation timeout") {
        // Wrapped by a terminal before its timeout figure.
        out.push(ev("nccl_watchdog_timeout", Category::Nccl, Certain));
    } else if is_nccl_error(line) {
        out.push(ev("nccl_error", Category::Nccl, Likely));
    } else if line.contains("NCCL WARN") {
        out.push(ev("nccl_warn", Category::Nccl, Possible));
    }
}

fn is_nccl_error(line: &str) -> bool {
    const NEEDLES: [&str; 7] = [
        "NCCL error",
        "ncclInternalError",
        "ncclSystemError",
        "ncclUnhandledCudaError",
        "ncclRemoteError",
        "NCCL communicator was aborted",
        "ProcessGroupNCCL's watchdog got stuck",
    ];
    NEEDLES.iter().any(|n| line.contains(n))
}

/// Follows a traceback from `Traceback (most recent call last):` to the line
/// naming the exception, which is the evidence. A traceback that Python
/// prints under `Exception ignored in: ...` (an exception in `__del__` or
/// another place it cannot raise) or `Exception in thread ...` did not end
/// the process: it is not evidence of how the program exited. Deleted
/// DataLoader iterators print such blocks by the dozen in forked workers
/// (`AssertionError: can only test a child process`, benches/pyg draws of
/// sealed-linger-2611265), before the error that did end the run.
#[derive(Debug, Default)]
pub struct TracebackState {
    /// Lines read since the traceback began, when inside one.
    inside: Option<u32>,
    /// The line of the last `Exception ignored in` / `Exception in thread`.
    preamble_at: Option<u64>,
    /// The traceback being read follows such a preamble.
    ignored: bool,
    /// The last traceback ended was an ignored one (a chained one after
    /// "During handling of the above exception" is ignored with it).
    last_ignored: bool,
    /// Lines still read after an ignored traceback ends, for the chaining
    /// sentence (which has no trigger word) and the blank line after it.
    watch_after: u8,
}

/// Longest traceback followed; a longer one is given up on (truncated log).
const MAX_TRACEBACK_LINES: u32 = 2000;

impl TracebackState {
    /// Whether the next lines must be read even without a trigger word.
    pub fn active(&self) -> bool {
        self.inside.is_some() || self.watch_after > 0
    }

    /// Feeds one line; emits a `python_exception` when the traceback ends.
    pub fn feed(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        self.watch_after = self.watch_after.saturating_sub(1);
        if line.starts_with("Exception ignored in") || line.starts_with("Exception in thread") {
            self.preamble_at = Some(at.line);
            return;
        }
        let chained = line.starts_with("During handling of the above exception")
            || line.starts_with("The above exception was the direct cause");
        if chained && self.last_ignored {
            // The chained traceback follows after one blank line.
            self.preamble_at = Some(at.line + 1);
            return;
        }
        if line.contains("Traceback (most recent call last)") {
            self.inside = Some(0);
            self.ignored = self.preamble_at.is_some_and(|p| p + 1 == at.line);
            return;
        }
        let Some(n) = self.inside else { return };
        if n >= MAX_TRACEBACK_LINES {
            self.inside = None;
            return;
        }
        self.inside = Some(n + 1);
        let t = line.trim_end();
        if t.is_empty() || t.starts_with(' ') || t.starts_with('\t') || t.starts_with('^') {
            return;
        }
        if let Some(c) = RE.exception.captures(t) {
            // torchrun's ChildFailedError only reports that a rank failed;
            // the rank's own error (or signal) is the evidence.
            self.last_ignored = self.ignored;
            if self.ignored {
                self.watch_after = 3;
            }
            if c[1].ends_with("ChildFailedError") || self.ignored {
                self.inside = None;
                return;
            }
            // Python prints the exception that ends the program last; an
            // earlier one was handled (or printed by a library's thread,
            // as multiprocessing's queue feeder does without a preamble).
            out.evidence
                .demote("python_exception", Confidence::Possible);
            out.push(
                Evidence::line(
                    "python_exception",
                    Category::PythonError,
                    Confidence::Likely,
                    at,
                    line,
                )
                .with_label(c[1].to_string()),
            );
            self.inside = None;
        }
    }
}
