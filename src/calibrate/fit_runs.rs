//! One fit of a set of probed runs, for the designed runs and `--from`
//! alike: what the runs show directly is set first, then the coefficients
//! they separate are fitted, and the report gets each run's phases before
//! and after and which run moves which coefficient.

use super::columns::{RunData, columns};
use super::fit::{Fit, fit, phase_errors};
use super::from_run::{Direct, Probed, measure_directly};
use super::report::{Coverage, PhaseFit, RunReport};
use crate::estimate::Coefficients;
use crate::estimate::coeff_table::TABLE;

/// The fit and what the report shows of it.
pub struct Fitted {
    /// The coefficients after it.
    pub coefficients: Coefficients,
    /// Set directly.
    pub measured: Vec<Direct>,
    /// Fitted and kept.
    pub fit: Fit,
    /// Which run moves which fitted coefficient.
    pub coverage: Vec<Coverage>,
    /// Each run's phases.
    pub runs: Vec<RunReport>,
}

/// Which of the table's fitted coefficients each run moves, at `c`.
pub fn coverage(data: &[RunData], c: &Coefficients) -> Vec<Coverage> {
    let knobs: Vec<_> = TABLE.iter().filter(|k| k.fitted).collect();
    let cols = columns(data, c, &knobs);
    knobs
        .iter()
        .enumerate()
        .map(|(j, k)| Coverage {
            name: k.name,
            effect: (0..data.len()).map(|r| cols.reach(j, r)).collect(),
            moved_by: cols.moved_by(j, data.len()).len(),
        })
        .collect()
}

/// Fits `runs` (`seconds`: how long each took, when calibrate made it;
/// `own_job`: they are the user's own job, `--from`).
pub fn fit_runs(
    runs: &[Probed],
    seconds: Vec<Option<f64>>,
    provenance: &str,
    own_job: bool,
) -> Fitted {
    let base = Coefficients::default();
    let mut c = base.clone();
    let measured = measure_directly(runs, &mut c, provenance, own_job);
    let direct: Vec<&str> = measured.iter().map(|d| d.name).collect();
    let data: Vec<RunData> = runs.iter().map(|r| r.data.clone()).collect();
    let result = fit(&data, &c, &direct, provenance);
    let before = phase_errors(&data, &base);
    let after = phase_errors(&data, &result.coefficients);
    let reports = runs
        .iter()
        .zip(seconds)
        .enumerate()
        .map(|(i, (r, seconds))| RunReport {
            name: r.data.name.clone(),
            dir: r.dir.display().to_string(),
            seconds,
            job: r.report.observed.spec.clone(),
            phases: before
                .iter()
                .zip(&after)
                .filter(|(b, _)| b.0 == i)
                .map(|(b, a)| PhaseFit {
                    phase: b.1.clone(),
                    measured_bytes: b.2 as u64,
                    before_bytes: b.3 as u64,
                    after_bytes: a.3 as u64,
                })
                .collect(),
        })
        .collect();
    let mut coefficients = result.coefficients.clone();
    coefficients.regime = crate::estimate::Regime::of(data.iter().map(|d| &d.job));
    Fitted {
        coverage: coverage(&data, &c),
        coefficients,
        measured,
        fit: result,
        runs: reports,
    }
}
