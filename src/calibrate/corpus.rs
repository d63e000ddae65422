//! The real-run corpus (benches/pyg): rows recorded from real PyTorch + PyG
//! NeighborLoader runs in a memory cgroup, each with the job spec it
//! corresponds to and the peaks measured. This module plans every row and
//! compares: the accuracy test, docs/accuracy.md's table and `calibrate`'s check
//! that a calibration file keeps real jobs inside the bounds all use it.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::estimate::{Coefficients, estimate};
use crate::spec::{Accounting, Job, JobSpec};

/// The corpus as committed, embedded so `calibrate` can check against it.
pub const EMBEDDED: &str = include_str!("../../tests/fixtures/pyg/corpus.jsonl");

/// Peaks of one run or phase, bytes.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Peaks {
    /// Anonymous + shared memory of the cgroup: what the OOM killer weighs.
    pub anon_shmem: u64,
    /// The cgroup's whole usage (page cache included).
    pub cgroup: u64,
    /// RSS summed over the process tree (Slurm's jobacct_gather without UsePss).
    pub rss_sum: u64,
    /// PSS summed over the process tree.
    pub pss_sum: u64,
}

#[derive(Debug, Deserialize)]
struct Measured {
    peak: Peaks,
    /// Per-phase peaks (runtime, load, build_loaders, train, evaluate).
    #[serde(default)]
    phases: std::collections::BTreeMap<String, Peaks>,
}

#[derive(Debug, Deserialize)]
struct Row {
    id: String,
    command: String,
    job: serde_json::Value,
    measured: Measured,
    #[serde(default)]
    smallest_limit: Option<u64>,
}

/// One row planned in one accounting mode.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Compared {
    /// The case id.
    pub id: String,
    /// The command that reproduces the run.
    pub command: String,
    /// `cgroup` or `rss_sum`.
    pub accounting: &'static str,
    /// The measured peak, bytes.
    pub measured: u64,
    /// headroom's predicted peak, bytes.
    pub predicted: u64,
    /// The phase headroom puts the peak in.
    pub phase: &'static str,
    /// Each phase headroom predicts that the run also measured:
    /// (phase, measured, predicted), bytes in this accounting mode.
    pub phases: Vec<(&'static str, u64, u64)>,
    /// The smallest memory-cgroup limit the run survived (bisected), when measured.
    pub smallest_limit: Option<u64>,
}

impl Compared {
    /// (predicted − measured) / measured.
    pub fn error(&self) -> f64 {
        (self.predicted as f64 - self.measured as f64) / self.measured as f64
    }
}

/// Plans every row of `text` (JSONL) with `coeffs` in both accounting modes.
pub fn compare(text: &str, coeffs: &Coefficients) -> Result<Vec<Compared>> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row: Row = serde_json::from_str(line)
            .map_err(|e| Error::bad(format!("corpus line {}: {e}", i + 1)))?;
        let spec: JobSpec = serde_json::from_value(row.job)
            .map_err(|e| Error::bad(format!("corpus line {} ({}): job: {e}", i + 1, row.id)))?;
        for (mode, name, measured) in [
            (Accounting::Cgroup, "cgroup", row.measured.peak.anon_shmem),
            (Accounting::RssSum, "rss_sum", row.measured.peak.rss_sum),
        ] {
            let mut job = Job::from_spec(&spec)?;
            job.accounting = mode;
            let (coeffs, _) = coeffs.for_job(&job);
            let est = estimate(&job, &job.settings, &coeffs);
            // The recorded cgroup peak is anon + shmem, which holds no
            // kernel memory: the workers' page tables the plan adds for the
            // limit (page_tables.rs) are left out of the comparison.
            let bytes = |p: &crate::estimate::PhaseEstimate| {
                if mode == Accounting::Cgroup {
                    p.host_bytes.saturating_sub(p.kernel_bytes)
                } else {
                    p.host_bytes
                }
            };
            let top = est
                .phases
                .iter()
                .max_by_key(|p| bytes(p))
                .ok_or_else(|| Error::bad(format!("{}: no phases", row.id)))?;
            out.push(Compared {
                id: row.id.clone(),
                command: row.command.clone(),
                accounting: name,
                measured,
                predicted: bytes(top),
                phase: top.phase.as_str(),
                phases: est
                    .phases
                    .iter()
                    .filter_map(|p| {
                        let m = row.measured.phases.get(p.phase.as_str())?;
                        let m = if name == "cgroup" {
                            m.anon_shmem
                        } else {
                            m.rss_sum
                        };
                        Some((p.phase.as_str(), m, bytes(p)))
                    })
                    .collect(),
                smallest_limit: row.smallest_limit,
            });
        }
    }
    Ok(out)
}

/// Median and largest |error|, and how many rows are predicted more than
/// `under` below their measurement, over the rows of one accounting mode.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Accuracy {
    /// Rows compared.
    pub rows: usize,
    /// Median |error|.
    pub median_abs: f64,
    /// Largest |error|.
    pub max_abs: f64,
    /// Rows predicted more than 5 % below the measured peak.
    pub under_5pct: usize,
}

/// Accuracy of the rows compared in `accounting`.
pub fn accuracy(rows: &[Compared], accounting: &str) -> Accuracy {
    let mut e: Vec<f64> = rows
        .iter()
        .filter(|r| r.accounting == accounting)
        .map(Compared::error)
        .collect();
    let under = e.iter().filter(|&&x| x < -0.05).count();
    let mut abs: Vec<f64> = e.iter_mut().map(|x| x.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median = match abs.len() {
        0 => 0.0,
        n if n % 2 == 1 => abs[n / 2],
        n => 0.5 * (abs[n / 2 - 1] + abs[n / 2]),
    };
    Accuracy {
        rows: abs.len(),
        median_abs: median,
        max_abs: abs.last().copied().unwrap_or(0.0),
        under_5pct: under,
    }
}
