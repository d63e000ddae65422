//! A finished probed run directory turned into what a user reads: the
//! observed job spec (`job.yaml`, with what had to be assumed as comments),
//! and headroom's per-phase prediction beside the measured peaks
//! (`phases.json` and a table on stderr).

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::observed::{Observed, observe};
use super::phases::{Measure, PhaseRow, Row, table};
use super::{EVENTS_FILE, JOB_FILE, PHASES_FILE, RUN_FILE, TIMELINE_FILE, events};
use crate::error::{Error, Result};
use crate::estimate::{Coefficients, estimate};
use crate::spec::{Job, JobSpec};
use crate::units::fmt_bytes;

/// What was run, where and when (`run.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// The command as given.
    pub command: Vec<String>,
    /// The machine's host name.
    pub host: Option<String>,
    /// When the job started, seconds since the Unix epoch.
    pub started_epoch_s: f64,
    /// The same as a UTC date.
    pub date: String,
    /// Whether the job ran in a cgroup of its own (`--limit`).
    pub own_cgroup: bool,
}

impl RunInfo {
    /// The run about to start now.
    pub fn now(command: &[String], own_cgroup: bool) -> RunInfo {
        let started_epoch_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        RunInfo {
            command: command.to_vec(),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string()),
            started_epoch_s,
            date: crate::units::utc_date_now(),
            own_cgroup,
        }
    }
}

/// A probed run read back.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    /// What was run.
    pub run: RunInfo,
    /// The job the probe saw.
    pub observed: Observed,
    /// The figure compared.
    pub measure: Measure,
    /// Predicted against measured, per phase.
    pub phases: Vec<PhaseRow>,
    /// Event lines that could not be read.
    pub skipped_lines: usize,
}

/// A file of the run directory: a regular file, size-capped (it came from
/// wherever the user got the directory).
fn read(dir: &Path, name: &str) -> Result<String> {
    crate::input::read_text(&dir.join(name), name, false)
}

/// Reads `dir` (a `watch --probe --out` directory) and predicts the observed
/// job with `coeffs`.
pub fn load(dir: &Path, coeffs: &Coefficients) -> Result<ProbeReport> {
    let run: RunInfo = serde_json::from_str(&read(dir, RUN_FILE)?)
        .map_err(|e| Error::bad(format!("{}: {e}", dir.join(RUN_FILE).display())))?;
    let ev = events::parse(&read(dir, EVENTS_FILE).map_err(|_| {
        Error::bad(format!(
            "{}: no probe events (did the job run Python with torch?)",
            dir.display()
        ))
    })?);
    let observed = observe(&ev)?;
    let rows: Vec<Row> = read(dir, TIMELINE_FILE)?
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let measure = if run.own_cgroup {
        Measure::CgroupAnonShmem
    } else {
        Measure::PssAnonShmem
    };
    let phases = predict(&observed, coeffs, &rows, &run, measure)?;
    Ok(ProbeReport {
        run,
        observed,
        measure,
        phases,
        skipped_lines: ev.skipped,
    })
}

/// The observed job as a planner job (cgroup accounting: the measure's).
pub fn job_of(observed: &Observed) -> Result<Job> {
    let spec: JobSpec = serde_json::from_value(observed.spec.clone())
        .map_err(|e| Error::Internal(format!("observed job spec: {e}")))?;
    Job::from_spec(&spec)
}

fn predict(
    observed: &Observed,
    coeffs: &Coefficients,
    rows: &[Row],
    run: &RunInfo,
    measure: Measure,
) -> Result<Vec<PhaseRow>> {
    let job = job_of(observed)?;
    let est = estimate(&job, &job.settings, coeffs);
    Ok(table(
        &est,
        rows,
        &observed.spans,
        run.started_epoch_s,
        measure,
    ))
}

/// Writes `job.yaml` and `phases.json` into `dir`.
pub fn write(dir: &Path, r: &ProbeReport) -> Result<()> {
    let mut yaml = format!(
        "# Observed by headroom watch --probe on {} ({}):\n# {}\n",
        r.run.host.as_deref().unwrap_or("?"),
        r.run.date,
        r.run.command.join(" ")
    );
    for a in &r.observed.assumed {
        yaml.push_str(&format!("# assumed: {a}\n"));
    }
    yaml.push_str(
        &crate::yaml::to_string(&r.observed.spec)
            .map_err(|e| Error::Internal(format!("job.yaml: {e}")))?,
    );
    let p = dir.join(JOB_FILE);
    std::fs::write(&p, yaml).map_err(|e| Error::io(&p, e))?;
    let p = dir.join(PHASES_FILE);
    let json =
        crate::output::json_string(r).map_err(|e| Error::Internal(format!("phases.json: {e}")))?;
    std::fs::write(&p, json + "\n").map_err(|e| Error::io(&p, e))
}

/// The per-phase table for people.
pub fn print(r: &ProbeReport, out: &mut dyn Write) -> std::io::Result<()> {
    let what = match r.measure {
        Measure::CgroupAnonShmem => "the job's cgroup, anon + shmem",
        Measure::PssAnonShmem => "the tree's PSS less file pages",
    };
    writeln!(
        out,
        "[headroom] probe: predicted against measured ({what}):"
    )?;
    writeln!(
        out,
        "  {:<14} {:>11} {:>11} {:>8}",
        "phase", "predicted", "measured", "error"
    )?;
    for p in &r.phases {
        let m = p
            .measured_bytes
            .map(fmt_bytes)
            .unwrap_or_else(|| "-".into());
        let e = p
            .rel_error
            .map(|e| format!("{:+.1}%", e * 100.0))
            .unwrap_or_else(|| "-".into());
        writeln!(
            out,
            "  {:<14} {:>11} {:>11} {:>8}",
            p.phase,
            fmt_bytes(p.predicted_bytes),
            m,
            e
        )?;
    }
    for a in &r.observed.assumed {
        writeln!(out, "  assumed: {a}")?;
    }
    let mean =
        |v: &[u64]| (!v.is_empty()).then(|| fmt_bytes(v.iter().sum::<u64>() / v.len() as u64));
    if let Some(t) = mean(&r.observed.train_worker_uss) {
        let idle = mean(&r.observed.idle_worker_uss).unwrap_or_else(|| "-".into());
        writeln!(
            out,
            "  workers' own pages (USS): training {t}, idle {idle} (pages workers share only with each other are in no USS)"
        )?;
    }
    if let Some((probe, job)) = r.observed.probe_seconds {
        writeln!(
            out,
            "  the probe's own work: {probe:.3} s of the job's {job:.1} s ({:.2}%)",
            100.0 * probe / job.max(1e-9)
        )?;
    }
    Ok(())
}
