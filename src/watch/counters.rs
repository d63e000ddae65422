//! Which reading an attached watch's figures rest on. Slurm removes a job's
//! cgroup as soon as the job ends, often before headroom's last read: the
//! kernel's peak counter (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`)
//! and oom_kill counter are then the last values read while it existed, and
//! the summary says so. A cgroup OOM verdict is "certain" only when the
//! oom_kill counter was seen to rise; resting on the kernel log alone it is
//! "likely", and a peak counter at the limit with no kill seen is "possible".

use super::finish::CounterReads;
use super::verdict::Verdict;
use crate::collect::cgroup::{CgroupMemory, CgroupReader};
use crate::diagnose::category::{Category, Confidence};
use crate::units::fmt_bytes;

/// The peak and the sources of the peak and the OOM count, in words.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings {
    /// The kernel's peak counter, bytes.
    pub peak: Option<u64>,
    /// Which reading the peak is.
    pub peak_source: Option<String>,
    /// Which reading the oom_kill count is.
    pub oom_source: Option<String>,
}

impl Readings {
    /// From the end's read of the cgroup and the reads during the run
    /// (`None` for a job headroom started: its cgroup stays until the end).
    pub fn new(
        cg: Option<&CgroupReader>,
        end: Option<&CgroupMemory>,
        during: Option<&CounterReads>,
        interval_ms: u64,
    ) -> Self {
        let Some(cg) = cg else {
            return Readings::default();
        };
        let file = cg.peak_file();
        let at_end = end.and_then(|m| m.peak);
        let seen = during.and_then(|d| d.peak);
        let (peak, peak_source) = match (at_end, seen) {
            (Some(p), s) => (
                Some(s.map_or(p, |(q, _)| p.max(q))),
                format!("the kernel's {file}, read at the end"),
            ),
            (None, Some((p, t))) => (
                Some(p),
                format!(
                    "the kernel's {file}, last read at {t:.1} s: Slurm removed the cgroup before \
                     the end, so a rise after that read is not in it"
                ),
            ),
            (None, None) => (
                None,
                format!(
                    "no {file} (memory.peak needs Linux 5.19): the peak is headroom's samples \
                     every {interval_ms} ms, which miss growth between them"
                ),
            ),
        };
        let oom_source = match during {
            Some(CounterReads {
                oom_read_at: Some(t),
                ..
            }) => format!("last read at {t:.1} s, before Slurm removed the cgroup"),
            _ => "read at the end".to_string(),
        };
        Readings {
            peak,
            peak_source: Some(peak_source),
            oom_source: Some(oom_source),
        }
    }

    /// The verdict of an attached job, held to what its readings prove.
    pub fn judge(&self, why: Verdict, oom_kill_delta: Option<u64>, limit: Option<u64>) -> Verdict {
        let oom = self.oom_source.as_deref().unwrap_or("not read");
        let proven = oom_kill_delta.is_some_and(|n| n > 0);
        if why.category == Category::HostOomCgroup
            && why.confidence == Confidence::Certain
            && !proven
        {
            return Verdict {
                confidence: Confidence::Likely,
                reason: format!(
                    "{}; this rests on the kernel log: the cgroup's oom_kill counter did not show \
                     the kill (counter {oom})",
                    why.reason
                ),
                ..why
            };
        }
        if why.category == Category::Unknown
            && let (Some(peak), Some(limit)) = (self.peak, limit)
            && peak >= limit - limit / 100
        {
            return Verdict {
                category: Category::HostOomCgroup,
                confidence: Confidence::Possible,
                reason: format!(
                    "the kernel's peak counter reached the limit ({} of {}) but no kill was seen \
                     (oom_kill counter {oom}, no kernel log line about the job): a cgroup OOM \
                     kill is possible, or page cache filled the cgroup and was reclaimed",
                    fmt_bytes(peak),
                    fmt_bytes(limit)
                ),
            };
        }
        why
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oom_from_log() -> Verdict {
        Verdict {
            category: Category::HostOomCgroup,
            confidence: Confidence::Certain,
            reason: "Memory cgroup out of memory: Killed process 4242".into(),
        }
    }

    #[test]
    fn a_kill_seen_only_in_the_kernel_log_is_likely_and_says_so() {
        let gone = Readings {
            oom_source: Some("last read at 7.2 s, before Slurm removed the cgroup".into()),
            ..Readings::default()
        };
        let v = gone.judge(oom_from_log(), Some(0), Some(300 << 20));
        assert_eq!(v.confidence, Confidence::Likely);
        assert!(v.reason.contains("rests on the kernel log"), "{}", v.reason);
        assert!(v.reason.contains("last read at 7.2 s"), "{}", v.reason);
        let counted = gone.judge(oom_from_log(), Some(1), Some(300 << 20));
        assert_eq!(counted.confidence, Confidence::Certain);
    }

    #[test]
    fn a_peak_at_the_limit_without_a_kill_is_only_possible() {
        let r = Readings {
            peak: Some(314_572_800),
            oom_source: Some("read at the end".into()),
            ..Readings::default()
        };
        let unknown = Verdict {
            category: Category::Unknown,
            confidence: Confidence::Possible,
            reason: "no evidence".into(),
        };
        let v = r.judge(unknown.clone(), Some(0), Some(314_572_800));
        assert_eq!(v.category, Category::HostOomCgroup);
        assert_eq!(v.confidence, Confidence::Possible);
        assert!(v.reason.contains("300 MiB of 300 MiB"), "{}", v.reason);
        let low = Readings {
            peak: Some(200 << 20),
            ..r
        };
        assert_eq!(
            low.judge(unknown, Some(0), Some(300 << 20)).category,
            Category::Unknown
        );
    }
}
