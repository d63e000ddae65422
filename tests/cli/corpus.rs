//! The real-run corpus (benches/pyg, tests/fixtures/pyg/corpus.jsonl): real
//! PyTorch + PyG NeighborLoader runs in a memory cgroup, each planned here
//! with the default coefficients. Bounds of issue 11, in both accounting
//! modes: median |error| ≤ 5 %, max ≤ 10 %, and no run predicted more than
//! 5 % below its measured peak (the error that gets jobs killed).

use headroom::calibrate::corpus::{EMBEDDED, accuracy, compare};
use headroom::estimate::Coefficients;

#[test]
fn every_recorded_run_is_planned_within_the_bounds() {
    let rows = compare(EMBEDDED, &Coefficients::default()).unwrap();
    for r in &rows {
        eprintln!(
            "{:<28} {:<8} measured {:>14} predicted {:>14} {:+6.1}% ({})",
            r.id,
            r.accounting,
            r.measured,
            r.predicted,
            100.0 * r.error(),
            r.phase
        );
    }
    for (mode, max) in MAX_OVER {
        let a = accuracy(&rows, mode);
        eprintln!("{mode}: {a:?}");
        assert!(a.rows >= 40, "{mode}: only {} runs recorded", a.rows);
        assert!(a.median_abs <= 0.05, "{mode}: median |error| {a:?}");
        assert!(a.max_abs <= max, "{mode}: max |error| {a:?}");
        assert_eq!(a.under_5pct, 0, "{mode}: under-predicted runs {a:?}");
    }
}

#[test]
fn the_limit_plan_asks_for_is_one_the_real_run_survived() {
    // Rows whose smallest surviving cgroup limit was bisected (to 64 MiB):
    // `--mem` as plan gives it (the peak with the default 10 % margin) must
    // be at least that limit, or a user following it is killed.
    let rows = compare(EMBEDDED, &Coefficients::default()).unwrap();
    let bisected: Vec<_> = rows
        .iter()
        .filter(|r| r.accounting == "cgroup")
        .filter_map(|r| r.smallest_limit.map(|l| (r, l)))
        .collect();
    assert!(bisected.len() >= 3, "only {} bisected runs", bisected.len());
    for (r, limit) in bisected {
        let asked = r.predicted as f64 / 0.9;
        eprintln!("{}: plan asks {asked:.0}, survived {limit}", r.id);
        assert!(
            asked >= limit as f64,
            "{}: plan asks {asked:.0} B, the run needed {limit} B",
            r.id
        );
    }
}

#[test]
fn a_bad_corpus_line_is_an_error_naming_the_line() {
    let err = compare("{\"id\": 1}\n", &Coefficients::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("corpus line 1"), "{err}");
}

use crate::util::pyg_python;

/// Largest over-prediction per accounting: the 10 %.
const MAX_OVER: [(&str, f64); 2] = [("cgroup", 0.10), ("rss_sum", 0.10)];

/// A fresh run of a recorded case, over-predicted: its RSS moves from run to
/// run with the file pages it holds (pl200k-fp16: +10.5 % fresh against
/// its row's −2.2 %), so RSS sum gets 5 points more here; the under side
/// stays at 5 % in both modes.
const FRESH_MAX_OVER: [(&str, f64); 2] = [("cgroup", 0.10), ("rss_sum", 0.15)];

#[test]
fn a_fresh_real_run_is_planned_within_the_bounds_where_pyg_is_importable() {
    let Some(py) = pyg_python() else {
        eprintln!(
            "skipped: no benches/pyg/.venv with torch_geometric and torch_sparse (run benches/pyg/setup.sh)"
        );
        return;
    };
    if !nix_is_root() {
        eprintln!("skipped: the runner needs root for its memory cgroup");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.jsonl");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = std::process::Command::new(py)
        .arg(root.join("benches/pyg/run_corpus.py"))
        .args([
            "--headroom",
            env!("CARGO_BIN_EXE_headroom"),
            "--limit",
            "4G",
            "--out",
        ])
        .arg(&out)
        .arg("pl200k-fp16")
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let rows = compare(&text, &Coefficients::default()).unwrap();
    assert_eq!(rows.len(), 2, "one run, two accounting modes: {text}");
    for r in &rows {
        eprintln!("{} {}: {:+.1}%", r.id, r.accounting, 100.0 * r.error());
        // The same run repeated moves (file pages in RSS, the heap's timing).
        let max = FRESH_MAX_OVER
            .iter()
            .find(|m| m.0 == r.accounting)
            .map_or(0.10, |m| m.1);
        assert!(r.error() > -0.05 && r.error() < max, "{r:?}");
    }
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Fitted coefficients that fewer than five corpus runs move, kept until
/// runs that exercise them are recorded: the heap kept in later epochs while
/// workers forked from the grown heap share it (persistent evaluation
/// workers, or training workers forked again each epoch, on a CPU-trained
/// job). A derivation from the copy-on-write mechanism alone (an old copy of
/// the whole heap) was tried and predicted those runs 8-15 % low, so the
/// mechanism holds more than that (issue 22 item 6, growth over epochs).
///
/// `cpu_heap_large_shared_resident` bounds the last by the step's
/// heap-resident share; it is fitted to the 45 development runs of the
/// spent random sets in this regime (none more than 5 % low), and the
/// corpus has two such runs.
const THIN_PENDING_RUNS: [&str; 3] = [
    "cpu_heap_small_shared",
    "cpu_heap_large_shared",
    "cpu_heap_large_shared_resident",
];

/// The corpus rows (either accounting) whose predicted peak a 20 % rise of
/// each fitted coefficient moves: a coefficient moved by fewer than five
/// rows is fitted to too few runs to stand (issue 22). A ratchet: a new
/// thin coefficient fails, and so does one of the pending that has its runs.
#[test]
fn every_fitted_coefficient_is_moved_by_at_least_five_corpus_runs() {
    use headroom::estimate::coeff_table::TABLE;
    let base = Coefficients::default();
    let before = compare(EMBEDDED, &base).unwrap();
    let mut thin = Vec::new();
    for k in TABLE.iter().filter(|k| k.fitted) {
        let mut moved = base.clone();
        let v = (k.get)(&base);
        (k.set)(&mut moved, if v == 0.0 { 1.0 } else { v * 1.2 });
        let after = compare(EMBEDDED, &moved).unwrap();
        let mut ids: Vec<&str> = before
            .iter()
            .zip(&after)
            .filter(|(a, b)| a.predicted != b.predicted)
            .map(|(a, _)| a.id.as_str())
            .collect();
        ids.dedup();
        eprintln!("{:<32} moves {:>2} runs", k.name, ids.len());
        if ids.len() < 5 {
            thin.push(k.name);
        }
    }
    assert_eq!(
        thin, THIN_PENDING_RUNS,
        "fitted coefficients moved by fewer than five corpus runs"
    );
}

/// The random sets (tests/fixtures/pyg/draws): each a seeded draw over the
/// options users run, none fitted to. sealed-2611251 was scored once before
/// the model changes of issue 22 and is spent (its rows were read after).
const RANDOM_SETS: [(&str, &str); 2] = [
    (
        "sealed-2611251",
        include_str!("../fixtures/pyg/sealed-2611251.jsonl"),
    ),
    (
        "dev-2611252",
        include_str!("../fixtures/pyg/dev-2611252.jsonl"),
    ),
];

/// The sealed set of GCN draws (draws README): scored once with the model
/// before the GCN self-loop change; its figures now are printed apart, not
/// in the band (a set of one conv would weigh GCN's errors twice).
const SEALED_GCN: (&str, &str) = (
    "sealed-gcn-2611254",
    include_str!("../fixtures/pyg/sealed-gcn-2611254.jsonl"),
);

/// The sealed set of GIN draws, likewise (GINConv's saved tensors).
const SEALED_GIN: (&str, &str) = (
    "sealed-gin-2611262",
    include_str!("../fixtures/pyg/sealed-gin-2611262.jsonl"),
);

/// Sealed sets printed apart, with their runs: the two above, and the two
/// drawn on 2026-11-27 (GAT's GPU step; a fresh random set), whose first
/// host scores are in docs/accuracy.md.
const PRINTED_APART: [((&str, &str), usize); 5] = [
    (SEALED_GCN, 12),
    (SEALED_GIN, 12),
    (
        (
            "sealed-gat-2611291",
            include_str!("../fixtures/pyg/sealed-gat-2611291.jsonl"),
        ),
        10,
    ),
    (
        (
            "sealed-2611290",
            include_str!("../fixtures/pyg/sealed-2611290.jsonl"),
        ),
        12,
    ),
    (
        (
            "sealed-2611292",
            include_str!("../fixtures/pyg/sealed-2611292.jsonl"),
        ),
        12,
    ),
];

/// Rows whose run did not do what its job spec says, with why (the draws'
/// README): left out of every figure, and printed.
const HARNESS_DEFECTS: [(&str, &str); 2] = [
    (
        "s2611252-12-powerlaw-sage3-b4096-w1",
        "--is-sorted given with --to-undirected, as s2611251-16 (fixed in the harness at 2233212)",
    ),
    (
        "s2611251-16-powerlaw-gcn2-b8192-w4",
        "--is-sorted given with --to-undirected: to_undirected re-sorted the stored edge_index \
     by source, so is_sorted=True sampled about 900 edges a batch (fixed in the harness at 2233212)",
    ),
];

/// Every row of the random sets planned once (both accounting modes), the
/// harness defects left out; each set's figures printed apart.
fn random_rows() -> Vec<headroom::calibrate::corpus::Compared> {
    let mut out = Vec::new();
    for (set, text) in RANDOM_SETS {
        let kept: Vec<_> = compare(text, &Coefficients::default())
            .unwrap()
            .into_iter()
            .filter(|r| !HARNESS_DEFECTS.iter().any(|d| d.0 == r.id))
            .collect();
        for mode in ["cgroup", "rss_sum"] {
            let a = accuracy(&kept, mode);
            eprintln!(
                "{set} {mode}: {} runs, median |error| {:.1} %, max {:.1} %, {} more than 5 % low",
                a.rows,
                100.0 * a.median_abs,
                100.0 * a.max_abs,
                a.under_5pct
            );
        }
        out.extend(kept);
    }
    out
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)]
}

/// plan's uncertainty band (src/plan/band.rs) is the model's error on the
/// random sets as the model is now: a change to the model that moves the
/// errors fails here until the band is brought up to date with it.
#[test]
fn plans_uncertainty_band_is_the_models_error_on_the_random_sets() {
    use headroom::plan::band::{CGROUP, RSS_SUM};
    for d in HARNESS_DEFECTS {
        eprintln!("left out: {}: {}", d.0, d.1);
    }
    let rows = random_rows();
    for (set, runs) in PRINTED_APART {
        let one = compare(set.1, &Coefficients::default()).unwrap();
        assert_eq!(
            one.len(),
            2 * runs,
            "{}: {runs} runs in both accounting modes",
            set.0
        );
        for mode in ["cgroup", "rss_sum"] {
            let a = accuracy(&one, mode);
            eprintln!(
                "{} {mode} (not in the band): {} runs, median |error| {:.1} %, max {:.1} %, {} more than 5 % low",
                set.0,
                a.rows,
                100.0 * a.median_abs,
                100.0 * a.max_abs,
                a.under_5pct
            );
        }
    }
    let mut measured_all = Vec::new();
    for (mode, band) in [("cgroup", CGROUP), ("rss_sum", RSS_SUM)] {
        let mut e: Vec<f64> = rows
            .iter()
            .filter(|r| r.accounting == mode)
            .map(|r| r.error())
            .collect();
        e.sort_by(f64::total_cmp);
        let measured = (
            e.len(),
            percentile(&e, 0.1),
            percentile(&e, 0.9),
            e.first().copied().unwrap_or(0.0),
        );
        eprintln!(
            "{mode}: {} runs, p10 {:+.3}, p90 {:+.3}, worst under {:+.3}",
            measured.0, measured.1, measured.2, measured.3
        );
        measured_all.push((mode, band, measured));
    }
    for (mode, band, measured) in measured_all {
        assert_eq!(band.runs, measured.0, "{mode}: runs");
        for (name, have, want) in [
            ("p10", band.p10, measured.1),
            ("p90", band.p90, measured.2),
            ("worst_under", band.worst_under, measured.3),
        ] {
            assert!(
                (have - want).abs() < 0.001,
                "{mode} {name}: band.rs says {have:+.3}, the random sets give {want:+.3}"
            );
        }
    }
}
