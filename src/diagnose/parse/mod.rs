//! One parser per source of evidence (kernel, Slurm, accounting, Python, the
//! CUDA OOM message), the trigger words that decide whether a line is worth
//! parsing at all, and [`LineParsers`], which runs them over one input.
//!
//! Every parser's patterns contain at least one trigger word, so a line with
//! none of them cannot be evidence and is skipped without running a regex;
//! the parsers with state (a traceback, a wrapped CUDA OOM, a sacct table)
//! ask to see every line while they are in the middle of something.

pub mod accounting;
pub mod cuda_oom;
pub mod cuda_wrap;
pub mod host_alloc;
pub mod kernel;
pub mod launcher;
pub mod locale_words;
pub mod native;
pub mod python;
pub mod sacct;
pub mod sacct_json;
pub mod shell;
pub mod slurm;
pub mod worker_split;

use super::category::{Category, Confidence};
use super::evidence::{Evidence, EvidenceSet, Location};
use super::exit::ExitStatus;

/// Literal substrings at least one of which every evidence line contains.
/// The benchmark greps for exactly these (benches/diagnose_vs_grep.sh).
pub const TRIGGERS: &[&str] = &[
    "oom",
    "OOM",
    "out of memory",
    "Out of memory",
    "Out Of Memory",
    "OUT_OF_MEMORY",
    "Kill",
    "DataLoader worker",
    "shared memory",
    "Bus error",
    "egmentation fault",
    "segfault",
    "Broken pipe",
    "BrokenPipe",
    "NCCL",
    "nccl",
    "Watchdog",
    "CANCELLED",
    "TIMEOUT",
    "PREEMPT",
    "xceeded",
    "exitcode",
    "Signal ",
    "xit code",
    "Traceback",
    "Terminated",
    "Aborted",
    "JobID",
    "State:",
    "Memory Utilized",
    "Memory Efficiency",
    "memory: usage",
    "ried to allocate",
    "DefaultCPUAllocator",
    "MemoryError",
    "Cannot allocate memory",
    "low on resource",
    "MemoryPressure",
    "death signal",
    "zsh:",
    "terminated by signal",
    "0xC0000005",
    "ForkingPickler",
    "PIPESTATUS",
    "Error 141",
    "first observed failure",
    "return code =",
    "Error",
    "Exception",
    "Assertion `",
    "device-side assert",
    "bad_alloc",
    "unable to write to file",
    "memory pressure",
    "memory usage threshold",
    "OOM-killed",
    "died with",
    "with code",
    "CANCELLED DUE TO",
    "exit code",
    "Job ID: ",
];

/// Where parsers put what they find.
pub struct Sink<'a> {
    /// The evidence gathered so far.
    pub evidence: &'a mut EvidenceSet,
    /// The last exit status a log reported (torchrun, srun, sacct, seff).
    pub exit_from_logs: &'a mut Option<ExitStatus>,
}

impl Sink<'_> {
    /// Adds one piece of evidence.
    pub fn push(&mut self, ev: Evidence) {
        self.evidence.push(ev);
    }

    /// Records an exit status a log reported, as evidence and as the status.
    pub fn exit_status(&mut self, status: ExitStatus, at: &Location<'_>, line: &str) {
        let (category, strength) = status
            .hint()
            .unwrap_or((Category::Unknown, Confidence::Possible));
        let ev = Evidence::line("log_exit_status", category, strength, at, line)
            .with_label(status.raw.clone());
        self.evidence.push(ev);
        *self.exit_from_logs = Some(status);
    }
}

/// The parsers' state over one input.
#[derive(Debug, Default)]
pub struct LineParsers {
    traceback: python::TracebackState,
    shell: shell::ShellState,
    failures: launcher::FailureTable,
    worker_split: worker_split::WorkerSplit,
    /// Multiprocessing frames were seen (see [`python::parse`]).
    mp_pipe: bool,
    sacct: sacct::SacctReader,
    /// CUDA OOM messages, including ones wrapped over several lines.
    pub cuda: cuda_wrap::CudaOomReader,
}

impl LineParsers {
    /// Whether the next line must be parsed even without a trigger word.
    pub fn wants_every_line(&self) -> bool {
        self.traceback.active()
            || self.sacct.active()
            || self.cuda.active()
            || self.shell.active()
            || self.failures.active()
            || self.worker_split.active()
    }

    /// Parses one cleaned line.
    pub fn feed(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        if self.sacct.feed(at, line, out) {
            return;
        }
        self.mp_pipe |= line.contains("ForkingPickler") || line.contains("multiprocessing");
        self.cuda.feed(at, line, out);
        kernel::parse(at, line, out);
        slurm::parse(at, line, out);
        self.shell.feed(at, line, out);
        self.failures.feed(at, line, out);
        python::parse(at, line, self.mp_pipe, out);
        self.worker_split.feed(at, line, self.mp_pipe, out);
        native::parse(at, line, out);
        host_alloc::parse(at, line, out);
        accounting::seff_line(at, line, out);
        self.traceback.feed(at, line, out);
    }

    /// Forces sacct mode (`--sacct`): a table without a header is read in
    /// the order `JobID|State|ExitCode|MaxRSS|ReqMem`.
    pub fn expect_sacct(&mut self) {
        self.sacct.expect_default();
    }

    /// The input starts with `{`: a `sacct --json` document, maybe.
    pub fn expect_json(&mut self) {
        self.sacct.expect_json();
    }

    /// Ends the input: a CUDA OOM still waiting for numbers is reported as is.
    pub fn finish(&mut self, out: &mut Sink<'_>) {
        self.cuda.finish(out);
        self.sacct.finish(out);
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tests_unframed;
