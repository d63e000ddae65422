//! `calibrate --from DIR`: the framework coefficients fitted from a real
//! job that `watch --probe` recorded. The Python runtime is read directly
//! (the main process's anonymous memory once torch and PyG are imported);
//! the rest are fitted to the per-phase peaks by ridge-regularised least
//! squares on the estimator itself: each coefficient's effect on each phase
//! is the estimate's own finite difference, the residuals are relative to
//! the measured peaks, and a coefficient the run does not exercise (no
//! workers, no evaluation) has no effect and keeps its value. Pure: no I/O.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::estimate::coeff_table::{Coefficient, TABLE};
use crate::estimate::{Coefficients, estimate};
use crate::probe::phases::PhaseRow;
use crate::probe::report::{ProbeReport, job_of};
use crate::spec::Job;

/// A 100 % change of a coefficient costs as much as a 1 % phase error: the
/// run decides wherever it can, the prior only where it cannot.
pub(super) const RIDGE: f64 = 1e-4;

/// One coefficient the fit changed.
#[derive(Debug, Clone, Serialize)]
pub struct Moved {
    /// Its name.
    pub name: String,
    /// Before.
    pub from: f64,
    /// After.
    pub to: f64,
}

/// The fit and the phases before and after it.
#[derive(Debug, Clone, Serialize)]
pub struct FromRun {
    /// The coefficients to write.
    pub coefficients: Coefficients,
    /// What moved.
    pub moved: Vec<Moved>,
    /// Predicted against measured with the coefficients the fit started from.
    pub before: Vec<PhaseRow>,
    /// The same with the fitted coefficients.
    pub after: Vec<PhaseRow>,
}

fn phase_bytes(job: &Job, c: &Coefficients) -> Vec<(&'static str, f64)> {
    estimate(job, &job.settings, c)
        .phases
        .iter()
        .map(|p| (p.phase.as_str(), p.host_bytes as f64))
        .collect()
}

fn rows(job: &Job, c: &Coefficients, measured: &[PhaseRow]) -> Vec<PhaseRow> {
    phase_bytes(job, c)
        .into_iter()
        .filter_map(|(name, p)| {
            let m = measured.iter().find(|r| r.phase == name)?;
            Some(PhaseRow {
                predicted_bytes: p as u64,
                rel_error: m.measured_bytes.map(|m| (p - m as f64) / m.max(1) as f64),
                ..m.clone()
            })
        })
        .collect()
}

/// Fits `base` to the run `r`; `provenance` says where the figures came from.
pub fn fit_from(r: &ProbeReport, base: &Coefficients, provenance: &str) -> Result<FromRun> {
    let job = job_of(&r.observed)?;
    let measured: Vec<(usize, f64)> = r
        .phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p.measured_bytes? as f64)))
        .filter(|&(_, m)| m > 0.0)
        .collect();
    if measured.is_empty() {
        return Err(Error::bad("the probed run has no sample inside any phase"));
    }
    let mut c = base.clone();
    // What was read directly is not fitted again.
    let direct = measure_directly(r, &job, &mut c, provenance);
    let start = phase_bytes(&job, &c);
    let ks: Vec<&Coefficient> = TABLE
        .iter()
        .filter(|k| k.fitted && !direct.contains(&k.name))
        .collect();
    // Sensitivity of each measured phase (relative) to a step of each knob
    // the size of its prior scale.
    // A coefficient whose default is 0 (nothing kept) moves in units of 1.
    let scale: Vec<f64> = ks
        .iter()
        .map(|k| match (k.get)(base).abs() {
            0.0 => 1.0,
            v => v,
        })
        .collect();
    let mut a = vec![vec![0.0; ks.len()]; measured.len()];
    for (j, k) in ks.iter().enumerate() {
        let mut moved = c.clone();
        (k.set)(&mut moved, (k.get)(&c) + scale[j]);
        let after = phase_bytes(&job, &moved);
        for (row, &(i, m)) in measured.iter().enumerate() {
            a[row][j] = (after[i].1 - start[i].1) / m;
        }
    }
    let b: Vec<f64> = measured
        .iter()
        .map(|&(i, m)| (m - start[i].1) / m)
        .collect();
    let step = super::ridge::solve(&a, &b, RIDGE);
    let mut moved = Vec::new();
    for (j, k) in ks.iter().enumerate() {
        if step[j].abs() < 1e-6 {
            continue;
        }
        let from = (k.get)(&c);
        (k.set)(&mut c, from + step[j] * scale[j]);
        let to = (k.get)(&c);
        if to != from {
            c.provenance.insert(
                k.name.into(),
                format!("fitted to the per-phase peaks, {provenance}"),
            );
            moved.push(Moved {
                name: k.name.into(),
                from,
                to,
            });
        }
    }
    c.source = format!("calibrate --from ({provenance})");
    Ok(FromRun {
        before: rows(&job, base, &r.phases),
        after: rows(&job, &c, &r.phases),
        coefficients: c,
        moved,
    })
}

/// The coefficients the probe reads directly, set in `c` and named in the
/// result: the runtime (the main process's memory once torch_geometric is
/// imported) and what glibc kept of the CSC builds (its memory as training
/// starts, above the runtime and the data). Worker pages are not read from the workers' USS:
/// pages the workers of one loader share with each other but no longer with
/// the main process (it rewrote its copy after the fork) are in no process's
/// USS, yet the cgroup charges them; they are fitted with the rest.
fn measure_directly(
    r: &ProbeReport,
    job: &Job,
    c: &mut Coefficients,
    provenance: &str,
) -> Vec<&'static str> {
    let o = &r.observed;
    let mut direct = Vec::new();
    let mut set = |c: &mut Coefficients, name: &'static str, what: &str| {
        c.provenance
            .insert(name.into(), format!("measured: {what}, {provenance}"));
        direct.push(name);
    };
    if let Some(m) = o.runtime_mem {
        c.runtime_bytes = m.anon + m.shmem;
        set(
            c,
            "runtime_bytes",
            "the main process's RssAnon + RssShmem once torch_geometric was imported",
        );
    }
    if let Some(m) = o.first_pass_mem {
        // The build phase's moment without what is kept and without its
        // transient: the runtime, the data and the CSCs, all in the main
        // process (the CSCs in its shared memory when workers share them).
        c.build_heap_retained = 0.0;
        let est = estimate(job, &job.settings, c);
        let extra = est.dataset.csc_build_extra;
        let built = est
            .phases
            .iter()
            .find(|p| p.phase.as_str() == "build_loaders");
        if let (Some(b), true) = (built, extra > 0) {
            let expected = b.host_bytes.saturating_sub(extra);
            c.build_heap_retained =
                (m.anon + m.shmem).saturating_sub(expected) as f64 / extra as f64;
            set(
                c,
                "build_heap_retained",
                "the main process's anon + shmem as training starts, less the runtime, the data and the CSCs, over the CSC build transient",
            );
        }
    }
    direct
}
