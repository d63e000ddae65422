//! `pip install .` (pyproject.toml, maturin's `bin` bindings): the wheel
//! carries the `headroom` binary into the user's Python environment. Built
//! with maturin from PyPI (installed into a venv of its own), installed into
//! a fresh venv with no index, and run from there. The wheel is built with
//! the dev profile, which reuses what `cargo test` has just compiled;
//! `pip install .` builds the same wheel with the release profile (minutes
//! more on two cores, as README's Install says).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::{headroom, python};

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{cmd:?} did not start: {e}"))
}

fn last_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines().last().unwrap_or("").to_string()
}

fn bin(venv: &Path, name: &str) -> PathBuf {
    venv.join("bin").join(name)
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_plans_from_there() {
    let Some(py) = python() else {
        eprintln!("skipped: no python3");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tools = tmp.path().join("tools");
    let out = run(Command::new(&py).args(["-m", "venv"]).arg(&tools));
    if !out.status.success() {
        eprintln!(
            "skipped: python3 -m venv does not work here: {}",
            last_line(&out)
        );
        return;
    }
    let out = run(Command::new(bin(&tools, "pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "maturin>=1,<2",
    ]));
    if !out.status.success() {
        eprintln!(
            "skipped: maturin could not be installed from the registry: {}",
            last_line(&out)
        );
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wheels = tmp.path().join("wheels");
    let out = run(Command::new(bin(&tools, "maturin"))
        .args(["build", "--profile", "dev", "--out"])
        .arg(&wheels)
        .current_dir(root));
    assert!(
        out.status.success(),
        "maturin build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel was built");
    // A fresh environment, as a user's: the wheel alone, nothing from an index.
    let user = tmp.path().join("user");
    assert!(
        run(Command::new(&py).args(["-m", "venv"]).arg(&user))
            .status
            .success()
    );
    let out = run(Command::new(bin(&user, "pip"))
        .args([
            "install",
            "--no-index",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(&wheel));
    assert!(
        out.status.success(),
        "pip install: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = bin(&user, "headroom");
    assert!(installed.is_file(), "{} is not there", installed.display());
    let from_venv = run(Command::new(&installed).args(["plan", "seed-001-attempt1"]));
    assert_eq!(
        from_venv.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&from_venv.stderr)
    );
    let from_cargo = headroom()
        .args(["plan", "seed-001-attempt1"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&from_venv.stdout),
        String::from_utf8_lossy(&from_cargo.stdout)
    );
    // pip knows it: it can be listed and removed like any package.
    let out = run(Command::new(bin(&user, "pip")).args(["show", "--files", "headroom-gnn"]));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("bin/headroom"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
