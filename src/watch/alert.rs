//! Warning before the kill: when the job's memory passes a share of its
//! limit (80% and 90% unless `--alert-at` says otherwise), one line on
//! stderr with the growth rate and the projected time to the limit, and the
//! user's `--alert-cmd` run with the same figures in `HEADROOM_*`
//! environment variables.
//!
//! The figure held against the limit is what the OOM killer cannot take
//! back: the cgroup's anonymous plus shared memory when its memory.stat has
//! been read, else its usage (which also counts page cache the kernel would
//! reclaim first, so it warns early rather than late). [`Alerts`] is pure:
//! it takes (time, bytes, limit) and says which thresholds were crossed;
//! the caller prints and runs. A threshold fires once on the way up and is
//! re-armed when the figure falls [`REARM_POINTS`] below it again.

use std::collections::VecDeque;

/// Points below a threshold the figure must fall before it can fire again.
pub const REARM_POINTS: f64 = 5.0;
/// The growth rate is the least-squares slope over this many seconds.
pub const RATE_WINDOW_S: f64 = 30.0;

/// One crossing, with the figures the line and the command get.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Alert {
    /// The threshold crossed, percent of the limit.
    pub threshold_pct: f64,
    /// Seconds since the watch began.
    pub t_s: f64,
    /// The figure, bytes.
    pub used_bytes: u64,
    /// The limit, bytes.
    pub limit_bytes: u64,
    /// Bytes per second over the last [`RATE_WINDOW_S`] (negative: shrinking).
    pub rate_bytes_per_s: f64,
    /// Seconds until the limit at that rate; `None` when not growing.
    pub eta_s: Option<f64>,
}

impl Alert {
    /// The figure as a percentage of the limit.
    pub fn used_pct(&self) -> f64 {
        100.0 * self.used_bytes as f64 / self.limit_bytes.max(1) as f64
    }

    /// The line on stderr.
    pub fn line(&self, measure: &str) -> String {
        use crate::units::fmt_bytes;
        let eta = match self.eta_s {
            Some(s) => format!("the limit in about {}", fmt_secs(s)),
            None => "not growing".to_string(),
        };
        format!(
            "[headroom] ALERT {:.0}%: {measure} {} of the {} limit ({:.1}%) at {:.1}s, growing {}/s, {eta}",
            self.threshold_pct,
            fmt_bytes(self.used_bytes),
            fmt_bytes(self.limit_bytes),
            self.used_pct(),
            self.t_s,
            fmt_bytes(self.rate_bytes_per_s.max(0.0) as u64),
        )
    }

    /// The environment `--alert-cmd` runs with.
    pub fn env(&self, measure: &str, target: &str) -> Vec<(String, String)> {
        let eta = self.eta_s.map(|s| format!("{s:.0}")).unwrap_or_default();
        [
            (
                "HEADROOM_THRESHOLD_PCT",
                format!("{:.0}", self.threshold_pct),
            ),
            ("HEADROOM_USED_BYTES", self.used_bytes.to_string()),
            ("HEADROOM_LIMIT_BYTES", self.limit_bytes.to_string()),
            ("HEADROOM_USED_PCT", format!("{:.1}", self.used_pct())),
            (
                "HEADROOM_RATE_BYTES_PER_S",
                format!("{:.0}", self.rate_bytes_per_s),
            ),
            ("HEADROOM_ETA_S", eta),
            ("HEADROOM_T_S", format!("{:.1}", self.t_s)),
            ("HEADROOM_MEASURE", measure.to_string()),
            ("HEADROOM_TARGET", target.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// `90 s`, `12 min`, `3.5 h`.
pub fn fmt_secs(s: f64) -> String {
    match s {
        _ if s < 120.0 => format!("{s:.0} s"),
        _ if s < 7200.0 => format!("{:.0} min", s / 60.0),
        _ => format!("{:.1} h", s / 3600.0),
    }
}

/// Threshold state and the recent history the rate is fitted to.
#[derive(Debug, Clone)]
pub struct Alerts {
    thresholds: Vec<(f64, bool)>,
    recent: VecDeque<(f64, f64)>,
}

impl Alerts {
    /// Alerts at these percentages of the limit.
    pub fn new(thresholds_pct: &[f64]) -> Self {
        let mut t: Vec<(f64, bool)> = thresholds_pct.iter().map(|&p| (p, true)).collect();
        t.sort_by(|a, b| a.0.total_cmp(&b.0));
        t.dedup_by(|a, b| a.0 == b.0);
        Alerts {
            thresholds: t,
            recent: VecDeque::new(),
        }
    }

    /// Takes one reading; returns the thresholds it crossed upwards.
    pub fn observe(&mut self, t_s: f64, used: u64, limit: u64) -> Vec<Alert> {
        self.recent.push_back((t_s, used as f64));
        while self
            .recent
            .front()
            .is_some_and(|&(t, _)| t < t_s - RATE_WINDOW_S)
        {
            self.recent.pop_front();
        }
        let pct = 100.0 * used as f64 / limit.max(1) as f64;
        let rate = slope(&self.recent);
        let mut fired = Vec::new();
        for (threshold, armed) in &mut self.thresholds {
            if *armed && pct >= *threshold {
                *armed = false;
                let eta_s = (rate > 0.0).then(|| (limit.saturating_sub(used)) as f64 / rate);
                fired.push(Alert {
                    threshold_pct: *threshold,
                    t_s,
                    used_bytes: used,
                    limit_bytes: limit,
                    rate_bytes_per_s: rate,
                    eta_s,
                });
            } else if !*armed && pct < *threshold - REARM_POINTS {
                *armed = true;
            }
        }
        fired
    }
}

/// Least-squares slope of (t, y) points; 0 with fewer than two.
fn slope(points: &VecDeque<(f64, f64)>) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mt = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for &(t, y) in points {
        num += (t - mt) * (y - my);
        den += (t - mt) * (t - mt);
    }
    if den > 0.0 { num / den } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn each_threshold_fires_once_with_rate_and_eta_then_rearms() {
        let mut a = Alerts::new(&[90.0, 80.0]);
        let limit = 1000 * MIB;
        // 10 MiB/s from 700 MiB: 80% at t=10, 90% at t=20.
        let mut fired = Vec::new();
        for i in 0..=25 {
            fired.extend(a.observe(i as f64, 700 * MIB + i * 10 * MIB, limit));
        }
        assert_eq!(fired.len(), 2, "{fired:?}");
        assert_eq!(fired[0].threshold_pct, 80.0);
        assert_eq!(fired[0].t_s, 10.0);
        assert!((fired[0].rate_bytes_per_s - 10.0 * MIB as f64).abs() < 1.0);
        // 200 MiB left at 10 MiB/s.
        assert!((fired[0].eta_s.unwrap() - 20.0).abs() < 1e-6);
        assert_eq!(fired[1].threshold_pct, 90.0);
        assert!((fired[1].eta_s.unwrap() - 10.0).abs() < 1e-6);
        // Staying above fires nothing; falling to 70% re-arms 80 (not 90's
        // hysteresis: 70 < 85 re-arms it too); rising again fires both.
        assert!(a.observe(26.0, 950 * MIB, limit).is_empty());
        assert!(a.observe(27.0, 700 * MIB, limit).is_empty());
        let again = a.observe(28.0, 990 * MIB, limit);
        assert_eq!(again.len(), 2);
        let env = again[1].env("cgroup anon+shmem", "pid 7");
        assert!(env.contains(&("HEADROOM_THRESHOLD_PCT".into(), "90".into())));
        assert!(env.contains(&("HEADROOM_USED_PCT".into(), "99.0".into())));
    }

    #[test]
    fn a_flat_figure_has_no_eta() {
        let mut a = Alerts::new(&[50.0]);
        a.observe(0.0, 60, 100);
        let f = a.observe(1.0, 60, 100);
        assert!(f.is_empty());
        let mut b = Alerts::new(&[50.0]);
        let f = b.observe(0.0, 60, 100);
        assert_eq!(f[0].eta_s, None);
        assert!(
            f[0].line("usage").contains("not growing"),
            "{}",
            f[0].line("usage")
        );
    }
}
