//! `headroom watch --pid PID | --cgroup DIR | --slurm-job ID`: the same
//! timeline, alerts, summary and plot for a job headroom did not start.
//!
//! A pid is watched with its process tree and the memory cgroup it lives in
//! (for its limit and OOM counter: the job's own cgroup under Slurm, else
//! whatever encloses it, which the summary names). A cgroup or Slurm job is
//! watched as all the processes in it and below it. The job has ended when
//! the tree or the cgroup holds no live process (or Slurm removed the
//! directory). Not being its parent, headroom cannot get its exit status;
//! the end is read from the cgroup's OOM-kill counter (kept from the last
//! sample when the directory is gone) and from the kernel log lines naming
//! one of the job's processes. Ctrl-C or SIGTERM to headroom stops the
//! watching and leaves the job alone.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use super::cli::{Outputs, WatchArgs};
use super::finish::{CounterReads, Ended, finish};
use super::record::Recorder;
use super::run::Files;
use super::sample::Sampler;
use super::timeline::Timeline;
use super::verdict::ExitKind;
use crate::collect::cgroup::CgroupReader;
use crate::collect::gpu::GpuReader;
use crate::collect::job_cgroup;
use crate::collect::kmsg::{KernelLog, about_pids};
use crate::collect::procfs::ProcReader;
use crate::collect::slurm_cgroup;
use crate::collect::tree::TreeSampler;
use crate::error::{Error, Result};

/// What was attached to.
struct Target {
    /// In words, for the summary and the alert command.
    name: String,
    /// The tree's root (`--pid`), or 0.
    pid: u32,
    /// The cgroup whose members are the job (`--cgroup`, `--slurm-job`).
    members: Option<CgroupReader>,
    /// The cgroup read for usage, limit and OOM kills.
    cgroup: Option<CgroupReader>,
}

fn resolve(args: &WatchArgs, proc: &ProcReader) -> Result<Target> {
    if let Some(pid) = args.pid {
        if proc.stat(pid).is_none() {
            return Err(Error::bad(format!("--pid {pid}: no such process")));
        }
        let cgroup = CgroupReader::of_process(proc.root(), &pid.to_string());
        return Ok(Target {
            name: format!("pid {pid}"),
            pid,
            members: None,
            cgroup,
        });
    }
    let (name, cg) = match (&args.cgroup, args.slurm_job) {
        (Some(dir), _) => (
            format!("cgroup {}", dir.display()),
            job_cgroup::open_dir(dir).map_err(Error::bad)?,
        ),
        (None, Some(job)) => {
            let (cg, how) = slurm_cgroup::find(job, &args.cgroup_root).map_err(Error::bad)?;
            eprintln!(
                "headroom: Slurm job {job}: cgroup {}, found {how}",
                cg.dir().display()
            );
            (format!("Slurm job {job}"), cg)
        }
        (None, None) => return Err(Error::bad("nothing to attach to")),
    };
    Ok(Target {
        name,
        pid: 0,
        members: Some(cg.clone()),
        cgroup: Some(cg),
    })
}

/// Watches an already running job until it ends; headroom's exit code.
pub fn watch(
    args: &WatchArgs,
    predicted: Option<u64>,
    files: Files,
    outputs: &mut Outputs,
) -> Result<ExitCode> {
    let began = Instant::now();
    let proc = ProcReader::new();
    let target = resolve(args, &proc)?;
    let mut kernel = KernelLog::open_at_end(Path::new("/dev/kmsg")).ok();
    let oom_before = target.cgroup.as_ref().and_then(job_cgroup::oom_kills);
    let (gpu, gpu_note) = GpuReader::open_for_summary();
    // Stop watching on Ctrl-C/SIGTERM: the handler forwards to no group (0).
    super::child::forward_signals_to(0);
    outputs.keep();
    let mut sampler = Sampler::new(
        TreeSampler::new(proc, super::run::CPU_BUDGET, super::run::SMAPS_BURST),
        target.pid,
        target.members.clone(),
    );
    sampler.cgroup = target.cgroup.clone();
    sampler.gpu = gpu;
    sampler.stat_every = args.stat_every;
    let timeline = files
        .timeline
        .map(|(p, f)| Timeline::new(&p, f, args.format));
    let mut rec = Recorder::new(timeline, args, target.name.clone());
    let mut seen = BTreeSet::new();
    let mut last_oom = oom_before;
    let mut counters = CounterReads {
        limit_from: target.cgroup.as_ref().and_then(|c| c.read().limit_from),
        ..CounterReads::default()
    };
    let started = Instant::now();
    let detached = loop {
        let tick = Instant::now();
        let t_s = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let s = sampler.take(t_s);
        if s.processes == 0 {
            break false;
        }
        seen.extend(sampler.last_pids.iter().copied());
        // Slurm removes task_N (where v1 counts the kill) and then the job's
        // directory as soon as the job ends: the counters are read at every
        // sample and their highest value kept, since a count that drops
        // only lost a directory.
        if let Some(n) = target.cgroup.as_ref().and_then(job_cgroup::oom_kills) {
            last_oom = Some(last_oom.map_or(n, |o| o.max(n)));
            counters.oom_read_at = Some(t_s);
        }
        if let Some(p) = target.cgroup.as_ref().and_then(|c| c.read_peak())
            && counters.peak.is_none_or(|(q, _)| p >= q)
        {
            counters.peak = Some((p, t_s));
        }
        rec.record(s);
        if super::child::forwarded_signal().is_some() {
            break true;
        }
        std::thread::sleep(args.interval.saturating_sub(tick.elapsed()));
    };
    let duration = started.elapsed().as_secs_f64();
    rec.finish();
    // The directory may be gone with the job: then the last count stands.
    let gone = target.cgroup.as_ref().is_some_and(|c| !c.dir().is_dir());
    let oom_after = match target.cgroup.as_ref().and_then(job_cgroup::oom_kills) {
        Some(n) if !gone => {
            counters.oom_read_at = None;
            Some(last_oom.map_or(n, |o| o.max(n)))
        }
        _ => last_oom,
    };
    let pids: Vec<u32> = seen.into_iter().collect();
    let kernel_lines = kernel
        .as_mut()
        .map(|k| about_pids(&k.read_new(), &pids))
        .unwrap_or_default();
    // The kernel names the main process's SIGKILL; nothing else is certain.
    let exit = if target.pid != 0
        && kernel_lines
            .iter()
            .any(|l| l.contains(&format!("Killed process {} ", target.pid)))
    {
        ExitKind::Signal(9)
    } else {
        ExitKind::Unknown
    };
    finish(Ended {
        args,
        summary_file: files.summary,
        plot_file: files.plot,
        cgroup: target.cgroup,
        limit_cgroup: None,
        oom_before: oom_before.map(|b| b.min(oom_after.unwrap_or(b))),
        oom_after,
        exit,
        stderr_tail: kernel_lines.join("\n"),
        duration,
        rec,
        gpu_note,
        predicted,
        began,
        stop: Default::default(),
        attached: Some((target.name, detached)),
        phases: Vec::new(),
        counters: Some(counters),
    })
}
