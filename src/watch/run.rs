//! The watch loop: set up the cgroup and NVML, start the job, sample its
//! tree every interval into the timeline until it ends, then summarize,
//! explain, draw, clean up and hand back the job's exit code.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::child::{self, exit_kind, tail_text, tee_stderr};
use super::cli::{Outputs, WatchArgs};
use super::finish::{Ended, finish};
use super::record::Recorder;
use super::sample::Sampler;
use super::timeline::Timeline;
use crate::collect::cgroup::CgroupReader;
use crate::collect::cgroup_limit::{LimitCgroup, systemd_hint};
use crate::collect::gpu::GpuReader;
use crate::collect::procfs::ProcReader;
use crate::collect::tree::TreeSampler;
use crate::error::{Error, Result};

/// Share of one core the watcher may use before it stops re-reading
/// `smaps_rollup` (the 1% target, less a margin for the end-of-run work).
pub(crate) const CPU_BUDGET: f64 = 0.007;
/// One-off allowance so the first processes are read exactly at once.
pub(crate) const SMAPS_BURST: Duration = Duration::from_millis(50);

/// The output files, already created.
pub struct Files {
    /// Timeline path and file.
    pub timeline: Option<(PathBuf, File)>,
    /// Summary JSON path and file.
    pub summary: Option<(PathBuf, File)>,
    /// Plot SVG path and file.
    pub plot: Option<(PathBuf, File)>,
    /// Added to the job's environment (the probe's PYTHONPATH).
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// A probed run's `run.json`, written as the job starts.
    pub probe_run: Option<PathBuf>,
}

/// The predicted peak to draw: `--predicted-peak`, else the planner's host
/// peak for `--job` (a job spec, sbatch script or profile; no budget needed).
pub fn predicted_peak(args: &WatchArgs) -> Result<Option<u64>> {
    if args.predicted_peak.is_some() {
        return Ok(args.predicted_peak);
    }
    let Some(job) = &args.job else {
        return Ok(None);
    };
    let loaded = crate::spec::load(&job.to_string_lossy())?;
    let job = crate::spec::Job::from_spec(&loaded.spec)?;
    let coeffs = crate::estimate::load_coefficients(None)?;
    let est = crate::estimate::estimate(&job, &job.settings, &coeffs);
    Ok(Some(crate::plan::verdict::peaks(&est).0))
}

/// Runs the job under watch and returns its exit code.
pub fn watch(
    args: &WatchArgs,
    predicted: Option<u64>,
    files: Files,
    outputs: &mut Outputs,
) -> Result<ExitCode> {
    let began = Instant::now();
    let (mut limit_cg, cg_limit) = match (args.limit, args.probe) {
        (Some(limit), _) => {
            warn_unfaithful(limit, ProcReader::new().meminfo("MemTotal"));
            (Some(make_limit_cgroup(limit)?), limit)
        }
        // A probed job gets a cgroup of its own where one can be made (no
        // limit but the machine's): its anon + shmem is then exactly what
        // the per-phase table compares, at every sample.
        (None, true) => {
            let total = ProcReader::new().meminfo("MemTotal");
            (
                total.and_then(|m| make_limit_cgroup(m).ok()),
                total.unwrap_or(0),
            )
        }
        (None, false) => (None, 0),
    };
    let cgroup = match &limit_cg {
        Some(cg) => Some(cg.reader().clone()),
        None => CgroupReader::own(),
    };
    let (gpu, gpu_note) = GpuReader::open_for_summary();
    let oom_before = cgroup.as_ref().and_then(|c| c.oom_kill());

    let procs_path = limit_cg.as_ref().map(|c| c.procs_path());
    if let Some(p) = &files.probe_run {
        let run = crate::probe::report::RunInfo::now(&args.command, limit_cg.is_some());
        let json = crate::output::json_string(&run)
            .map_err(|e| Error::Internal(format!("run.json: {e}")))?;
        std::fs::write(p, json).map_err(|e| Error::io(p, e))?;
    }
    let started = Instant::now();
    // Between the cgroup's creation and the child joining it, a program
    // that removes empty cgroups (a site's cleanup, Slurm's own under a
    // job) can take it: the join fails with ENOENT. The cgroup is made
    // again under the same name (the readers above stay valid) and the
    // start retried, a few times.
    let mut tries = 0;
    let mut job = loop {
        match child::spawn(&args.command, procs_path.as_deref(), &files.env) {
            Ok(c) => break c,
            Err(e)
                if tries < 5
                    && e.kind() == std::io::ErrorKind::NotFound
                    && procs_path.as_ref().is_some_and(|p| !p.exists()) =>
            {
                tries += 1;
                eprintln!(
                    "headroom: the job's memory cgroup was removed by another process before the job joined it; made again (try {tries})"
                );
                if let Some(gone) = limit_cg.as_mut() {
                    gone.mark_gone();
                }
                limit_cg = Some(make_limit_cgroup(cg_limit)?);
            }
            Err(e) => return Ok(spawn_failed(&args.command[0], &e, procs_path.as_deref())),
        }
    };
    let pid = job.id();
    child::forward_signals_to(pid as i32);
    // Outputs still empty when headroom dies are the guardian's to delete.
    let empty_outputs: Vec<PathBuf> = [&files.summary, &files.plot]
        .into_iter()
        .filter_map(|f| f.as_ref().map(|(p, _)| p.clone()))
        .collect();
    let cg_dir = limit_cg.as_ref().map(|c| c.reader().dir().to_path_buf());
    let guard = super::guard::start(pid as i32, cg_dir.as_deref(), &empty_outputs)
        .map_err(|e| Error::Internal(format!("cannot start the cleanup guardian: {e}")))?;
    let mut stop = Stop::default();
    let tail = job.stderr.take().map(tee_stderr);
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(job.wait());
    });
    outputs.keep();

    let mut sampler = Sampler::new(
        TreeSampler::new(ProcReader::new(), CPU_BUDGET, SMAPS_BURST),
        pid,
        None,
    );
    sampler.cgroup = cgroup.clone();
    sampler.gpu = gpu;
    sampler.stat_every = if args.probe { 1 } else { args.stat_every };
    let timeline = files
        .timeline
        .map(|(p, f)| Timeline::new(&p, f, timeline_format(args)));
    let mut rec = Recorder::new(timeline, args, format!("pid {pid}"));
    let status = loop {
        let tick = Instant::now();
        // Milliseconds are as fine as any interval allowed.
        let t_s = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let s = sampler.take(t_s);
        // A tree that has already gone is no sample: the job ended between ticks.
        if s.processes > 0 {
            rec.record(s);
        }
        stop.check(pid as i32, args.kill_after);
        let wait = args.interval.saturating_sub(tick.elapsed());
        match done_rx.recv_timeout(wait) {
            Ok(status) => break status,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::Internal("lost the job's waiter".into()));
            }
        }
    };
    let duration = started.elapsed().as_secs_f64();
    rec.finish();
    let exit = match status {
        Ok(st) => exit_kind(st),
        Err(e) => return Err(Error::Internal(format!("waiting for the job: {e}"))),
    };
    // Let the tee pass on what the job wrote last; workers that outlive the
    // main process may hold the pipe open, so wait half a second at most.
    let stderr_tail = match tail {
        Some((tail, tee)) => {
            let until = Instant::now() + Duration::from_millis(500);
            while !tee.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            tail_text(&tail)
        }
        None => String::new(),
    };

    let ended = finish(Ended {
        args,
        summary_file: files.summary,
        plot_file: files.plot,
        cgroup,
        limit_cgroup: limit_cg,
        oom_before,
        oom_after: None,
        exit,
        stderr_tail,
        duration,
        rec,
        gpu_note,
        predicted,
        began,
        stop: stop.evidence(),
        attached: None,
        counters: None,
        phases: files
            .probe_run
            .as_ref()
            .and_then(|p| p.parent())
            .map(crate::probe::phase_spans)
            .unwrap_or_default(),
    });
    if ended.is_ok() {
        guard.finished();
    }
    ended
}

/// The forwarded signal and its escalation: when it was first seen, who
/// sent it, and whether the grace period ran out.
#[derive(Default)]
struct Stop {
    seen: Option<(Instant, String)>,
    killed_after: Option<Duration>,
}

impl Stop {
    /// SIGKILL to the job's group once `grace` has passed since a forwarded
    /// SIGTERM/SIGINT it has not ended on.
    fn check(&mut self, pgid: i32, grace: Duration) {
        if child::forwarded_signal().is_none() {
            return;
        }
        let (at, _) = self
            .seen
            .get_or_insert_with(|| (Instant::now(), child::signal_sender()));
        if self.killed_after.is_none() && at.elapsed() >= grace {
            child::kill_group(pgid);
            self.killed_after = Some(grace);
        }
    }

    fn evidence(self) -> super::verdict::StopEvidence {
        super::verdict::StopEvidence {
            sender: self
                .seen
                .map(|(_, who)| who)
                .unwrap_or_else(child::signal_sender),
            killed_after_s: self.killed_after.map(|d| d.as_secs_f64()),
        }
    }
}

/// A probed run's timeline is JSONL whatever `--format` says: its report
/// reads it back.
fn timeline_format(args: &WatchArgs) -> super::timeline::TimelineFormat {
    if args.probe {
        super::timeline::TimelineFormat::Jsonl
    } else {
        args.format
    }
}

/// A `--limit` above the machine's memory cannot be rehearsed here: the
/// machine runs out (global OOM killer, swap) before the cgroup's limit.
pub fn unfaithful_limit(limit: u64, mem_total: Option<u64>) -> Option<String> {
    let total = mem_total.filter(|&t| limit > t)?;
    Some(format!(
        "headroom: warning: --limit {} is more than this machine's memory ({}): the \
         rehearsal cannot be faithful (the machine runs out before the limit does)",
        crate::units::fmt_bytes(limit),
        crate::units::fmt_bytes(total)
    ))
}

fn warn_unfaithful(limit: u64, mem_total: Option<u64>) {
    if let Some(w) = unfaithful_limit(limit, mem_total) {
        eprintln!("{w}");
    }
}

fn make_limit_cgroup(limit: u64) -> Result<LimitCgroup> {
    let hint = |why: String| {
        let text = format!("{}M", limit >> 20);
        match systemd_hint(&text) {
            Some(h) => Error::Unsupported(format!("--limit: {why}; {h}")),
            None => Error::Unsupported(format!("--limit: {why}")),
        }
    };
    let own = CgroupReader::own()
        .ok_or_else(|| hint("no memory cgroup found for this process".into()))?;
    // Cgroups of earlier runs whose headroom died before it could clean up.
    crate::collect::cgroup_limit::remove_stale(&own, "headroom-watch-");
    let name = format!("headroom-watch-{}", std::process::id());
    LimitCgroup::create(&own, &name, limit).map_err(hint)
}

/// Like a shell: 127 when the command does not exist, 126 when it cannot run.
/// The child joins the limit cgroup before exec, and only the errno crosses
/// back: an ENOENT there means the cgroup was removed by someone else (an
/// `rmdir` of empty cgroups), not a missing command, so that is checked.
pub(super) fn spawn_failed(cmd: &str, e: &std::io::Error, cgroup_procs: Option<&Path>) -> ExitCode {
    let cgroup_gone = cgroup_procs.filter(|p| !p.exists());
    match e.kind() {
        std::io::ErrorKind::NotFound if cgroup_gone.is_some() => {
            let dir = cgroup_gone.and_then(Path::parent).unwrap_or(Path::new("?"));
            eprintln!(
                "headroom: {cmd}: not started: its memory cgroup {} was removed by another process before the job could join it",
                dir.display()
            );
            ExitCode::from(126)
        }
        std::io::ErrorKind::NotFound => {
            eprintln!("headroom: {cmd}: command not found");
            ExitCode::from(127)
        }
        _ => {
            eprintln!("headroom: {cmd}: cannot run: {e}");
            ExitCode::from(126)
        }
    }
}
