//! Reading CUDA OOM messages out of a log as evidence, including messages
//! pasted or logged over several lines: a message that lacks its numbers
//! collects the next few lines that look like its continuation.

use super::Sink;
use super::cuda_oom::CudaOom;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};

/// Lines a wrapped CUDA OOM message may continue over.
const CONTINUATION_LINES: u32 = 6;
/// Longest wrapped message collected, in bytes.
const MAX_TEXT: usize = 4096;

/// A message still missing numbers: its text so far and where it began.
#[derive(Debug)]
struct Pending {
    text: String,
    source: String,
    line: u64,
    lines_left: u32,
}

/// Finds CUDA OOM messages and keeps the numbers of the best one.
#[derive(Debug, Default)]
pub struct CudaOomReader {
    pending: Option<Pending>,
    /// The first complete message's numbers (else the first message at all).
    pub first: Option<CudaOom>,
}

impl CudaOomReader {
    /// Whether a message is waiting for its continuation lines.
    pub fn active(&self) -> bool {
        self.pending.is_some()
    }

    /// Reads one line.
    pub fn feed(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        // A paste can start at "Tried to allocate" with the "CUDA out of
        // memory." before it cut away.
        let message = (line.contains("out of memory") && line.contains("CUDA"))
            || (line.contains("ried to allocate") && line.contains("total capac"));
        if message {
            self.finish(out);
            if CudaOom::parse(line).is_complete() || line.contains("CUDA error:") {
                self.emit(at, line, out);
            } else {
                self.pending = Some(Pending {
                    text: line.trim().to_string(),
                    source: at.source.to_string(),
                    line: at.line,
                    lines_left: CONTINUATION_LINES,
                });
            }
            return;
        }
        let Some(p) = self.pending.as_mut() else {
            return;
        };
        let continues = [
            "GPU",
            "allocated",
            "capac",
            "free",
            "reserved",
            "memory in use",
        ]
        .iter()
        .any(|w| line.contains(w));
        if continues && p.lines_left > 0 && p.text.len() < MAX_TEXT {
            p.text.push(' ');
            p.text.push_str(line.trim());
            p.lines_left -= 1;
            if !CudaOom::parse(&p.text).is_complete() && p.lines_left > 0 {
                return;
            }
        }
        self.finish(out);
    }

    /// Reports a message still waiting, with whatever numbers it has.
    pub fn finish(&mut self, out: &mut Sink<'_>) {
        if let Some(p) = self.pending.take() {
            let at = Location {
                source: &p.source,
                line: p.line,
            };
            self.emit(&at, &p.text, out);
        }
    }

    fn emit(&mut self, at: &Location<'_>, text: &str, out: &mut Sink<'_>) {
        let oom = CudaOom::parse(text);
        let (category, strength) = match oom.classify() {
            Some(c) => (c, Confidence::Certain),
            None => (Category::CudaOomCapacity, Confidence::Likely),
        };
        out.push(
            Evidence::line("cuda_oom", category, strength, at, text)
                .with("cuda_requested_bytes", oom.requested_bytes)
                .with(
                    "cuda_reserved_unallocated_bytes",
                    oom.reserved_unallocated_bytes,
                ),
        );
        if self
            .first
            .as_ref()
            .is_none_or(|old| !old.is_complete() && oom.is_complete())
        {
            self.first = Some(oom);
        }
    }
}
