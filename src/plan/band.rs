//! How far the real host peak may be from the model's: the spread of the
//! model's error on random real runs it was not fitted to (issue 22's random
//! sets, tests/fixtures/pyg/draws), turned into a range around a plan's
//! predicted peak, and whether a budget lies inside that range (the job may
//! or may not fit: plan says so and gives both answers).
//!
//! The figures are measured, not chosen: `tests/cli/corpus.rs` recomputes
//! them from the recorded runs with the model as it is and fails when they
//! differ, so a model change that moves the errors moves the band with it.

use serde::Serialize;

use crate::spec::Accounting;

/// The model's signed error, (predicted − real) / real, over random real runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HeldOut {
    /// Runs the spread was measured on.
    pub runs: usize,
    /// 10th percentile of the error (nearest rank).
    pub p10: f64,
    /// 90th percentile of the error (nearest rank).
    pub p90: f64,
    /// The most negative error: the worst under-prediction seen.
    pub worst_under: f64,
}

/// The recorded sets the spread comes from (tests/fixtures/pyg).
pub const SETS: &str = "sealed-2611251 and dev-2611252";

/// Under the cgroup's accounting (anonymous + shared memory).
pub const CGROUP: HeldOut = HeldOut {
    runs: 48,
    p10: 0.0,
    p90: 0.344,
    worst_under: -0.111,
};

/// Under Slurm's RSS sum over the process tree.
pub const RSS_SUM: HeldOut = HeldOut {
    runs: 48,
    p10: 0.023,
    p90: 0.269,
    worst_under: -0.118,
};

/// The spread under an accounting mode.
pub fn held_out(accounting: Accounting) -> HeldOut {
    match accounting {
        Accounting::RssSum => RSS_SUM,
        _ => CGROUP,
    }
}

/// The range the real host peak is likely in, for a predicted peak.
#[derive(Debug, Clone, Serialize)]
pub struct HostBand {
    /// Lower end: the prediction less the 90th-percentile over-prediction, bytes.
    pub likely_low_bytes: u64,
    /// Upper end: the prediction plus the 10th-percentile under-prediction, bytes.
    pub likely_high_bytes: u64,
    /// The prediction as far off as the worst under-prediction seen, bytes.
    pub worst_high_bytes: u64,
    /// Random real runs behind the figures.
    pub runs: usize,
    /// Where they are recorded.
    pub sets: &'static str,
    /// Whether the host limit lies between the lower end and the worst case:
    /// the job may fit or not, whatever the verdict at the prediction.
    pub straddles: bool,
}

/// The band around `predicted` (bytes), judged against `limit` when given.
pub fn host_band(predicted: u64, accounting: Accounting, limit: Option<u64>) -> HostBand {
    let h = held_out(accounting);
    let real = |e: f64| (predicted as f64 / (1.0 + e)) as u64;
    let (low, worst) = (real(h.p90), real(h.worst_under));
    HostBand {
        likely_low_bytes: low,
        likely_high_bytes: real(h.p10),
        worst_high_bytes: worst,
        runs: h.runs,
        sets: SETS,
        straddles: limit.is_some_and(|l| low <= l && l < worst),
    }
}

/// The host limit under which a search at the job's margin keeps the worst
/// case inside `limit`, when the worst under-prediction exceeds the margin.
pub fn cautious_limit(limit: u64, margin: f64, accounting: Accounting) -> Option<u64> {
    let w = -held_out(accounting).worst_under;
    (w > margin).then(|| (limit as f64 * (1.0 - w) / (1.0 - margin)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_band_brackets_the_prediction_and_the_worst_case_lies_above_it() {
        let b = host_band(10 << 30, Accounting::Cgroup, Some(11 << 30));
        assert!(b.likely_low_bytes < 10 << 30);
        assert!(b.likely_high_bytes >= 10 << 30);
        assert!(b.worst_high_bytes > b.likely_high_bytes);
        // 11 GiB is above the prediction but below the worst case.
        assert!(b.straddles);
        let far = host_band(10 << 30, Accounting::Cgroup, Some(40 << 30));
        assert!(!far.straddles);
        assert!(!host_band(10 << 30, Accounting::Cgroup, Some(1 << 30)).straddles);
        assert!(!host_band(10 << 30, Accounting::Cgroup, None).straddles);
    }

    #[test]
    fn a_cautious_search_keeps_the_worst_case_inside_the_limit() {
        let limit = 100u64 << 30;
        let l = cautious_limit(limit, 0.1, Accounting::Cgroup).unwrap();
        // What fits l with the margin, grown by the worst under-prediction, fits limit.
        let fits = (l as f64 * 0.9) as u64;
        let worst = host_band(fits, Accounting::Cgroup, None).worst_high_bytes;
        assert!(worst <= limit, "{worst} > {limit}");
        assert!(worst as f64 > limit as f64 * 0.99);
        // A margin wider than the worst error needs no cautious search.
        assert_eq!(cautious_limit(limit, 0.5, Accounting::Cgroup), None);
    }
}
