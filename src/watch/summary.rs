//! The end-of-run summary: the peak of every measure (when, which process,
//! how many workers were alive), how much of summed RSS was shared pages,
//! how the job ended and why. Serialized for `--summary FILE`, drawn as a
//! table for people.

use std::io::Write;

use serde::Serialize;

use super::sample::Sample;
pub use super::summary_roles::RoleMemory;
use crate::diagnose::category::{Category, Confidence};
use crate::output::Report;
use crate::units::fmt_bytes;

/// The highest value one measure reached.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Peak {
    /// What was measured (`pss_sum`, `cgroup_usage`, ...).
    pub measure: &'static str,
    /// The highest value, bytes.
    pub bytes: u64,
    /// Seconds after the start when it was first reached.
    pub at_s: f64,
    /// The process with the largest PSS at that moment.
    pub top_pid: Option<u32>,
    /// Its command name.
    pub top_comm: Option<String>,
    /// Live processes in the tree at that moment.
    pub processes: u32,
}

/// Running maxima over the samples.
#[derive(Debug, Clone, Default)]
pub struct Peaks {
    /// One entry per measure, in display order.
    pub peaks: Vec<Peak>,
    /// Most live processes seen at once.
    pub max_processes: u32,
    /// PSS sum over RSS sum at the RSS-sum peak (1 = nothing shared).
    pub pss_over_rss_at_peak: Option<f64>,
    /// The sample at the PSS-sum peak (who held the memory then).
    pub at_pss_peak: Option<Sample>,
    /// Most /dev/shm the loader workers held open at once.
    pub workers_dev_shm: Option<u64>,
}

impl Peaks {
    /// Folds one sample in.
    pub fn update(&mut self, s: &Sample) {
        self.max_processes = self.max_processes.max(s.processes);
        self.workers_dev_shm = self.workers_dev_shm.max(s.workers_dev_shm_bytes);
        let measures: [(&'static str, Option<u64>); 6] = [
            ("rss_sum", (s.processes > 0).then_some(s.rss_sum_bytes)),
            ("pss_sum", (s.processes > 0).then_some(s.pss_sum_bytes)),
            ("uss_sum", (s.processes > 0).then_some(s.uss_sum_bytes)),
            (
                "pss_shmem_sum",
                (s.processes > 0).then_some(s.pss_shmem_sum_bytes),
            ),
            ("cgroup_usage", s.cgroup_usage_bytes),
            ("gpu_used", s.gpu_used_bytes),
        ];
        for (measure, value) in measures {
            let Some(bytes) = value else { continue };
            let new = Peak {
                measure,
                bytes,
                at_s: s.t_s,
                top_pid: s.top_pid,
                top_comm: s.top_comm.clone(),
                processes: s.processes,
            };
            let slot = self.peaks.iter_mut().find(|p| p.measure == measure);
            if slot.as_ref().is_some_and(|p| p.bytes >= bytes) {
                continue;
            }
            if measure == "pss_sum" {
                self.at_pss_peak = Some(s.clone());
            }
            if measure == "rss_sum" && bytes > 0 {
                self.pss_over_rss_at_peak = Some(s.pss_sum_bytes as f64 / bytes as f64);
            }
            match slot {
                Some(p) => *p = new,
                None => self.peaks.push(new),
            }
        }
    }

    /// The peak of one measure, bytes.
    pub fn get(&self, measure: &str) -> Option<u64> {
        self.peaks
            .iter()
            .find(|p| p.measure == measure)
            .map(|p| p.bytes)
    }
}

/// What `headroom watch` reports at the end (and writes with `--summary`).
#[derive(Debug, Clone, Serialize)]
pub struct WatchSummary {
    /// The command that was run (empty when attached).
    pub command: Vec<String>,
    /// What an attached watch watched (`pid 4242`, `cgroup DIR`, `Slurm job 7`).
    pub attached_to: Option<String>,
    /// headroom's own exit code: the job's, or 128 + signal.
    pub exit_code: i32,
    /// The exit status in words.
    pub exit_status: String,
    /// The signal that killed the main process, if one did.
    pub signal: Option<i32>,
    /// Why it ended, in diagnose's vocabulary.
    pub category: Category,
    /// How sure.
    pub confidence: Confidence,
    /// The evidence in one line.
    pub reason: String,
    /// Wall time of the job, seconds.
    pub duration_s: f64,
    /// Samples taken.
    pub samples: u64,
    /// Time between samples, milliseconds.
    pub interval_ms: u64,
    /// Highest RSS summed over the tree.
    pub peak_rss_sum_bytes: Option<u64>,
    /// Highest PSS summed over the tree.
    pub peak_pss_bytes: Option<u64>,
    /// Highest USS summed over the tree.
    pub peak_uss_bytes: Option<u64>,
    /// Highest cgroup usage headroom sampled.
    pub peak_cgroup_bytes: Option<u64>,
    /// The cgroup's own peak counter (v1 max_usage_in_bytes, v2 memory.peak):
    /// at the end, or its last read before Slurm removed the cgroup.
    pub cgroup_kernel_peak_bytes: Option<u64>,
    /// Which reading that peak is (at the end, last read at T s, none).
    pub cgroup_kernel_peak_source: Option<String>,
    /// Which reading the oom_kill count is.
    pub oom_kill_source: Option<String>,
    /// Where the limit in force is set (the smallest along the ancestry).
    pub cgroup_limit_from: Option<String>,
    /// Highest GPU memory in use (NVML); null without a driver.
    pub peak_gpu_bytes: Option<u64>,
    /// Most processes alive at once (main + workers).
    pub max_processes: u32,
    /// Share of summed RSS that is shared pages at the RSS peak (1 - PSS/RSS).
    pub shared_share: Option<f64>,
    /// The watched cgroup's directory, if any.
    pub cgroup_dir: Option<String>,
    /// The cgroup's limit, bytes.
    pub cgroup_limit_bytes: Option<u64>,
    /// Whose cgroup that is (the job's own, or an enclosing one shared with
    /// other processes) and how much page cache its usage counts.
    pub cgroup_scope: Option<String>,
    /// Every threshold alert given.
    pub alerts: Vec<super::alert::Alert>,
    /// RSS, PSS and USS of each role at the PSS-sum peak.
    pub roles_at_peak: Vec<RoleMemory>,
    /// Most /dev/shm the loader workers held open at once, bytes.
    pub peak_workers_dev_shm_bytes: Option<u64>,
    /// Rise of the cgroup's oom_kill counter during the run.
    pub oom_kill_delta: Option<u64>,
    /// The GPU as NVML saw it: device names, or why there is none ("no NVIDIA driver").
    pub gpu: String,
    /// The predicted peak from `--job`/`--predicted-peak`, bytes.
    pub predicted_peak_bytes: Option<u64>,
    /// CPU time headroom itself used (utime + stime of all its threads), seconds.
    pub watcher_cpu_s: Option<f64>,
    /// That CPU time as a share of one core over headroom's run, percent.
    pub watcher_cpu_percent: Option<f64>,
    /// Every measure's peak.
    pub peaks: Vec<Peak>,
}

fn opt(b: Option<u64>) -> String {
    b.map(fmt_bytes).unwrap_or_else(|| "-".into())
}

impl Report for WatchSummary {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            w,
            "\nheadroom watch: {} samples over {:.1} s",
            self.samples, self.duration_s
        )?;
        writeln!(
            w,
            "{:<14} {:>10} {:>9} {:>9}  top process",
            "measure", "peak", "at", "procs"
        )?;
        for p in &self.peaks {
            let top = match (&p.top_comm, p.top_pid) {
                // A process names itself (prctl): shown cut and escaped.
                (Some(c), Some(pid)) => format!("{} ({pid})", crate::output::shown(c)),
                _ => "-".into(),
            };
            writeln!(
                w,
                "{:<14} {:>10} {:>8.1}s {:>9}  {top}",
                p.measure,
                fmt_bytes(p.bytes),
                p.at_s,
                p.processes
            )?;
        }
        if let Some(share) = self.shared_share {
            writeln!(
                w,
                "shared pages: {:.0}% of summed RSS at its peak ({} RSS summed vs {} PSS)",
                share * 100.0,
                opt(self.peak_rss_sum_bytes),
                opt(self.peak_pss_bytes)
            )?;
        }
        super::summary_roles::write_roles(self, w)?;
        if let Some(dir) = &self.cgroup_dir {
            writeln!(
                w,
                "cgroup {dir}: limit {}, kernel peak {}, oom_kill +{}",
                opt(self.cgroup_limit_bytes),
                opt(self.cgroup_kernel_peak_bytes),
                self.oom_kill_delta.unwrap_or(0)
            )?;
            if let Some(scope) = &self.cgroup_scope {
                writeln!(w, "  ({scope})")?;
            }
            if let Some(from) = &self.cgroup_limit_from {
                writeln!(w, "  limit set in {from}")?;
            }
            if let Some(src) = &self.cgroup_kernel_peak_source {
                writeln!(w, "  kernel peak: {src}")?;
            }
            if let Some(src) = &self.oom_kill_source {
                writeln!(w, "  oom_kill: {src}")?;
            }
        }
        writeln!(w, "gpu: {}", self.gpu)?;
        if let Some(p) = self.watcher_cpu_percent {
            writeln!(w, "watcher: {p:.2}% of one core")?;
        }
        if let Some(p) = self.predicted_peak_bytes {
            writeln!(w, "predicted peak: {}", fmt_bytes(p))?;
        }
        writeln!(
            w,
            "exit: {}{}",
            self.exit_status,
            match self.signal {
                Some(_) => format!(": exit code {}", self.exit_code),
                None => String::new(),
            }
        )?;
        writeln!(
            w,
            "verdict: {} ({}): {}",
            self.category,
            self.confidence,
            crate::output::shown_within(&self.reason, 400)
        )
    }
}
