//! What torchrun / torch.distributed.elastic prints when a rank dies, and
//! which rank died first.
//!
//! - `torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode:
//!   -9) local_rank: 3 (pid: 812917) of binary: ...` (older: `ERROR:torch...
//!   api:failed (exitcode: -9)`, newer: `E1223 ... api.py:882] failed ...`);
//!   the first such line in a log is the first failure the agent observed.
//! - the ChildFailedError table: `Root Cause (first observed failure):`, then
//!   `rank : 0 (local_rank: 0)`, `exitcode : -9 (pid: 14750)` and `traceback :
//!   Signal 9 (SIGKILL) received by PID 14750`.
//! - `Received 15 death signal, shutting down workers`: the agent itself was
//!   sent a signal (SIGTERM from Slurm at the time limit, Ctrl-C, a kill).
//! - any other `exitcode=-9` a process pool reports for a child, and
//!   DeepSpeed's launcher: `[launch.py:325:sigkill_handler] exits with return
//!   code = -9`.

use std::sync::LazyLock;

use regex::Regex;

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};
use crate::diagnose::exit::ExitStatus;

struct Patterns {
    exit: Regex,
    local_rank: Regex,
    table_rank: Regex,
    signal: Regex,
    death: Regex,
}

static RE: LazyLock<Patterns> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(p).expect("static regex");
    Patterns {
        exit: r(r"(?:exitcode\s*[:=]|exits with return code =)\s*(-?[0-9]+)"),
        local_rank: r(r"local_rank:\s*([0-9]+)"),
        table_rank: r(r"^\s*rank\s*:\s*([0-9]+)\s*\(local_rank:\s*([0-9]+)\)"),
        signal: r(r"Signal ([0-9]+) \((SIG[A-Z]+)\) received by PID ([0-9]+)"),
        death: r(r"Received ([0-9]+) death signal"),
    }
});

/// Inside a ChildFailedError table: the rank of the root cause, once read.
#[derive(Debug, Default)]
pub struct FailureTable {
    inside: bool,
    rank: Option<(u64, u64)>,
}

impl FailureTable {
    /// Whether the next line must be read even without a trigger word.
    pub fn active(&self) -> bool {
        self.inside
    }

    /// Reads one line.
    pub fn feed(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        if line.contains("Root Cause (first observed failure)") {
            *self = FailureTable {
                inside: true,
                rank: None,
            };
            return;
        }
        if self.inside {
            if line.trim_start().starts_with("====") {
                self.inside = false;
            } else if let Some(c) = RE.table_rank.captures(line) {
                self.rank = c[1].parse().ok().zip(c[2].parse().ok());
                return;
            }
        }
        parse(at, line, self.inside.then_some(self.rank).flatten(), out);
    }
}

fn parse(at: &Location<'_>, line: &str, table_rank: Option<(u64, u64)>, out: &mut Sink<'_>) {
    let re = &*RE;
    if let Some(c) = re.signal.captures(line) {
        if let Ok(status) = ExitStatus::parse(&format!("-{}", &c[1])) {
            out.exit_status(status, at, line);
        }
    } else if let Some(c) = re.death.captures(line) {
        let (category, strength) = match &c[1] {
            "15" | "2" | "1" => (Category::TimeLimit, Confidence::Likely),
            "9" => (Category::HostOomKernel, Confidence::Possible),
            _ => (Category::Unknown, Confidence::Possible),
        };
        let ev = Evidence::line("launcher_got_signal", category, strength, at, line);
        out.push(ev.with("launcher_signal", c[1].parse().ok()));
    } else if let Some(c) = re.exit.captures(line)
        && let Ok(status) = ExitStatus::parse(&c[1])
    {
        let local = re.local_rank.captures(line).and_then(|r| r[1].parse().ok());
        let (rank, local) = match table_rank {
            Some((r, l)) => (Some(r), Some(l)),
            None => (None, local),
        };
        if rank.is_some() || local.is_some() {
            // Context, not a cause: it names which rank the verdict is about.
            let ev = Evidence::line(
                "first_failed_rank",
                Category::Unknown,
                Confidence::Possible,
                at,
                line,
            );
            out.push(
                ev.with("failed_rank", rank)
                    .with("failed_local_rank", local),
            );
        }
        out.exit_status(status, at, line);
    }
}
