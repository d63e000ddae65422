//! Why the watched job ended, from what `watch` saw itself: the exit status,
//! the cgroup's oom_kill counter delta and the tail of the job's stderr.
//!
//! What only watch knows (a signal it forwarded itself) is decided here; the
//! rest is diagnose's scanner and verdict over the same evidence.

use crate::diagnose::category::{Category, Confidence};

/// How the child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// It called exit with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
    /// It ended, but an attached watcher (not its parent) cannot see how.
    Unknown,
}

impl ExitKind {
    /// The status a shell reports: the code, or 128 + the signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitKind::Code(c) => c,
            ExitKind::Signal(s) => 128 + s,
            ExitKind::Unknown => 0,
        }
    }

    /// "exited with code 1", "killed by signal 9 (SIGKILL)".
    pub fn describe(self) -> String {
        match self {
            ExitKind::Code(c) => format!("exited with code {c}"),
            ExitKind::Signal(s) => match crate::diagnose::signals::signal_name(s) {
                Some(name) => format!("killed by signal {s} ({name})"),
                None => format!("killed by signal {s}"),
            },
            ExitKind::Unknown => "ended (an attached watcher cannot see its exit status)".into(),
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
    /// Who sent it, and whether headroom had to SIGKILL the job after it.
    pub stop: StopEvidence,
}

/// Where a forwarded signal came from and what headroom did after it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StopEvidence {
    /// The sender in words (`pid 4242 (slurmstepd)`, the terminal or kernel).
    pub sender: String,
    /// Seconds of grace after which headroom sent SIGKILL; `None`: it did not.
    pub killed_after_s: Option<f64>,
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
        let (name, who) = (signal_name(sig), &ev.stop.sender);
        let reason = match (ev.stop.killed_after_s, ev.exit) {
            (Some(grace), ExitKind::Signal(9)) => format!(
                "the job ignored the {name} that {who} sent headroom and headroom \
                 forwarded; after {grace:.0} s of grace (--kill-after) headroom sent SIGKILL"
            ),
            _ => format!("stopped by the {name} that {who} sent headroom, forwarded to the job"),
        };
        return v(TimeLimit, Certain, reason);
    }
    diagnosed(ev)
}

/// Everything else goes through diagnose's scanner and verdict: the stderr
/// tail as a log, the exit status and the cgroup counter as facts, so `watch`
/// and `diagnose` give the same answer on the same evidence.
fn diagnosed(ev: &EndEvidence<'_>) -> Verdict {
    use crate::diagnose::exit::ExitStatus;
    use crate::diagnose::{Facts, LogScanner, verdict_from_evidence};
    let mut scanner = LogScanner::new();
    for (i, line) in ev.stderr_tail.split(['\n', '\r']).enumerate() {
        scanner.feed_line("stderr", i as u64 + 1, line);
    }
    let exit = match ev.exit {
        ExitKind::Signal(s) => {
            ExitStatus::from_parts(&(128 + s).to_string(), Some(128 + s), Some(s))
        }
        // A wrapper shell reports its child's signal as 128+N.
        ExitKind::Code(c) if (129..=192).contains(&c) => {
            ExitStatus::from_parts(&c.to_string(), Some(c), Some(c - 128))
        }
        ExitKind::Code(c) => ExitStatus::from_parts(&c.to_string(), Some(c), None),
        ExitKind::Unknown => return without_exit(ev, scanner),
    };
    let facts = Facts {
        exit: Some(exit),
        cgroup_oom_kills: ev.oom_kill_delta,
        cgroup_limit_bytes: None,
    };
    let d = verdict_from_evidence(scanner.finish(), &facts);
    Verdict {
        category: d.category,
        confidence: d.confidence,
        reason: d.verdict,
    }
}

/// An attached job's end: only the cgroup counter and the kernel's lines.
fn without_exit(ev: &EndEvidence<'_>, scanner: crate::diagnose::LogScanner) -> Verdict {
    let facts = crate::diagnose::Facts {
        exit: None,
        cgroup_oom_kills: ev.oom_kill_delta,
        cgroup_limit_bytes: None,
    };
    let d = crate::diagnose::verdict_from_evidence(scanner.finish(), &facts);
    Verdict {
        category: d.category,
        confidence: d.confidence,
        reason: d.verdict,
    }
}

/// The name of a Linux signal number (`SIGKILL`, `SIGRTMIN+10`), or
/// `signal N` where Linux has none of that number.
pub fn signal_name(sig: i32) -> String {
    crate::diagnose::signals::signal_name(sig).unwrap_or_else(|| format!("signal {sig}"))
}
