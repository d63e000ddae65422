//! End-to-end tests of `watch --probe` and `calibrate --from`. The probe's
//! safety rules run with a real Python and no torch: small stand-in `torch`
//! modules in a temporary directory are what the probe wraps, and one of
//! them is built so the probe's own reading fails. The report and the fit
//! are tested on one real probed PyG run recorded as a fixture
//! (tests/fixtures/probe/pl200k-w2: probe events, timeline, run.json), and
//! a fresh real run is probed where benches/pyg/.venv exists.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{coefficient_source, fixture, headroom, json_of};

/// A Python 3 interpreter, or None (the test then says it skipped).
fn python() -> Option<PathBuf> {
    let ok = Command::new("python3")
        .arg("-c")
        .arg("import sys; assert sys.version_info >= (3, 8)")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| PathBuf::from("python3"))
}

/// `headroom watch --probe --out RUN`, the job still to be given.
fn watch_probe(run: &Path) -> assert_cmd::Command {
    let mut cmd = headroom();
    cmd.args(["watch", "--probe", "--out"]).arg(run);
    cmd
}

fn events(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("probe.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn a_job_that_never_imports_torch_is_untouched() {
    let Some(py) = python() else {
        eprintln!("skipped: no python3 here");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("run");
    let o = watch_probe(&run)
        .arg("--")
        .arg(&py)
        .args(["-c", "import sys; print('hello'); sys.exit(3)"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "the job's own exit code");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "hello\n");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("probe: no report"), "{stderr}");
    assert!(!stderr.contains("probe: disabled"), "{stderr}");
    let kinds: Vec<String> = events(&run)
        .iter()
        .map(|e| e["ev"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["start", "exit"]);
    assert!(!run.join("job.yaml").exists());
}

#[test]
fn the_users_sitecustomize_still_runs() {
    let Some(py) = python() else {
        eprintln!("skipped: no python3 here");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("marker");
    write(
        t.path(),
        "user/sitecustomize.py",
        "import os\nopen(os.environ['MARKER'], 'w').write('ran')\n",
    );
    let run = t.path().join("run");
    watch_probe(&run)
        .env("PYTHONPATH", t.path().join("user"))
        .env("MARKER", &marker)
        .arg("--")
        .arg(&py)
        .args([
            "-c",
            "import os; print(os.environ['PYTHONPATH'].split(':')[-1])",
        ])
        .assert()
        .success()
        .stdout(format!("{}\n", t.path().join("user").display()));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran");
    assert_eq!(events(&run)[0]["ev"], "start");
}

/// Stand-ins for torch's DataLoader and optimizer modules: enough for the
/// probe to wrap, lacking what its reading needs (no RandomSampler).
fn fake_torch(dir: &Path) {
    write(dir, "torch/__init__.py", "");
    write(dir, "torch/utils/__init__.py", "");
    write(dir, "torch/utils/data/__init__.py", "");
    write(
        dir,
        "torch/utils/data/dataloader.py",
        "class DataLoader:\n    def __init__(self, n):\n        if n < 0:\n            raise ValueError('negative n')\n        self.n = n\n    def __iter__(self):\n        return iter(range(self.n))\n",
    );
}

#[test]
fn a_failing_probe_disables_itself_and_never_reaches_the_job() {
    let Some(py) = python() else {
        eprintln!("skipped: no python3 here");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    fake_torch(&t.path().join("lib"));
    let run = t.path().join("run");
    let script = "from torch.utils.data.dataloader import DataLoader\n\
                  try:\n    DataLoader(-1)\nexcept ValueError as e:\n    print('caught', e)\n\
                  l = DataLoader(3)\nprint(sum(l), sum(l), l.n)\n";
    let o = watch_probe(&run)
        .env("PYTHONPATH", t.path().join("lib"))
        .arg("--")
        .arg(&py)
        .args(["-c", script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // The job's own exception reached it unchanged; its loader works.
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "caught negative n\n3 3 3\n"
    );
    assert!(stderr.contains("headroom probe: disabled"), "{stderr}");
    // The wrapper ran (it saw the loader being built) before giving up.
    let kinds: Vec<String> = events(&run)
        .iter()
        .map(|e| e["ev"].as_str().unwrap().to_string())
        .collect();
    assert!(kinds.contains(&"loader_start".to_string()), "{kinds:?}");
    assert!(!kinds.contains(&"loader".to_string()), "{kinds:?}");
}

/// The recorded run: case.py --batch 512 --fanout 10,5 --workers 2 --persistent.
fn recorded() -> PathBuf {
    fixture("probe/pl200k-w2")
}

#[test]
fn the_recorded_run_is_read_as_the_script_set_it() {
    let t = tempfile::tempdir().unwrap();
    let cal = t.path().join("cal.yaml");
    let r = json_of(
        headroom()
            .args(["calibrate", "--format", "json", "--from"])
            .arg(recorded())
            .arg("--out")
            .arg(&cal),
    );
    let run = &r["runs"][0];
    let rows = run["phases"].as_array().unwrap();
    let phases: Vec<&str> = rows.iter().map(|p| p["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["load", "build_loaders", "train", "evaluate"]);
    for p in rows {
        let m = p["measured_bytes"].as_u64().unwrap();
        assert!(m > 400 << 20 && m < 4 << 30, "{p}");
    }
    // The fit moves the phases toward the run it came from, never away.
    let worst = |key: &str| {
        rows.iter()
            .map(|p| {
                let m = p["measured_bytes"].as_f64().unwrap();
                (p[key].as_f64().unwrap() / m - 1.0).abs()
            })
            .fold(0.0, f64::max)
    };
    assert!(worst("after_bytes") <= worst("before_bytes"), "{rows:?}");
    // The written file carries the run's provenance and plan reads it.
    let text = std::fs::read_to_string(&cal).unwrap();
    assert!(
        text.contains("watch --probe of `.venv/bin/python case.py"),
        "{text}"
    );
    // The settings as the script set them.
    let job = &run["job"];
    let l = &job["loader"];
    assert_eq!(l["batch_size"], 512);
    assert_eq!(l["fanout"], serde_json::json!([10, 5]));
    assert_eq!(l["num_workers"], 2);
    assert_eq!(l["persistent_workers"], true);
    assert_eq!(l["eval_loaders"], "resident");
    assert_eq!(l["is_sorted"], false);
    let d = &job["dataset"];
    assert_eq!(
        (d["nodes"].as_u64(), d["edges"].as_u64()),
        (Some(200_000), Some(2_400_000))
    );
    assert_eq!(
        d["splits"],
        serde_json::json!({"train": 8192, "valid": 2048, "test": 2048})
    );
    assert_eq!(
        (d["features"].as_u64(), d["classes"].as_u64()),
        (Some(128), Some(32))
    );
    let m = &job["model"];
    assert_eq!(
        (
            m["conv"].as_str(),
            m["layers"].as_u64(),
            m["hidden"].as_u64()
        ),
        (Some("sage"), Some(2), Some(256))
    );
    assert_eq!(
        (m["optimizer"].as_str(), m["dropout"].as_f64()),
        (Some("adam"), Some(0.0))
    );
    // The degree histogram the loader's CSC holds: every node and edge counted.
    let h = &d["degree_histogram"];
    let sum = |k: &str| {
        h[k].as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(sum("counts"), 200_000);
    assert_eq!(sum("degree_sums"), 2_400_000);
    // Out-degrees of a hashed node sample, scaled to every node.
    assert!(sum("out_counts").abs_diff(200_000) <= 2_000, "{h}");
}

#[test]
fn a_directory_that_is_not_a_probed_run_is_one_line_and_exit_2() {
    let t = tempfile::tempdir().unwrap();
    for dir in [t.path().to_path_buf(), t.path().join("missing")] {
        let o = headroom()
            .args(["calibrate", "--from"])
            .arg(&dir)
            .arg("--out")
            .arg(t.path().join("cal.yaml"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(!t.path().join("cal.yaml").exists());
    }
}

#[test]
fn a_fresh_real_run_is_probed_where_pyg_is_importable() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/pyg");
    let Some(py) = crate::util::pyg_python() else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("run");
    watch_probe(&run)
        .current_dir(&root)
        .arg("--")
        .arg(&py)
        .args([
            "case.py", "--graph", "powerlaw", "--nodes", "200000", "--edges", "2400000",
        ])
        .args([
            "--train", "4096", "--valid", "1024", "--test", "1024", "--batch", "256",
        ])
        .args([
            "--fanout",
            "5,5",
            "--workers",
            "1",
            "--eval-loaders",
            "on_demand",
        ])
        .assert()
        .success();
    let text = std::fs::read_to_string(run.join("job.yaml")).unwrap();
    let job: serde_json::Value = headroom::yaml::from_str(&text).unwrap();
    assert_eq!(job["loader"]["batch_size"], 256);
    assert_eq!(job["loader"]["fanout"], serde_json::json!([5, 5]));
    assert_eq!(job["loader"]["num_workers"], 1);
    assert_eq!(job["loader"]["eval_loaders"], "on_demand");
    // The stack it ran on, as the interpreter itself reports it.
    let version = Command::new(&py)
        .args(["-c", "import platform; print(platform.python_version())"])
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    assert_eq!(
        job["stack"]["python"].as_str(),
        Some(version.as_str()),
        "{job}"
    );
    assert!(
        matches!(
            job["stack"]["sampler"].as_str(),
            Some("pyg-lib" | "torch-sparse")
        ),
        "{job}"
    );
    // The out-degree histogram of a hashed node sample, scaled to all nodes.
    let out: u64 = job["dataset"]["degree_histogram"]["out_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(out.abs_diff(200_000) <= 2_000, "{out}");
    // With it, the plan's batches are the ones the sampler drew.
    let plan = headroom()
        .args(["plan", "--format", "json", "--mem", "16G"])
        .arg(run.join("job.yaml"))
        .assert()
        .success();
    let plan: serde_json::Value = serde_json::from_slice(&plan.get_output().stdout).unwrap();
    let planned = plan["train_batch"]["mean_nodes"].as_f64().unwrap();
    let drawn = events(&run)
        .iter()
        .find(|e| e["ev"] == "pass_end" && e["sizes"].is_array())
        .map(|e| {
            let s = e["sizes"].as_array().unwrap();
            s.iter().map(|b| b[0].as_f64().unwrap()).sum::<f64>() / s.len() as f64
        })
        .unwrap();
    assert!(
        (planned / drawn - 1.0).abs() < 0.15,
        "planned {planned} nodes a batch, drawn {drawn}"
    );
    let phases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("phases.json")).unwrap()).unwrap();
    let rows = phases["phases"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter().all(|p| p["measured_bytes"].as_u64().is_some()),
        "{rows:?}"
    );
}

#[test]
fn plan_with_a_probed_run_advises_by_its_measured_terms_and_says_so() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe/pl200k-b512");
    let plan = |probe: bool| {
        let mut c = headroom();
        c.arg("plan").arg(dir.join("job.yaml"));
        if probe {
            c.arg("--probe").arg(&dir);
        }
        let o = c
            .args(["--mem", "1G", "--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let (probed, plain) = (plan(true), plan(false));
    let source = probed["coefficients"].as_str().unwrap();
    assert!(source.starts_with("watch --probe run "), "{source}");
    assert_eq!(plain["coefficients"], "defaults");
    // The run's own terms: its worker pages are read off the run, not the default.
    let worker = |v: &serde_json::Value| coefficient_source(v, "worker_private_bytes");
    assert_ne!(worker(&probed)["value"], worker(&plain)["value"]);
    assert!(
        worker(&probed)["source"]
            .as_str()
            .unwrap()
            .contains("pl200k-b512")
    );
    // The text says whose coefficients the advice rests on.
    let o = headroom()
        .arg("plan")
        .arg(dir.join("job.yaml"))
        .arg("--probe")
        .arg(&dir)
        .args(["--mem", "1G"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("by the coefficients of watch --probe run"),
        "{text}"
    );
}

#[test]
fn plan_with_a_directory_that_is_not_a_probed_run_is_one_line_and_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let job =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe/pl200k-b512/job.yaml");
    let o = headroom()
        .arg("plan")
        .arg(&job)
        .arg("--probe")
        .arg(t.path())
        .args(["--mem", "1G"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("--probe"), "{e}");
}
