//! Keeping a days-long timeline small: a three-day job at 10 Hz is 2.6
//! million samples, about a gigabyte of CSV. Every sample is written for the
//! first `--full-resolution-for` (10 min); after that one row per
//! `--keep-every` (10 s) stands for the interval, each of its figures the
//! interval's exact maximum ([`merge_max`]), with `span_s` its length.
//! Full resolution comes back where it matters:
//! - around events (the process count changes, an OOM kill is counted, an
//!   alert fires): the last [`BEFORE_EVENT`] samples before it and
//!   [`EVENT_WINDOW_S`] after;
//! - at a new peak: a sample that tops the highest figure written so far by
//!   more than [`PEAK_STEP`] is written on its own, so a slow leak keeps its
//!   shape (about 70 rows per doubling).
//!
//! Bounded: at most [`BEFORE_EVENT`] samples and one merged row are held.
//! Rows come out in time order. A kill of headroom itself loses at most the
//! interval being merged (the job's kill does not: headroom keeps its own
//! oom_score_adj and writes on).

use std::collections::VecDeque;

use super::sample::Sample;
use super::thin::merge_max;

/// Samples kept at full resolution before an event.
pub const BEFORE_EVENT: usize = 50;
/// Seconds of full resolution after an event.
pub const EVENT_WINDOW_S: f64 = 5.0;
/// A new peak is written on its own when it tops the last one by this share.
pub const PEAK_STEP: f64 = 0.01;

/// The figure a peak is judged by: what the cgroup charges, else PSS.
fn level(s: &Sample) -> u64 {
    s.cgroup_usage_bytes.unwrap_or(0).max(s.pss_sum_bytes)
}

/// Turns samples into the rows to write.
#[derive(Debug)]
pub struct Compressor {
    full_for_s: f64,
    keep_every_s: f64,
    merged: Option<Sample>,
    recent: VecDeque<Sample>,
    full_until: f64,
    peak_written: u64,
    last: Option<(u32, Option<u64>)>,
}

impl Compressor {
    /// Full resolution for `full_for_s` seconds, then rows per `keep_every_s`.
    pub fn new(full_for_s: f64, keep_every_s: f64) -> Self {
        Compressor {
            full_for_s,
            keep_every_s,
            merged: None,
            recent: VecDeque::with_capacity(BEFORE_EVENT),
            full_until: f64::NEG_INFINITY,
            peak_written: 0,
            last: None,
        }
    }

    /// Takes one sample (`event`: the caller saw something, an alert);
    /// returns the rows to write now, oldest first.
    pub fn push(&mut self, s: Sample, event: bool) -> Vec<Sample> {
        let mark = (s.processes, s.cgroup_oom_kill);
        let changed = self.last.is_some_and(|l| l != mark);
        self.last = Some(mark);
        let lvl = level(&s);
        let peak = lvl as f64 > self.peak_written as f64 * (1.0 + PEAK_STEP);
        if s.t_s < self.full_for_s {
            self.peak_written = self.peak_written.max(lvl);
            return vec![s];
        }
        let mut out = Vec::new();
        if event || changed {
            // What led up to it, at full resolution.
            out.extend(self.merged.take());
            out.extend(self.recent.drain(..));
            self.full_until = s.t_s + EVENT_WINDOW_S;
        }
        if s.t_s <= self.full_until || peak {
            out.extend(self.take_pending());
            self.peak_written = self.peak_written.max(lvl);
            out.push(s);
            return out;
        }
        let start = self
            .merged
            .as_ref()
            .or(self.recent.front())
            .map_or(s.t_s, |m| m.t_s);
        self.recent.push_back(s);
        if self.recent.len() > BEFORE_EVENT
            && let Some(old) = self.recent.pop_front()
        {
            self.merged = Some(match self.merged.take() {
                Some(m) => merge_max(&m, &old),
                None => old,
            });
        }
        if self.recent.back().map_or(0.0, |b| b.t_s) - start >= self.keep_every_s {
            out.extend(self.take_pending());
        }
        out
    }

    /// Everything held, as one row (the end of the run, or before a peak).
    pub fn take_pending(&mut self) -> Option<Sample> {
        let mut row = self.merged.take();
        for s in self.recent.drain(..) {
            row = Some(match row {
                Some(m) => merge_max(&m, &s),
                None => s,
            });
        }
        row
    }
}

#[cfg(test)]
#[path = "compress_tests.rs"]
mod tests;
