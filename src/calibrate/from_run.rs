//! Probed runs read for the fit: each `watch --probe` directory becomes the
//! job the probe observed and its measured phase peaks, and what the probe
//! reads directly is set before anything is fitted: the runtime (the main
//! process's memory once torch_geometric was imported: anonymous + shared)
//! and, for the user's own job, its library pages (RSS-sum accounting).
//! Several runs give the median of each. What glibc kept of the CSC builds
//! is fitted with the rest: the main process's memory as training starts,
//! read as retention, counted every byte the model misses there and was
//! then counted again in every later phase, where the step's tensors reuse
//! that heap (probe_variants.sh A, two bases: +4.0 % default, +5.3 % with it).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::columns::RunData;
use crate::error::{Error, Result};
use crate::estimate::Coefficients;
use crate::probe::report::{ProbeReport, job_of, load as load_report};
use crate::spec::Stack;

/// One probed run.
#[derive(Debug, Clone)]
pub struct Probed {
    /// Its directory.
    pub dir: PathBuf,
    /// The probe's report (observed job, phases).
    pub report: ProbeReport,
    /// What the fit reads.
    pub data: RunData,
    /// The stack the probe recorded, when it saw PyG imported.
    pub stack: Option<Stack>,
    /// The main process's largest RssFile at any of its events (library
    /// pages touched by then: torch's kernels load as they are first used).
    pub file_peak: Option<u64>,
}

/// A coefficient read off the runs rather than fitted.
#[derive(Debug, Clone, Serialize)]
pub struct Direct {
    /// Its name.
    pub name: &'static str,
    /// The value set (the median over the runs that show it).
    pub value: f64,
    /// What was read.
    pub what: &'static str,
    /// How many runs showed it.
    pub runs: usize,
    /// The smallest and largest value a run showed.
    pub range: (f64, f64),
    /// Why the value in use was kept rather than set from the runs: the
    /// default lies within `range` (the runs do not tell it apart from
    /// theirs), or the runs give only a floor under it.
    pub kept: Option<&'static str>,
}

/// Reads the probed run in `dir`, predicted with `c`.
pub fn load(dir: &Path, c: &Coefficients) -> Result<Probed> {
    if !dir.is_dir() {
        return Err(Error::bad(format!(
            "--from {}: not a directory (give the --out DIR of watch --probe)",
            dir.display()
        )));
    }
    let report = load_report(dir, c)?;
    let job = job_of(&report.observed)?;
    let measured: Vec<(String, f64)> = report
        .phases
        .iter()
        .filter_map(|p| Some((p.phase.clone(), p.measured_bytes? as f64)))
        .filter(|&(_, m)| m > 0.0)
        .collect();
    if measured.is_empty() {
        return Err(Error::bad(format!(
            "{}: the probed run has no sample inside any phase",
            dir.display()
        )));
    }
    let file_peak = std::fs::read_to_string(dir.join(crate::probe::EVENTS_FILE))
        .ok()
        .and_then(|t| {
            crate::probe::events::parse(&t)
                .events
                .iter()
                .map(|e| e.mem.file)
                .max()
        })
        .filter(|&f| f > 0);
    let stack = report
        .observed
        .spec
        .get("stack")
        .and_then(|s| serde_json::from_value(s.clone()).ok());
    Ok(Probed {
        dir: dir.to_path_buf(),
        data: RunData {
            name: dir.display().to_string(),
            job,
            measured,
        },
        report,
        stack,
        file_peak,
    })
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Sets in `c` what the runs show directly and returns it; `provenance`
/// says where the runs came from. `own_job`: the runs are the user's own
/// job, whose library pages (what its script imports: numpy, pandas, ogb...)
/// are its own; calibrate's designed runs import less, so they leave that
/// figure (RSS-sum accounting only) at its value.
pub fn measure_directly(
    runs: &[Probed],
    c: &mut Coefficients,
    provenance: &str,
    own_job: bool,
) -> Vec<Direct> {
    let mut out = Vec::new();
    // `floor`: the runs show a lower bound of the figure, not the figure.
    let mut set = |c: &mut Coefficients,
                   name: &'static str,
                   what: &'static str,
                   v: Vec<f64>,
                   floor: bool| {
        let range = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        let (runs, Some(value)) = (v.len(), median(v)) else {
            return;
        };
        if let Some(k) = crate::estimate::coeff_table::find(name) {
            let now = (k.get)(c);
            let kept = if range.0 <= now && now <= range.1 {
                Some("the default lies within them and is kept")
            } else if floor && value < now {
                Some(
                    "the designed runs import only torch and PyG, a training script imports more: a floor under the default, which is kept",
                )
            } else {
                None
            };
            if kept.is_none() {
                (k.set)(c, value.clamp(k.bounds.0, k.bounds.1));
                c.provenance
                    .insert(name.into(), format!("measured: {what}, {provenance}"));
            }
            out.push(Direct {
                name,
                value: if kept.is_some() { value } else { (k.get)(c) },
                what,
                runs,
                range,
                kept,
            });
        }
    };
    let rt: Vec<_> = runs
        .iter()
        .filter_map(|r| r.report.observed.runtime_mem)
        .collect();
    set(
        c,
        "runtime_bytes",
        "the main process's RssAnon + RssShmem once torch_geometric was imported",
        rt.iter().map(|m| (m.anon + m.shmem) as f64).collect(),
        !own_job,
    );
    // A designed run's library pages are a floor too: it raises the figure
    // on a stack that maps more of them (the default's stack mapped 520 MiB
    // in the corpus of 2026-11-23, the same torch and PyG 330 MiB in a venv
    // built again on 2026-11-26: docs/accuracy.md, "The stack's library pages").
    set(
        c,
        "runtime_file_bytes",
        "the main process's largest RssFile (library pages) at any probe event",
        runs.iter()
            .filter_map(|r| r.file_peak)
            .map(|f| f as f64)
            .collect(),
        !own_job,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str) -> Probed {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/probe")
            .join(name);
        load(&dir, &Coefficients::default()).expect("a recorded probed run")
    }

    #[test]
    fn a_designed_runs_runtime_is_a_floor_and_an_own_jobs_is_the_figure() {
        let runs = [run("pl200k-b512"), run("pl200k-b2048")];
        let measured: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.report.observed.runtime_mem)
            .map(|m| (m.anon + m.shmem) as f64)
            .collect();
        assert_eq!(measured.len(), 2);
        let hi = measured.iter().copied().fold(0.0, f64::max);
        // A value in use above every run's runtime.
        let above = Coefficients {
            runtime_bytes: hi as u64 + (1 << 20),
            ..Coefficients::default()
        };
        // The user's own job: set to what its runs show (their median).
        let mut own = above.clone();
        let d = measure_directly(&runs, &mut own, "test", true);
        let rt = d
            .iter()
            .find(|d| d.name == "runtime_bytes")
            .expect("measured");
        assert_eq!(rt.kept, None);
        assert_eq!(
            own.runtime_bytes,
            ((measured[0] + measured[1]) / 2.0) as u64
        );
        // The same runs as calibrate's designed ones: a floor under the
        // value in use, which stays, and the report says why.
        let mut designed = above.clone();
        let d = measure_directly(&runs, &mut designed, "test", false);
        let rt = d
            .iter()
            .find(|d| d.name == "runtime_bytes")
            .expect("measured");
        assert_eq!(designed.runtime_bytes, above.runtime_bytes);
        assert!(
            rt.kept.is_some_and(|w| w.contains("floor")),
            "{:?}",
            rt.kept
        );
        // Below every run: raised to them, designed or not.
        let below = Coefficients {
            runtime_bytes: 1 << 20,
            ..Coefficients::default()
        };
        let mut designed = below.clone();
        measure_directly(&runs, &mut designed, "test", false);
        assert_eq!(designed.runtime_bytes, own.runtime_bytes);
    }

    #[test]
    fn a_designed_runs_library_pages_raise_the_figure_and_never_lower_it() {
        let runs = [run("pl200k-b512"), run("pl200k-b2048")];
        let files: Vec<u64> = runs.iter().filter_map(|r| r.file_peak).collect();
        assert_eq!(files.len(), 2, "the fixtures record RssFile");
        let (lo, hi) = (files[0].min(files[1]), files[0].max(files[1]));
        let with = |v: u64| Coefficients {
            runtime_file_bytes: v,
            ..Coefficients::default()
        };
        // A stack mapping more library pages than the value in use: raised.
        let mut designed = with(lo / 2);
        measure_directly(&runs, &mut designed, "test", false);
        assert!(designed.runtime_file_bytes >= lo, "{designed:?}");
        // Fewer: a designed run imports less than a script, so it stays.
        let mut designed = with(hi * 2);
        let d = measure_directly(&runs, &mut designed, "test", false);
        assert_eq!(designed.runtime_file_bytes, hi * 2);
        let f = d.iter().find(|d| d.name == "runtime_file_bytes");
        assert!(f.and_then(|f| f.kept).is_some_and(|w| w.contains("floor")));
    }
}
