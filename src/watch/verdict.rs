//! Why the watched job ended, from what `watch` saw itself: the exit status,
//! the cgroup's oom_kill counter delta and the tail of the job's stderr.
//!
//! This is deliberately small and bounded: a handful of stderr markers, not
//! diagnose's full log parser. [`verdict`] is the one entry point, so the
//! lead can later point it at diagnose's scanner without touching the watch
//! loop.

use crate::diagnose::category::{Category, Confidence};

/// How the child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// It called exit with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl ExitKind {
    /// The status a shell reports: the code, or 128 + the signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitKind::Code(c) => c,
            ExitKind::Signal(s) => 128 + s,
        }
    }

    /// "exited with code 1", "killed by signal 9 (SIGKILL)".
    pub fn describe(self) -> String {
        match self {
            ExitKind::Code(c) => format!("exited with code {c}"),
            ExitKind::Signal(s) => format!("killed by signal {s} ({})", signal_name(s)),
        }
    }
}

/// The evidence `watch` collected about the end of the job.
#[derive(Debug, Clone)]
pub struct EndEvidence<'a> {
    /// How the main process ended.
    pub exit: ExitKind,
    /// How much the watched cgroup's oom_kill counter rose; `None` without a cgroup.
    pub oom_kill_delta: Option<u64>,
    /// The last bytes the job wrote to stderr.
    pub stderr_tail: &'a str,
    /// The signal headroom itself forwarded to the job (Ctrl-C, SIGTERM), if any.
    pub forwarded_signal: Option<i32>,
}

/// A cause, how sure, and the one-line reason shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The cause, in diagnose's vocabulary.
    pub category: Category,
    /// How sure.
    pub confidence: Confidence,
    /// The evidence in words.
    pub reason: String,
}

fn v(category: Category, confidence: Confidence, reason: impl Into<String>) -> Verdict {
    Verdict {
        category,
        confidence,
        reason: reason.into(),
    }
}

/// The verdict from watch's own evidence. Kernel proof first (the oom_kill
/// counter), then stderr markers, then the signal or exit code alone.
pub fn verdict(ev: &EndEvidence<'_>) -> Verdict {
    use Category::*;
    use Confidence::*;
    if let Some(n) = ev.oom_kill_delta.filter(|&n| n > 0) {
        return v(
            HostOomCgroup,
            Certain,
            format!("the cgroup's oom_kill counter rose by {n} while the job ran"),
        );
    }
    if let Some(sig) = ev.forwarded_signal {
        let reason = format!(
            "stopped by the {} headroom forwarded (Ctrl-C or kill)",
            signal_name(sig)
        );
        return v(TimeLimit, Certain, reason);
    }
    let err = ev.stderr_tail;
    if err.contains("CUDA out of memory") || err.contains("OutOfMemoryError: CUDA") {
        return v(CudaOomCapacity, Likely, "stderr says CUDA out of memory");
    }
    if err.contains("DataLoader worker (pid") && err.contains("Bus error")
        || err.contains("insufficient shared memory")
    {
        return v(
            ShmBusError,
            Likely,
            "a DataLoader worker hit a bus error: /dev/shm is too small",
        );
    }
    if err.contains("DataLoader worker (pid") && err.contains("killed by signal") {
        return v(
            DataloaderWorkerKilled,
            Likely,
            "stderr says a DataLoader worker was killed by a signal",
        );
    }
    if err.contains("NCCL error") || err.contains("Watchdog caught collective operation timeout") {
        return v(Nccl, Likely, "stderr shows an NCCL error");
    }
    // A wrapper shell reports its child's signal as 128+N: read it as the signal, less sure.
    let (signal, via_shell) = match ev.exit {
        ExitKind::Signal(s) => (Some(s), false),
        ExitKind::Code(c) if (129..=159).contains(&c) => (Some(c - 128), true),
        ExitKind::Code(_) => (None, false),
    };
    if let Some(s) = signal {
        let sure = |c: Confidence| if via_shell { Possible } else { c };
        return match s {
            9 if ev.oom_kill_delta == Some(0) => v(
                HostOomKernel,
                sure(Possible),
                "SIGKILL while the cgroup's oom_kill counter stayed at 0: the kernel's global OOM killer or a kill -9; check dmesg",
            ),
            9 => v(
                HostOomCgroup,
                sure(Possible),
                "SIGKILL (exit 137) and no cgroup counter to prove an OOM kill",
            ),
            7 => v(
                ShmBusError,
                sure(Likely),
                "SIGBUS (exit 135): usually /dev/shm too small",
            ),
            13 => v(
                Sigpipe,
                sure(Certain),
                "SIGPIPE (exit 141): the reader of its output went away",
            ),
            11 => v(Segfault, sure(Certain), "SIGSEGV (exit 139)"),
            15 => v(
                TimeLimit,
                sure(Likely),
                "SIGTERM (exit 143): time limit, preemption or cancellation",
            ),
            _ => v(
                Unknown,
                Possible,
                format!("killed by signal {s} ({})", signal_name(s)),
            ),
        };
    }
    match ev.exit {
        ExitKind::Code(0) => v(Success, Certain, "exited with code 0"),
        ExitKind::Code(1) if err.contains("Traceback (most recent call last)") => {
            v(PythonError, Likely, "exit 1 with a Python traceback")
        }
        ExitKind::Code(c) => v(
            Unknown,
            Possible,
            format!("exited with code {c} and no known marker on stderr"),
        ),
        ExitKind::Signal(_) => v(Unknown, Possible, "no evidence"),
    }
}

/// The usual name of a Linux signal number.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        _ => "signal",
    }
}
