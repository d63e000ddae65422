//! What `headroom calibrate` prints: the stack and the machine, which run
//! moves which coefficient (the design checked, not asserted), each run's
//! phases predicted before and after the fit against the measurement, what
//! was measured directly, fitted, or kept and why, and the GPU's facts.

use std::io::Write;

use serde::Serialize;

use super::fit::{Moved, Stayed};
use super::from_run::Direct;
use super::gpu::GpuOutcome;
use super::machine::Machine;
use crate::estimate::Coefficients;
use crate::output::Report;
use crate::spec::Stack;
use crate::units::fmt_bytes;

/// One phase of one run.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseFit {
    /// The phase.
    pub phase: String,
    /// Measured peak (cgroup anon + shmem), bytes.
    pub measured_bytes: u64,
    /// Predicted with the coefficients the fit started from.
    pub before_bytes: u64,
    /// Predicted with the fitted ones.
    pub after_bytes: u64,
}

/// One run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Its name (design) or directory (`--from`).
    pub name: String,
    /// Where its probe files are.
    pub dir: String,
    /// Seconds it took, when calibrate made it.
    pub seconds: Option<f64>,
    /// The job the probe observed, as a job spec.
    pub job: serde_json::Value,
    /// Its phases.
    pub phases: Vec<PhaseFit>,
}

/// Which runs move one coefficient.
#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    /// The coefficient.
    pub name: &'static str,
    /// Per run, its largest effect on a measured phase, as a share of the
    /// phase, for a 100 % change (a 0 default: a change of 1).
    pub effect: Vec<f64>,
    /// Runs that it moves by 1 % or more.
    pub moved_by: usize,
}

/// `headroom calibrate`'s report (with or without `--from`).
#[derive(Debug, Clone, Serialize)]
pub struct CalibrateReport {
    /// The stack the runs ran on.
    pub stack: Option<Stack>,
    /// The machine's facts (not read with `--from`: the runs may be another machine's).
    pub machine: Option<Machine>,
    /// The runs.
    pub runs: Vec<RunReport>,
    /// Which runs move which fitted coefficient, on the observed jobs.
    pub coverage: Vec<Coverage>,
    /// Read directly off the runs.
    pub measured: Vec<Direct>,
    /// Fitted.
    pub fitted: Vec<Moved>,
    /// Kept, and why.
    pub kept: Vec<Stayed>,
    /// The coefficients written.
    pub coefficients: Coefficients,
    /// The GPU step.
    pub gpu: Option<GpuOutcome>,
    /// Where the file went (none: not written).
    pub written_to: Option<String>,
    /// Wall time, seconds.
    pub seconds: f64,
}

fn pct(e: f64) -> String {
    format!("{:+.1}%", e * 100.0)
}

impl CalibrateReport {
    fn write_coverage(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            w,
            "which run moves which coefficient (largest phase change for a 100 % change; . under 1 %):"
        )?;
        write!(w, "  {:<28}", "coefficient")?;
        for i in 0..self.runs.len() {
            write!(w, " {:>5}", format!("r{}", i + 1))?;
        }
        writeln!(w, "  runs")?;
        for c in &self.coverage {
            write!(w, "  {:<28}", c.name)?;
            for e in &c.effect {
                let cell = if *e < super::columns::MOVES {
                    ".".to_string()
                } else {
                    format!("{:.0}%", e * 100.0)
                };
                write!(w, " {cell:>5}")?;
            }
            writeln!(w, "  {}", c.moved_by)?;
        }
        Ok(())
    }
}

impl Report for CalibrateReport {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        if let Some(s) = &self.stack {
            writeln!(w, "stack: {}", s.line())?;
        }
        if let Some(m) = &self.machine {
            super::machine_text::write(m, w)?;
        }
        writeln!(
            w,
            "runs (cgroup anon + shmem; predicted before -> after the fit):"
        )?;
        for (i, r) in self.runs.iter().enumerate() {
            let took = r.seconds.map(|s| format!(", {s:.0} s")).unwrap_or_default();
            writeln!(w, "  r{} {}{took}", i + 1, r.name)?;
            for p in &r.phases {
                let m = p.measured_bytes as f64;
                writeln!(
                    w,
                    "    {:<14} {:>10}  {:>7} -> {:>7}",
                    p.phase,
                    fmt_bytes(p.measured_bytes),
                    pct((p.before_bytes as f64 - m) / m),
                    pct((p.after_bytes as f64 - m) / m)
                )?;
            }
        }
        self.write_coverage(w)?;
        for d in &self.measured {
            let kept = match d.kept {
                Some(why) => format!(
                    ", from {} to {}: {why}",
                    show(d.name, d.range.0),
                    show(d.name, d.range.1)
                ),
                None => String::new(),
            };
            writeln!(
                w,
                "measured: {} = {} ({}; median of {} runs{kept})",
                d.name,
                show(d.name, d.value),
                d.what,
                d.runs
            )?;
        }
        for m in &self.fitted {
            writeln!(
                w,
                "fitted:   {} {} -> {} (separation {:.2})",
                m.name,
                show(&m.name, m.from),
                show(&m.name, m.to),
                m.separation
            )?;
        }
        for s in &self.kept {
            writeln!(
                w,
                "kept:     {} = {}: {}",
                s.name,
                show(&s.name, s.value),
                s.why
            )?;
        }
        if let Some(g) = &self.gpu {
            super::gpu_text::write(g, w)?;
        }
        match &self.written_to {
            Some(p) => writeln!(w, "written to {p} (plan --calibration {p})")?,
            None => writeln!(w, "not written (no config directory; give --out)")?,
        }
        writeln!(w, "took {:.0} s", self.seconds)
    }
}

/// A coefficient's value as people read it: bytes for byte counts.
pub fn show(name: &str, v: f64) -> String {
    match crate::estimate::coeff_table::find(name).map(|k| k.unit) {
        Some(crate::estimate::coeff_table::Unit::Bytes) => fmt_bytes(v.max(0.0) as u64),
        Some(crate::estimate::coeff_table::Unit::BytesPer) => format!("{v:.0} B"),
        _ => format!("{v:.3}"),
    }
}
