//! The end of a watched run: read the cgroup once more, name the cause,
//! build the summary, remove the limit cgroup, and write the summary and
//! the plot.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::child::forwarded_signal;
use super::cli::WatchArgs;
use super::plot::{PlotMarks, render_svg};
use super::record::Recorder;
use super::summary::WatchSummary;
use super::verdict::{EndEvidence, ExitKind, verdict};
use crate::collect::cgroup::CgroupReader;
use crate::collect::cgroup_limit::LimitCgroup;
use crate::error::{Error, Result};

/// Everything the loop leaves for the end.
pub struct Ended<'a> {
    /// The arguments.
    pub args: &'a WatchArgs,
    /// `--summary` path and file.
    pub summary_file: Option<(PathBuf, File)>,
    /// `--plot` path and file.
    pub plot_file: Option<(PathBuf, File)>,
    /// The watched cgroup.
    pub cgroup: Option<CgroupReader>,
    /// The cgroup `--limit` made, to remove.
    pub limit_cgroup: Option<LimitCgroup>,
    /// The cgroup's oom_kill counter before the job started.
    pub oom_before: Option<u64>,
    /// The counter at the end when the caller read it (an attached job's
    /// subtree, or its last reading once Slurm removed the directory).
    pub oom_after: Option<u64>,
    /// How the job ended.
    pub exit: ExitKind,
    /// The job's last stderr.
    pub stderr_tail: String,
    /// Wall time, seconds.
    pub duration: f64,
    /// The samples, peaks and alerts.
    pub rec: Recorder,
    /// GPU names, or why there is none.
    pub gpu_note: String,
    /// The predicted peak, bytes.
    pub predicted: Option<u64>,
    /// When headroom began watching (before the cgroup and NVML were set up).
    pub began: std::time::Instant,
    /// Who sent the signal headroom forwarded, and whether it had to SIGKILL.
    pub stop: super::verdict::StopEvidence,
    /// What headroom attached to (`pid 4242`, `cgroup DIR`, `Slurm job 7`),
    /// and whether it stopped watching before the job ended.
    pub attached: Option<(String, bool)>,
    /// The probe's phases, (from, to, name) in seconds after the start.
    pub phases: Vec<(f64, f64, String)>,
    /// An attached watch's reads of the kernel's counters during the run.
    pub counters: Option<CounterReads>,
}

/// What an attached watch read of the kernel's counters while the job ran.
/// Slurm removes the job's cgroup when it ends, often before the last read,
/// so the end says which reading each figure rests on.
#[derive(Debug, Clone, Default)]
pub struct CounterReads {
    /// The peak counter's highest value and when it was read (s).
    pub peak: Option<(u64, f64)>,
    /// When the oom_kill counter was last read (s); `None`: at the end.
    pub oom_read_at: Option<f64>,
    /// Where the limit in force was set, read when the watch began.
    pub limit_from: Option<String>,
}

/// Summarizes, explains, cleans up and returns the job's exit code.
pub fn finish(e: Ended<'_>) -> Result<ExitCode> {
    let Ended {
        args,
        summary_file,
        plot_file,
        cgroup,
        mut limit_cgroup,
        oom_before,
        oom_after,
        exit,
        stderr_tail,
        duration,
        rec,
        gpu_note,
        predicted,
        began,
        stop,
        attached,
        phases,
        counters,
    } = e;
    let Recorder {
        samples,
        peaks,
        write_error,
        alerted,
        ..
    } = rec;
    let end = cgroup.as_ref().map(|c| c.read());
    let oom_end = oom_after.or(end.as_ref().and_then(|m| m.oom_kill));
    let oom_kill_delta = match (oom_before, oom_end) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let readings = super::counters::Readings::new(
        cgroup.as_ref(),
        end.as_ref(),
        counters.as_ref(),
        args.interval.as_millis() as u64,
    );
    let why = verdict(&EndEvidence {
        exit,
        oom_kill_delta,
        stderr_tail: &stderr_tail,
        // A signal to an attached watcher stops the watching, not the job.
        forwarded_signal: forwarded_signal().filter(|_| attached.is_none()),
        stop,
    });
    let why = match &attached {
        Some((target, true)) => super::verdict::Verdict {
            category: crate::diagnose::category::Category::Unknown,
            confidence: crate::diagnose::category::Confidence::Possible,
            reason: format!("headroom stopped watching {target}; it was still running"),
        },
        _ => why,
    };
    // An attached job's end rests on what could be read: "certain" only
    // with the counter that proves it.
    let why = match &counters {
        Some(_) => readings.judge(why, oom_kill_delta, end.as_ref().and_then(|m| m.limit)),
        None => why,
    };
    let cpu = own_cpu_seconds();
    let summary = WatchSummary {
        command: args.command.clone(),
        attached_to: attached.as_ref().map(|(t, _)| t.clone()),
        exit_code: exit.shell_code(),
        exit_status: exit.describe(),
        signal: match exit {
            ExitKind::Signal(s) => Some(s),
            _ => None,
        },
        category: why.category,
        confidence: why.confidence,
        reason: why.reason,
        duration_s: duration,
        samples: samples.len() as u64,
        interval_ms: args.interval.as_millis() as u64,
        peak_rss_sum_bytes: peaks.get("rss_sum"),
        peak_pss_bytes: peaks.get("pss_sum"),
        peak_uss_bytes: peaks.get("uss_sum"),
        peak_cgroup_bytes: peaks.get("cgroup_usage"),
        cgroup_kernel_peak_bytes: readings.peak,
        cgroup_kernel_peak_source: readings.peak_source.clone(),
        oom_kill_source: readings.oom_source.clone(),
        cgroup_limit_from: end
            .as_ref()
            .and_then(|m| m.limit_from.clone())
            .or(counters.as_ref().and_then(|c| c.limit_from.clone())),
        peak_gpu_bytes: peaks.get("gpu_used"),
        max_processes: peaks.max_processes,
        shared_share: peaks.pss_over_rss_at_peak.map(|r| (1.0 - r).max(0.0)),
        cgroup_dir: cgroup.as_ref().map(|c| c.dir().display().to_string()),
        cgroup_limit_bytes: end
            .as_ref()
            .and_then(|m| m.limit)
            .or(samples.iter().rev().find_map(|s| s.cgroup_limit_bytes)),
        alerts: alerted,
        roles_at_peak: peaks
            .at_pss_peak
            .as_ref()
            .map(super::summary_roles::roles_of)
            .unwrap_or_default(),
        peak_workers_dev_shm_bytes: peaks.workers_dev_shm,
        cgroup_scope: cgroup.as_ref().map(|c| cgroup_scope(c, &samples)),
        oom_kill_delta,
        gpu: gpu_note,
        predicted_peak_bytes: predicted,
        watcher_cpu_s: cpu,
        watcher_cpu_percent: cpu.map(|c| 100.0 * c / began.elapsed().as_secs_f64().max(1e-3)),
        peaks: peaks.peaks.clone(),
    };
    if let Some(cg) = limit_cgroup.as_mut() {
        empty_and_remove(cg);
    }
    crate::output::emit(
        &summary,
        crate::output::Format::Table,
        &mut std::io::stderr(),
    )?;
    if let Some((path, mut f)) = summary_file {
        crate::output::json_string(&summary)
            .and_then(|text| f.write_all((text + "\n").as_bytes()))
            .map_err(|e| Error::io(&path, e))?;
    }
    if let Some((path, mut f)) = plot_file {
        let marks = PlotMarks {
            limit: summary.cgroup_limit_bytes,
            predicted_peak: predicted,
            end: Some((
                duration,
                match exit {
                    ExitKind::Signal(sig) => format!(
                        "killed by {}: {}",
                        super::verdict::signal_name(sig),
                        summary.category
                    ),
                    _ => format!("end: {}", summary.category),
                },
            )),
            phases,
            title: match &attached {
                // SVG is XML, where a control character makes the file unreadable.
                Some((target, _)) => format!("headroom watch: {}", crate::output::shown(target)),
                None => format!(
                    "headroom watch: {}",
                    crate::output::escape_controls(&short_command(&args.command), &[])
                ),
            },
        };
        let svg = render_svg(&samples, &marks)?;
        f.write_all(svg.as_bytes())
            .map_err(|e| Error::io(&path, e))?;
    }
    if let Some(e) = write_error {
        eprintln!("headroom: the timeline is incomplete: {e}");
    }
    Ok(ExitCode::from(summary.exit_code.clamp(0, 255) as u8))
}

/// Which cgroup the usage is read from, and that its usage counts page
/// cache: v1 `memory.usage_in_bytes` and v2 `memory.current` both charge
/// page cache (and shmem) with anonymous memory (kernel
/// Documentation/admin-guide/cgroup-v1/memory.rst, cgroup-v2.rst).
fn cgroup_scope(cg: &CgroupReader, samples: &[super::sample::Sample]) -> String {
    let members = crate::collect::job_cgroup::member_pids(cg).len() as u32;
    let job = samples.last().map_or(0, |s| s.processes);
    let whose = if members > job {
        format!(
            "an enclosing cgroup: {} processes in it now besides the job's {job}",
            members - job
        )
    } else {
        "the job's own cgroup".to_string()
    };
    let cache = samples.iter().rev().find_map(|s| {
        Some(
            s.cgroup_file_bytes?
                .saturating_sub(s.cgroup_shmem_bytes.unwrap_or(0)),
        )
    });
    match cache {
        Some(c) => format!(
            "{whose}; its usage includes page cache ({} at the last reading), which the kernel reclaims before it kills",
            crate::units::fmt_bytes(c)
        ),
        None => format!("{whose}; its usage includes page cache"),
    }
}

/// This process's CPU time so far, seconds (all threads).
fn own_cpu_seconds() -> Option<f64> {
    Some(crate::collect::tree::own_cpu().as_secs_f64())
}

/// Kills what the job left in its cgroup (orphaned workers), then removes it.
fn empty_and_remove(cg: &mut LimitCgroup) {
    if let Ok(text) = std::fs::read_to_string(cg.procs_path()) {
        for pid in text
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            // A process inside the cgroup headroom created.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    if let Err(e) = cg.remove() {
        eprintln!("headroom: {e}");
    }
}

/// The command for a title: the program's file name and its arguments.
fn short_command(argv: &[String]) -> String {
    let mut parts = argv.to_vec();
    if let Some(name) = argv
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
    {
        parts[0] = name.to_string_lossy().into_owned();
    }
    let text = parts.join(" ");
    if text.chars().count() > 80 {
        format!("{}...", text.chars().take(77).collect::<String>())
    } else {
        text
    }
}
