//! Helpers shared by the end-to-end tests.

#![allow(dead_code)]

use std::path::PathBuf;

/// A `headroom` command ready to be given arguments.
pub fn headroom() -> assert_cmd::Command {
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_headroom"))
}

/// The path of a fixture under `tests/fixtures`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Runs `cmd`, insists on exit 0 (showing stderr otherwise) and parses its stdout as JSON.
pub fn json_of(cmd: &mut assert_cmd::Command) -> serde_json::Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The python3 on PATH, by its own sys.executable; None where there is none.
pub fn python() -> Option<String> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let exe = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !exe.is_empty()).then_some(exe)
}

/// The watch fixture that forks workers sharing one array.
pub fn share_py() -> String {
    fixture("watch/share.py").display().to_string()
}

/// A JSON file written by a run.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `coefficient_sources` entry of `name` in a plan's JSON (panics when absent).
pub fn coefficient_source(plan: &serde_json::Value, name: &str) -> serde_json::Value {
    plan["coefficient_sources"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} among the plan's coefficient sources: {plan}"))
}

/// The corpus venv's python (benches/pyg/setup.sh) when it can run a
/// NeighborLoader: torch_geometric and a sampler backend (torch_sparse or
/// pyg_lib) importable. None, with the reason printed, otherwise: a venv
/// whose setup is still compiling torch-sparse is not one to judge by.
pub fn pyg_python() -> Option<PathBuf> {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/pyg/.venv/bin/python");
    if !py.exists() {
        eprintln!("skipped: no benches/pyg/.venv (benches/pyg/setup.sh builds it)");
        return None;
    }
    let ok = std::process::Command::new(&py)
        .args([
            "-c",
            "import importlib.util as u, torch_geometric; \
             assert u.find_spec('torch_sparse') or u.find_spec('pyg_lib')",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "skipped: benches/pyg/.venv cannot sample (torch_geometric with torch_sparse or pyg_lib); setup.sh has not finished"
        );
        return None;
    }
    Some(py)
}
