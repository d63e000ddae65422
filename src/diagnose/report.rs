//! The diagnosis as a report: one serde struct for JSON/YAML, and the text a
//! person reads (verdict, exit status, confidence, evidence as file:line,
//! numbers, fix, what to collect next).

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use super::category::{Category, Confidence};
use super::evidence::Evidence;
use super::exit::ExitStatus;
use super::parse::cuda_oom::CudaOom;
use super::scan::InputStats;
use crate::output::Report;
use crate::units::fmt_bytes;

/// Evidence lines shown in the text form; JSON carries all kept ones.
const TEXT_EVIDENCE: usize = 12;

/// Why a job died, how sure, the proof and the fix.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    /// The root cause.
    pub category: Category,
    /// How sure the verdict is.
    pub confidence: Confidence,
    /// The verdict in one sentence.
    pub verdict: String,
    /// Why this confidence: which line proves it, or what is missing.
    pub confidence_reason: String,
    /// The exit status, decoded (from --exit-code, else from the logs).
    pub exit: Option<ExitStatus>,
    /// Other causes seen that followed from the root (e.g. a killed worker).
    pub chain: Vec<Category>,
    /// Evidence lines: the root's first, then the chain's, then context.
    pub evidence: Vec<Evidence>,
    /// Repeated evidence lines counted but not kept.
    pub evidence_not_shown: u64,
    /// Every number read from the evidence, by name (bytes, pids, ms).
    pub numbers: BTreeMap<String, u64>,
    /// The CUDA OOM message's numbers, when the cause is a CUDA OOM.
    pub cuda_oom: Option<CudaOom>,
    /// Whether expandable segments would have avoided the CUDA OOM, and by how
    /// much (the allocator simulator's estimate from the printed numbers).
    pub expandable_what_if: Option<crate::alloc::ExpandableWhatIf>,
    /// What to change.
    pub fix: Vec<String>,
    /// What to collect when the evidence is not enough.
    pub next_steps: Vec<String>,
    /// A concrete safe configuration from the planner (`--job`), in one line.
    pub recommendation: Option<String>,
    /// The planner's recommended settings (`--job`), as `plan --format json` gives them.
    pub recommended: Option<crate::plan::Recommended>,
    /// The inputs read.
    pub inputs: Vec<InputStats>,
}

impl Report for Diagnosis {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(w, "verdict:    {} ({})", self.category, self.confidence)?;
        writeln!(w, "            {}", self.verdict)?;
        if let Some(e) = &self.exit {
            writeln!(w, "exit:       {}: {}", e.raw, e.meaning)?;
        }
        writeln!(w, "confidence: {}", self.confidence_reason)?;
        if !self.chain.is_empty() {
            let chain: Vec<&str> = self.chain.iter().map(|c| c.as_str()).collect();
            writeln!(w, "chain:      {} -> {}", self.category, chain.join(" -> "))?;
        }
        if !self.evidence.is_empty() {
            writeln!(w, "evidence:")?;
            for ev in self.evidence.iter().take(TEXT_EVIDENCE) {
                writeln!(
                    w,
                    "  {}: [{} {}] {}",
                    ev.location(),
                    ev.category,
                    ev.strength,
                    ev.text
                )?;
            }
            let hidden =
                self.evidence.len().saturating_sub(TEXT_EVIDENCE) as u64 + self.evidence_not_shown;
            if hidden > 0 {
                writeln!(
                    w,
                    "  ... {hidden} more evidence line(s) (--format json lists the kept ones)"
                )?;
            }
        }
        if let Some(c) = &self.cuda_oom {
            writeln!(w, "cuda oom:")?;
            let rows = [
                ("requested", c.requested_bytes),
                ("total", c.total_bytes),
                ("free", c.free_bytes),
                ("process in use", c.process_in_use_bytes),
                ("allocated", c.allocated_bytes),
                ("reserved unallocated", c.reserved_unallocated_bytes),
            ];
            for (name, v) in rows {
                let shown = v.map_or("(not printed)".to_string(), |b| {
                    format!("{} ({b} B)", fmt_bytes(b))
                });
                writeln!(w, "  {name:<21} {shown}")?;
            }
        }
        let plain: Vec<_> = self
            .numbers
            .iter()
            .filter(|(k, _)| !k.starts_with("cuda_"))
            .collect();
        if !plain.is_empty() {
            writeln!(w, "numbers:")?;
            for (k, v) in plain {
                let shown = if k.ends_with("_bytes") {
                    format!("{} ({v} B)", fmt_bytes(*v))
                } else {
                    v.to_string()
                };
                writeln!(w, "  {k:<28} {shown}")?;
            }
        }
        for (title, lines) in [("fix", &self.fix), ("next", &self.next_steps)] {
            for (i, line) in lines.iter().enumerate() {
                let head = if i == 0 {
                    format!("{title}:")
                } else {
                    String::new()
                };
                writeln!(w, "{head:<11} - {line}")?;
            }
        }
        if let Some(r) = &self.recommendation {
            writeln!(w, "recommend:  {r}")?;
        }
        Ok(())
    }

    fn annotations(&self) -> Vec<crate::output::Annotation> {
        use crate::output::Level;
        let level = match self.category {
            Category::Success => Level::Notice,
            Category::Unknown => Level::Warning,
            _ => Level::Error,
        };
        vec![crate::output::Annotation::new(
            level,
            format!("{} ({}): {}", self.category, self.confidence, self.verdict),
        )]
    }
}
