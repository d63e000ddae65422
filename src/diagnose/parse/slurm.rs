//! Slurm output and log lines: slurmstepd's OOM, time-limit and cancellation
//! notices (every wording since 17.x) and srun's per-task reports; what the
//! batch script's shell prints is read in [`super::shell`].
//!
//! - 21.08+: `slurmstepd: error: Detected 1 oom_kill event in StepId=123.batch.
//!   Some of the step tasks have been OOM Killed.`
//! - older: `slurmstepd: error: Detected 1 oom-kill event(s) in step 123.batch
//!   cgroup. Some of your processes may have been killed by the cgroup
//!   out-of-memory handler.`
//! - jobacct_gather enforcement: `Job 123 exceeded memory limit (X > Y), being
//!   killed` (or `Step 123.0 ...`): summed RSS, not a cgroup OOM.
//! - before 20.x: `slurmstepd: *** JOB 123 CANCELLED AT <time> DUE TO TIME LIMIT on n447 ***`.
//! - `slurmstepd: error: *** JOB 123 ON node01 CANCELLED AT <time> DUE TO TIME LIMIT ***`,
//!   and `slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT` without asterisks.

use std::sync::LazyLock;

use regex::Regex;

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};
use crate::diagnose::exit::ExitStatus;

struct Patterns {
    oom_event: Regex,
    limit_kill: Regex,
    cancelled: Regex,
    srun_task: Regex,
    job_id: Regex,
}

static RE: LazyLock<Patterns> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(p).expect("static regex");
    Patterns {
        oom_event: r(r"Detected ([0-9]+) oom[-_]kill event"),
        limit_kill: r(
            r"(StepId=\S+|Job \S+|Step \S+) exceeded memory limit \(([0-9]+) > ([0-9]+)\), being killed",
        ),
        cancelled: r(
            r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+(?: DUE TO ([A-Z ]+?))?(?: on \S+)? \*\*\*",
        ),
        job_id: r(r"(?:StepId=|\*\*\* (?:JOB|STEP) |oom_kill event in StepId=)([0-9]+)"),
        srun_task: r(
            r"tasks? [0-9][0-9,-]*: (Out Of Memory|Killed|Exited with exit code ([0-9]+)|Bus error|Segmentation fault|Terminated)",
        ),
    }
});

/// Reads one line of a Slurm output file or slurmd/slurmstepd log.
pub fn parse(at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
    use Confidence::*;
    let re = &*RE;
    let ev = |kind, cat, strength| Evidence::line(kind, cat, strength, at, line);
    if let Some(c) = re.job_id.captures(line) {
        // Which job these logs are about: a kernel OOM kill of another job
        // on the same node is then not this job's (see the verdict).
        out.push(
            ev("slurm_job_id", Category::Unknown, Possible).with("slurm_job_id", c[1].parse().ok()),
        );
    }
    if let Some(c) = re.oom_event.captures(line) {
        let n = c[1].parse().ok();
        out.push(
            ev("slurm_oom_kill_event", Category::HostOomCgroup, Certain).with("oom_kill_events", n),
        );
    } else if let Some(c) = re.limit_kill.captures(line) {
        // jobacct_gather's polling kill: RSS summed over the step's processes
        // (not a cgroup's charge), so the fix differs. Slurm 22.05 and later
        // print `StepId=1.batch exceeded memory limit (430911488 > 314572800)`
        // in bytes (--mem=300M is exactly 314572800); older releases printed
        // `Job 42 exceeded …` / `Step 42.0 exceeded …` in KiB. The verdict
        // checks the reading against ReqMem when it has one.
        let bytes = c[1].starts_with("StepId=");
        let scale = if bytes { 1 } else { 1024 };
        let figure = |i: usize| c[i].parse::<u64>().ok().and_then(|v| v.checked_mul(scale));
        out.push(
            ev("slurm_memory_limit_kill", Category::HostOomRssSum, Certain)
                .with("slurm_measured_bytes", figure(2))
                .with("slurm_limit_bytes", figure(3))
                .with_label(if bytes { "bytes" } else { "KiB" }.to_string()),
        );
    } else if line.contains("xceeded job memory limit")
        || line.contains("xceeded step memory limit")
    {
        out.push(ev(
            "slurm_exceeded_memory_limit",
            Category::HostOomCgroup,
            Likely,
        ));
    } else if let Some(c) = re.cancelled.captures(line) {
        let (kind, strength) = match c.get(1).map(|m| m.as_str()) {
            Some("TIME LIMIT") => ("slurm_time_limit", Certain),
            Some("PREEMPTION") => ("slurm_preempted", Certain),
            // No reason given: scancel by a person, or Slurm ending a job it
            // killed for another reason; only a hint on its own.
            _ => ("slurm_cancelled", Possible),
        };
        out.push(ev(kind, Category::TimeLimit, strength));
    } else if line.contains("JOB CANCELLED DUE TO TIME LIMIT") {
        // The wording without asterisks some sites' Slurm prints.
        out.push(ev("slurm_time_limit", Category::TimeLimit, Certain));
    } else if let Some(c) = re.srun_task.captures(line) {
        let what = c.get(1).map_or("", |m| m.as_str());
        match what {
            "Out Of Memory" => out.push(ev(
                "srun_task_out_of_memory",
                Category::HostOomCgroup,
                Certain,
            )),
            "Killed" => out.push(ev("srun_task_killed", Category::HostOomKernel, Possible)),
            "Bus error" => out.push(ev("srun_task_bus_error", Category::ShmBusError, Likely)),
            "Segmentation fault" => out.push(ev("srun_task_segfault", Category::Segfault, Likely)),
            "Terminated" => out.push(ev("srun_task_terminated", Category::TimeLimit, Possible)),
            _ => {
                if let Some(code) = c.get(2)
                    && let Ok(status) = ExitStatus::parse(code.as_str())
                {
                    out.exit_status(status, at, line);
                }
            }
        }
    }
}
