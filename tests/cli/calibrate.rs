//! End-to-end tests of `headroom calibrate`: a Python without torch gets
//! the machine's facts and exit 0; bad input is one line and exit 2; glibc's
//! malloc thresholds are read from the running C library; `--from` fits one
//! recorded probed run (tests/fixtures/probe/pl200k-w2) and two of another
//! job at two batch sizes (tests/fixtures/probe/pl200k-b512, -b2048), and
//! `plan` says which stack a calibration is for; where benches/pyg/.venv
//! exists, the whole designed calibration runs for real.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::{coefficient_source, fixture, headroom, json_of, python};

/// A `python3` that sees no site-packages (`-I -S`): no torch, whatever is installed.
fn bare_python(dir: &Path) -> Option<PathBuf> {
    let py = python()?;
    let p = dir.join("bare-python");
    std::fs::write(&p, format!("#!/bin/sh\nexec {py} -I -S \"$@\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(p)
}

#[test]
fn without_torch_it_measures_the_machine_says_so_in_one_line_and_exits_0() {
    let t = tempfile::tempdir().unwrap();
    let Some(py) = bare_python(t.path()) else {
        eprintln!("skipped: no python3 here");
        return;
    };
    let out = t.path().join("cal.yaml");
    let o = headroom()
        .args(["calibrate", "--python"])
        .arg(&py)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("has neither torch nor torch_geometric"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("page size") && stdout.contains("/dev/shm"),
        "{stdout}"
    );
    // Nothing was fitted, so nothing replaces a calibration file.
    assert!(!out.exists());
    // The same as JSON: this machine's page size, as getconf reads it.
    let j = json_of(
        headroom()
            .args(["calibrate", "--format", "json", "--python"])
            .arg(&py),
    );
    let page = std::process::Command::new("getconf")
        .arg("PAGESIZE")
        .output();
    if let Some(p) = page.ok().filter(|p| p.status.success()) {
        let want: u64 = String::from_utf8_lossy(&p.stdout).trim().parse().unwrap();
        assert_eq!(j["machine"]["page_size"].as_u64(), Some(want));
    }
    // The GPU step needs no PyG: it is made (here: said why it could not
    // be) unless --no-gpu.
    let note = j["gpu"]["note"].as_str().unwrap_or_default();
    if !Path::new("/dev/nvidia0").exists() {
        assert!(note.starts_with("no GPU"), "{}", j["gpu"]);
    } else {
        assert!(note.starts_with("GPU: "), "{}", j["gpu"]);
    }
    let off = json_of(
        headroom()
            .args(["calibrate", "--no-gpu", "--format", "json", "--python"])
            .arg(&py),
    );
    assert!(off["gpu"].is_null(), "{off}");
}

#[test]
fn a_python_that_cannot_run_is_one_line_and_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let o = headroom()
        .args(["calibrate", "--python"])
        .arg(t.path().join("no-such-python"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("no-such-python"), "{e}");
}

#[test]
fn glibcs_malloc_thresholds_are_read_from_the_running_library() {
    let probe = |env: Option<&str>| -> serde_json::Value {
        let mut cmd = headroom();
        cmd.arg("__malloc-probe").env_remove("GLIBC_TUNABLES");
        match env {
            Some(v) => cmd.env("MALLOC_MMAP_THRESHOLD_", v),
            None => cmd.env_remove("MALLOC_MMAP_THRESHOLD_"),
        };
        json_of(&mut cmd)
    };
    let free = probe(None);
    if free.is_null() {
        eprintln!("skipped: not glibc (or its chunk layout could not be read)");
        return;
    }
    // A threshold set in the environment is found exactly and never rises.
    let set = probe(Some("65536"));
    assert_eq!(set["mmap_threshold"], 65536, "{set}");
    assert_eq!(set["mmap_threshold_max"], 65536, "{set}");
    // Left alone, freeing a large mapping raises it by megabytes.
    let (t, max) = (
        free["mmap_threshold"].as_u64().unwrap(),
        free["mmap_threshold_max"].as_u64().unwrap(),
    );
    assert!(t.is_power_of_two() && max > 8 * t, "{free}");
}

/// `calibrate --from DIRS --format json --out OUT`.
fn from(dirs: &[PathBuf], out: &Path) -> serde_json::Value {
    json_of(
        headroom()
            .args(["calibrate", "--format", "json", "--from"])
            .args(dirs)
            .arg("--out")
            .arg(out),
    )
}

/// The main process's RssAnon + RssShmem at the probe's torch_geometric import event.
fn runtime_of(dir: &Path) -> u64 {
    let text = std::fs::read_to_string(dir.join("probe.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["ev"] == "import" && e["name"] == "torch_geometric")
        .map(|e| e["mem"]["RssAnon"].as_u64().unwrap() + e["mem"]["RssShmem"].as_u64().unwrap())
        .unwrap()
}

#[test]
fn one_probed_run_sets_what_it_measures_and_says_why_the_rest_stays() {
    let t = tempfile::tempdir().unwrap();
    let cal = t.path().join("cal.yaml");
    let run = fixture("probe/pl200k-w2");
    let r = from(std::slice::from_ref(&run), &cal);
    let measured = r["measured"].as_array().unwrap();
    let rt = measured
        .iter()
        .find(|m| m["name"] == "runtime_bytes")
        .unwrap();
    assert_eq!(rt["value"].as_f64().unwrap() as u64, runtime_of(&run));
    // Its four phases cannot determine every ratio: those kept say why.
    let kept = r["kept"].as_array().unwrap();
    assert!(!kept.is_empty());
    assert!(
        kept.iter().all(|k| !k["why"].as_str().unwrap().is_empty()),
        "{kept:?}"
    );
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let phases: Vec<&str> = runs[0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["load", "build_loaders", "train", "evaluate"]);
    // plan reads the file; this recording predates the stack record, so the
    // plan says the file's stack is unknown.
    let o = headroom()
        .args(["plan", "ogbn-arxiv", "--mem", "8G", "--calibration"])
        .arg(&cal)
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(text.contains("records no stack"), "{text}");
}

#[test]
fn two_runs_at_two_batch_sizes_are_fitted_together_and_carry_their_stack() {
    let t = tempfile::tempdir().unwrap();
    let cal = t.path().join("cal.yaml");
    let dirs = [fixture("probe/pl200k-b512"), fixture("probe/pl200k-b2048")];
    let r = from(&dirs, &cal);
    assert_eq!(r["runs"].as_array().unwrap().len(), 2);
    // Which run moves which coefficient, one figure per run.
    for c in r["coverage"].as_array().unwrap() {
        assert_eq!(c["effect"].as_array().unwrap().len(), 2, "{c}");
    }
    // The stack both runs were probed on.
    let text = std::fs::read_to_string(&cal).unwrap();
    let file: serde_json::Value = headroom::yaml::from_str(&text).unwrap();
    assert_eq!(file["stack"]["torch_geometric"], "2.8.1", "{text}");
    assert_eq!(file["stack"]["sampler"], "torch-sparse", "{text}");
    // A job on that stack plans without a word about it; another is warned.
    let job = dirs[0].join("job.yaml");
    let same = headroom()
        .args(["plan", "--mem", "8G", "--calibration"])
        .arg(&cal)
        .arg(&job)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&same.stdout).contains("stack"));
    let other = t.path().join("job.yaml");
    let spec = std::fs::read_to_string(&job).unwrap();
    std::fs::write(
        &other,
        spec.replace("torch_geometric: \"2.8.1\"", "torch_geometric: \"2.5.3\""),
    )
    .unwrap();
    let o = headroom()
        .args(["plan", "--mem", "8G", "--calibration"])
        .arg(&cal)
        .arg(&other)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("another stack (torch_geometric 2.8.1 there, 2.5.3 here)"),
        "{out}"
    );
    // The file records the runs' regime: their graph and largest batch.
    let regime = &file["coefficients"]["regime"];
    assert_eq!(regime["batch_size"], 2048, "{text}");
    assert!(regime["nodes"].as_u64().unwrap() > 100_000, "{text}");
}

#[test]
fn a_lower_fitted_value_is_not_carried_to_a_larger_job_and_plan_says_so() {
    let t = tempfile::tempdir().unwrap();
    let cal = t.path().join("cal.yaml");
    std::fs::write(
        &cal,
        "date: 2026-11-26\ncoefficients:\n  worker_private_bytes: 1048576\n  provenance:\n    worker_private_bytes: \"fitted to the per-phase peaks, two runs\"\n  regime:\n    nodes: 100000\n    edges: 4400000\n    batch_size: 1024\n",
    )
    .unwrap();
    let plan = |cal: &Path| {
        json_of(
            headroom()
                .args([
                    "plan",
                    "ogbn-products",
                    "--workers",
                    "4",
                    "--mem",
                    "64G",
                    "--format",
                    "json",
                    "--calibration",
                ])
                .arg(cal),
        )
    };
    let r = plan(&cal);
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("worker_private_bytes kept at the default")
            && warnings.contains("2449029 nodes (runs: up to 100000)"),
        "{warnings}"
    );
    let source = |r: &serde_json::Value| coefficient_source(r, "worker_private_bytes");
    let w = source(&r);
    assert_eq!(w["value"], (44u64 << 20) as f64, "{w}");
    assert!(
        w["source"]
            .as_str()
            .unwrap()
            .starts_with("default: the calibration's lower fit (1.00 MiB)"),
        "{w}"
    );
    // Without the regime the file's value is used as written.
    let bare = t.path().join("bare.yaml");
    let text = std::fs::read_to_string(&cal).unwrap();
    let cut = text.find("  regime:").unwrap();
    std::fs::write(&bare, &text[..cut]).unwrap();
    let r = plan(&bare);
    assert_eq!(source(&r)["value"], 1048576.0);
    assert!(!r["warnings"].to_string().contains("kept at the default"));
}

#[test]
fn the_designed_calibration_runs_where_pyg_is_installed() {
    let Some(py) = crate::util::pyg_python() else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let cal = t.path().join("cal.yaml");
    let r = json_of(
        headroom()
            .args(["calibrate", "--format", "json", "--python"])
            .arg(&py)
            .arg("--keep")
            .arg(t.path().join("runs"))
            .arg("--out")
            .arg(&cal)
            .timeout(Duration::from_secs(1800)),
    );
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), headroom::calibrate::design::DESIGN.len());
    for run in runs {
        assert_eq!(run["phases"].as_array().unwrap().len(), 4, "{run}");
    }
    // The design, checked on the observed jobs: no fitted coefficient is
    // moved by one run only.
    for c in r["coverage"].as_array().unwrap() {
        assert_ne!(c["moved_by"], 1, "{c}");
    }
    // The runtime of the stack the corpus was measured on is the default's.
    let rt = r["coefficients"]["runtime_bytes"].as_f64().unwrap();
    let default = headroom::estimate::Coefficients::default().runtime_bytes as f64;
    assert!((rt / default - 1.0).abs() < 0.1, "{rt} vs {default}");
    // No GPU here: said, not failed.
    if !Path::new("/dev/nvidia0").exists() {
        assert!(
            r["gpu"]["note"].as_str().unwrap().starts_with("no GPU"),
            "{}",
            r["gpu"]
        );
    }
    // The file is for the venv's stack, and a job on it plans without a warning.
    let text = std::fs::read_to_string(&cal).unwrap();
    assert!(text.contains("torch_geometric: \"2.8.1\""), "{text}");
    let job = t
        .path()
        .join("runs")
        .join(headroom::calibrate::design::DESIGN[0].name)
        .join("job.yaml");
    let o = headroom()
        .args(["plan", "--mem", "8G", "--calibration"])
        .arg(&cal)
        .arg(&job)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stdout).contains("stack"));
}
