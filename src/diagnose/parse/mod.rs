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
pub mod kernel;
pub mod python;
pub mod slurm;

use super::category::{Category, Confidence};
use super::evidence::{Evidence, EvidenceSet, Location};
use super::exit::ExitStatus;
use cuda_oom::CudaOom;

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

/// Lines a wrapped CUDA OOM message may continue over.
const CUDA_OOM_CONTINUATION: u32 = 6;

/// The parsers' state over one input.
#[derive(Debug, Default)]
pub struct LineParsers {
    traceback: python::TracebackState,
    sacct: Option<accounting::SacctTable>,
    /// A CUDA OOM message missing numbers: its text, where it began, lines left.
    cuda_pending: Option<(String, String, u64, u32)>,
    /// The first complete CUDA OOM message's numbers (else the first at all).
    pub cuda_oom: Option<CudaOom>,
}

impl LineParsers {
    /// Whether the next line must be parsed even without a trigger word.
    pub fn wants_every_line(&self) -> bool {
        self.traceback.active() || self.sacct.is_some() || self.cuda_pending.is_some()
    }

    /// Parses one cleaned line.
    pub fn feed(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        if let Some(table) = &self.sacct {
            if line.contains('|') {
                table.row(at, line, out);
                return;
            }
            self.sacct = None;
        }
        if line.contains("JobID")
            && let Some(table) = accounting::SacctTable::from_header(line)
        {
            self.sacct = Some(table);
            return;
        }
        if line.contains("out of memory") && line.contains("CUDA") {
            self.start_cuda_oom(at, line, out);
        } else {
            self.continue_cuda_oom(line, out);
        }
        kernel::parse(at, line, out);
        slurm::parse(at, line, out);
        python::parse(at, line, out);
        accounting::seff_line(at, line, out);
        self.traceback.feed(at, line, out);
    }

    /// Forces sacct mode (`--sacct`): a table without a header is read in
    /// the order `JobID|State|ExitCode|MaxRSS|ReqMem`.
    pub fn expect_sacct(&mut self) {
        self.sacct = accounting::SacctTable::from_header("JobID|State|ExitCode|MaxRSS|ReqMem");
    }

    /// Ends the input: a CUDA OOM still waiting for numbers is reported as is.
    pub fn finish(&mut self, out: &mut Sink<'_>) {
        if let Some((text, source, line, _)) = self.cuda_pending.take() {
            let at = Location {
                source: &source,
                line,
            };
            self.emit_cuda_oom(&at, &text, out);
        }
        self.sacct = None;
    }

    fn start_cuda_oom(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        if let Some((text, source, n, _)) = self.cuda_pending.take() {
            self.emit_cuda_oom(
                &Location {
                    source: &source,
                    line: n,
                },
                &text,
                out,
            );
        }
        if CudaOom::parse(line).is_complete() || line.contains("CUDA error: out of memory") {
            self.emit_cuda_oom(at, line, out);
        } else {
            let text = line.trim().to_string();
            self.cuda_pending = Some((text, at.source.to_string(), at.line, CUDA_OOM_CONTINUATION));
        }
    }

    fn continue_cuda_oom(&mut self, line: &str, out: &mut Sink<'_>) {
        let Some((text, source, n, left)) = self.cuda_pending.as_mut() else {
            return;
        };
        let looks_like_more = [
            "GPU",
            "allocated",
            "capac",
            "free",
            "reserved",
            "memory in use",
        ]
        .iter()
        .any(|w| line.contains(w));
        if looks_like_more && *left > 0 && text.len() < 4096 {
            text.push(' ');
            text.push_str(line.trim());
            *left -= 1;
            if !CudaOom::parse(text).is_complete() && *left > 0 {
                return;
            }
        }
        let (text, source, n) = (std::mem::take(text), std::mem::take(source), *n);
        self.cuda_pending = None;
        self.emit_cuda_oom(
            &Location {
                source: &source,
                line: n,
            },
            &text,
            out,
        );
    }

    fn emit_cuda_oom(&mut self, at: &Location<'_>, text: &str, out: &mut Sink<'_>) {
        let oom = CudaOom::parse(text);
        let (category, strength) = match oom.classify() {
            Some(c) => (c, Confidence::Certain),
            None => (Category::CudaOomCapacity, Confidence::Likely),
        };
        let ev = Evidence::line("cuda_oom", category, strength, at, text)
            .with("cuda_requested_bytes", oom.requested_bytes)
            .with(
                "cuda_reserved_unallocated_bytes",
                oom.reserved_unallocated_bytes,
            );
        out.push(ev);
        let better = match &self.cuda_oom {
            None => true,
            Some(old) => !old.is_complete() && oom.is_complete(),
        };
        if better {
            self.cuda_oom = Some(oom);
        }
    }
}
