//! What each coefficient does to each measured phase of a set of runs: the
//! estimate's own finite difference, relative to the phase's measured peak.
//! One matrix serves the fit (its columns are the knobs), the design check
//! (which runs move which coefficient) and the report of what a set of
//! runs cannot tell apart. Pure: jobs and measurements in, numbers out.

use serde::Serialize;

use crate::estimate::coeff_table::Coefficient;
use crate::estimate::{Coefficients, estimate};
use crate::spec::Job;

/// A relative effect below this (1 % of a phase for a 100 % change of the
/// coefficient) is a run not exercising the mechanism: a run-to-run spread
/// of a few percent would swamp it.
pub const MOVES: f64 = 0.01;

/// One run as the fit sees it.
#[derive(Debug, Clone)]
pub struct RunData {
    /// A name for reports (the run's directory or design name).
    pub name: String,
    /// The job the probe observed, as the planner takes it.
    pub job: Job,
    /// Measured peak per phase, bytes (phases without a sample are absent).
    pub measured: Vec<(String, f64)>,
}

/// One row of the matrix: a measured phase of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowId {
    /// Index of the run in the set.
    pub run: usize,
    /// The phase.
    pub phase: String,
}

/// The sensitivity matrix at a set of coefficients.
#[derive(Clone)]
pub struct Columns {
    /// The coefficients, one column each.
    pub knobs: Vec<&'static Coefficient>,
    /// The measured phases, one row each.
    pub rows: Vec<RowId>,
    /// `a[row][knob]`: the phase's change, over its measured bytes, when the
    /// knob rises by `scale[knob]`.
    pub a: Vec<Vec<f64>>,
    /// `b[row]`: (measured − predicted) / measured.
    pub b: Vec<f64>,
    /// The step of each knob: its value, or 1 where it is 0.
    pub scale: Vec<f64>,
}

/// Host bytes per phase of `job` with `c`, less the workers' page tables:
/// a run's measured memory (RSS, or a cgroup's anon + shmem) holds no
/// kernel memory, so no coefficient is fitted to absorb it.
pub fn phase_bytes(job: &Job, c: &Coefficients) -> Vec<(&'static str, f64)> {
    estimate(job, &job.settings, c)
        .phases
        .iter()
        .map(|p| {
            (
                p.phase.as_str(),
                p.host_bytes.saturating_sub(p.kernel_bytes) as f64,
            )
        })
        .collect()
}

/// The matrix of `knobs` over every measured phase of `runs` at `c`.
pub fn columns(runs: &[RunData], c: &Coefficients, knobs: &[&'static Coefficient]) -> Columns {
    let scale: Vec<f64> = knobs
        .iter()
        .map(|k| match (k.get)(c).abs() {
            0.0 => 1.0,
            v => v,
        })
        .collect();
    let (mut rows, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for (i, run) in runs.iter().enumerate() {
        let at = phase_bytes(&run.job, c);
        let moved: Vec<Vec<(&str, f64)>> = knobs
            .iter()
            .zip(&scale)
            .map(|(k, s)| {
                let mut m = c.clone();
                (k.set)(&mut m, (k.get)(c) + s);
                phase_bytes(&run.job, &m)
            })
            .collect();
        for (phase, measured) in &run.measured {
            let Some(p) = at.iter().position(|(n, _)| n == phase) else {
                continue;
            };
            rows.push(RowId {
                run: i,
                phase: phase.clone(),
            });
            b.push((measured - at[p].1) / measured);
            a.push(
                moved
                    .iter()
                    .map(|m| (m[p].1 - at[p].1) / measured)
                    .collect(),
            );
        }
    }
    Columns {
        knobs: knobs.to_vec(),
        rows,
        a,
        b,
        scale,
    }
}

impl Columns {
    /// The largest effect of knob `j` on any measured phase of run `run`.
    pub fn reach(&self, j: usize, run: usize) -> f64 {
        self.rows
            .iter()
            .zip(&self.a)
            .filter(|(r, _)| r.run == run)
            .map(|(_, a)| a[j].abs())
            .fold(0.0, f64::max)
    }

    /// The runs (indices) in which knob `j` moves some phase by `MOVES` or more.
    pub fn moved_by(&self, j: usize, runs: usize) -> Vec<usize> {
        (0..runs).filter(|&r| self.reach(j, r) >= MOVES).collect()
    }

    /// The measured phases (rows) that knob `j` moves by `MOVES` or more.
    pub fn phases_moved(&self, j: usize) -> Vec<&RowId> {
        self.rows
            .iter()
            .zip(&self.a)
            .filter(|(_, a)| a[j].abs() >= MOVES)
            .map(|(r, _)| r)
            .collect()
    }

    /// Column `j` restricted to rows where some knob moves (for the fit).
    pub fn column(&self, j: usize) -> Vec<f64> {
        self.a.iter().map(|r| r[j]).collect()
    }
}
