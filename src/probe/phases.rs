//! Per-phase peaks of a probed run: the timeline's samples laid over the
//! phase spans the probe marked, and headroom's prediction for the observed
//! job beside each, with the error. The measure is what a memory cgroup
//! charges and the OOM killer weighs: anonymous plus shared memory, each page
//! once (the job's own cgroup when it has one, else the tree's PSS less its
//! file-backed part).

use serde::{Deserialize, Serialize};

use super::observed::Span;
use crate::estimate::Estimate;

/// The timeline fields this reads (a row of `watch`'s JSONL timeline).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Row {
    /// Seconds since the job started.
    pub t_s: f64,
    /// PSS summed over the tree.
    #[serde(default)]
    pub pss_sum_bytes: u64,
    /// Its file-backed part.
    #[serde(default)]
    pub pss_file_sum_bytes: u64,
    /// The cgroup's anonymous memory.
    #[serde(default)]
    pub cgroup_anon_bytes: Option<u64>,
    /// The cgroup's shmem.
    #[serde(default)]
    pub cgroup_shmem_bytes: Option<u64>,
}

/// Which figure of a row is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// The job's own cgroup: anon + shmem.
    CgroupAnonShmem,
    /// The tree's PSS less file pages, where no cgroup of its own could be
    /// made. Approximate: a process whose smaps is carried between reads
    /// (watch's CPU budget) keeps the file share of its last read.
    PssAnonShmem,
}

impl Measure {
    /// The figure of `r`.
    pub fn of(self, r: &Row) -> Option<u64> {
        match self {
            Measure::CgroupAnonShmem => Some(r.cgroup_anon_bytes? + r.cgroup_shmem_bytes?),
            Measure::PssAnonShmem => Some(r.pss_sum_bytes.saturating_sub(r.pss_file_sum_bytes)),
        }
    }
}

/// One phase: predicted against measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseRow {
    /// `load`, `build_loaders`, `train`, `evaluate`.
    pub phase: String,
    /// headroom's prediction for the observed job, bytes.
    pub predicted_bytes: u64,
    /// The highest sample inside the phase's spans, bytes (none: no sample fell in it).
    pub measured_bytes: Option<u64>,
    /// When, seconds after the job started.
    pub measured_at_s: Option<f64>,
    /// (predicted − measured) / measured.
    pub rel_error: Option<f64>,
}

/// The phase of a moment `t_s` after a job that started at `started` (epoch
/// seconds); moments before the first span count as load, after the last as
/// its phase.
pub fn phase_at(spans: &[Span], started: f64, t_s: f64) -> Option<&'static str> {
    let t = started + t_s;
    let first = spans.first()?;
    if t < first.from {
        return Some(first.phase);
    }
    spans
        .iter()
        .find(|s| t >= s.from && t < s.to)
        .or(spans.last().filter(|s| t >= s.to))
        .map(|s| s.phase)
}

/// The table: every phase the estimate has, with the measured peak of the
/// samples inside it.
pub fn table(
    est: &Estimate,
    rows: &[Row],
    spans: &[Span],
    started: f64,
    measure: Measure,
) -> Vec<PhaseRow> {
    est.phases
        .iter()
        .map(|p| {
            let name = p.phase.as_str();
            let peak = rows
                .iter()
                .filter(|r| phase_at(spans, started, r.t_s) == Some(name))
                .filter_map(|r| Some((measure.of(r)?, r.t_s)))
                .max_by_key(|&(b, _)| b);
            PhaseRow {
                phase: name.to_string(),
                predicted_bytes: p.host_bytes,
                measured_bytes: peak.map(|x| x.0),
                measured_at_s: peak.map(|x| x.1),
                rel_error: peak.map(|(m, _)| (p.host_bytes as f64 - m as f64) / m.max(1) as f64),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans() -> Vec<Span> {
        vec![
            Span {
                phase: "load",
                from: 100.0,
                to: 110.0,
            },
            Span {
                phase: "build_loaders",
                from: 110.0,
                to: 112.0,
            },
            Span {
                phase: "train",
                from: 112.0,
                to: 120.0,
            },
            Span {
                phase: "evaluate",
                from: 120.0,
                to: 125.0,
            },
        ]
    }

    #[test]
    fn moments_fall_in_their_span_and_the_ends_in_the_outer_ones() {
        let s = spans();
        // The job started at 98: the interpreter's start-up is load.
        assert_eq!(phase_at(&s, 98.0, 0.5), Some("load"));
        assert_eq!(phase_at(&s, 98.0, 12.5), Some("build_loaders"));
        assert_eq!(phase_at(&s, 98.0, 14.0), Some("train"));
        assert_eq!(phase_at(&s, 98.0, 22.0), Some("evaluate"));
        // After the last mark (the interpreter's exit): still the last phase.
        assert_eq!(phase_at(&s, 98.0, 40.0), Some("evaluate"));
        assert_eq!(phase_at(&[], 98.0, 1.0), None);
    }

    #[test]
    fn the_cgroup_measure_needs_both_readings_and_pss_drops_file_pages() {
        let r = Row {
            t_s: 1.0,
            pss_sum_bytes: 900,
            pss_file_sum_bytes: 300,
            cgroup_anon_bytes: Some(500),
            cgroup_shmem_bytes: None,
        };
        assert_eq!(Measure::CgroupAnonShmem.of(&r), None);
        assert_eq!(Measure::PssAnonShmem.of(&r), Some(600));
    }
}
