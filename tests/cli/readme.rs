//! README as a front door, against the things it describes: at most 300
//! lines, the minimum Rust it states is Cargo.toml's `rust-version` and what
//! the locked dependencies need, it installs in one command, it gives the two
//! commands of a fresh clone, and it links to a guide for every verb and to
//! every page of docs/. What it and those pages quote (figures, transcripts)
//! is checked in docs.rs.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// `1.95` -> (1, 95); a patch level is ignored.
fn version(v: &str) -> (u32, u32) {
    let mut it = v.trim().split('.').map(|p| p.parse::<u32>().unwrap());
    (it.next().unwrap(), it.next().unwrap_or(0))
}

/// The triple rustc builds for by default (`host: x86_64-unknown-linux-gnu`).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .trim()
        .to_string()
}

/// Language features headroom's own code uses: let chains in `if` (1.88).
const OWN_FLOOR: (u32, u32) = (1, 88);

#[test]
fn the_stated_minimum_rust_is_what_the_locked_dependencies_need() {
    // Only the packages built for this machine: a Linux build never downloads
    // another platform's crates (anstyle-wincon, windows-sys), so asking for
    // the whole graph offline fails on a fresh cargo home.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let host = host_triple();
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let ours = packages
        .iter()
        .find(|p| p["name"] == "headroom")
        .and_then(|p| p["rust_version"].as_str())
        .expect("Cargo.toml sets rust-version");
    let (need, who) = packages
        .iter()
        .filter(|p| p["name"] != "headroom")
        .filter_map(|p| Some((version(p["rust_version"].as_str()?), p["name"].to_string())))
        .max()
        .unwrap();
    assert_eq!(
        version(ours),
        need.max(OWN_FLOOR),
        "rust-version {ours}, but {who} needs {need:?}"
    );
    let stated = format!("Rust {ours} or newer");
    assert!(readme().contains(&stated), "README does not say {stated:?}");
}

#[test]
fn the_readme_installs_the_binary_in_one_command() {
    let text = readme();
    assert!(text.contains("cargo install --locked --path ."));
    // The command installs the package's binary target, `headroom`.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"headroom\""));
    assert!(root().join("src/main.rs").is_file());
    // Beside it, pip: pyproject.toml builds the binary into a wheel.
    assert!(
        text.lines().any(|l| l.trim() == "pip install ."),
        "no `pip install .`"
    );
    let pyproject = std::fs::read_to_string(root().join("pyproject.toml")).unwrap();
    assert!(pyproject.contains("requires = [\"maturin>=1,<2\"]"));
    assert!(pyproject.contains("bindings = \"bin\""));
}

/// The front door stays short: what headroom is, how to install it, the two
/// commands, the three workflows, the accuracy and the way into docs/.
#[test]
fn the_readme_is_a_front_door_with_the_two_commands_and_three_workflows() {
    let text = readme();
    let lines = text.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines (at most 300)");
    // The two commands of a fresh clone, as .ci/run runs the second.
    for cmd in [
        "cargo run --release -- plan ogbn-papers100m --mem 256G",
        "cargo test",
    ] {
        assert!(
            text.lines().any(|l| l.trim() == cmd),
            "README does not give `{cmd}` on a line of its own"
        );
    }
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.lines().any(|l| l.trim() == "cargo test"), "{ci}");
    for workflow in [
        "## Before submitting",
        "## After a failure",
        "## During a run",
    ] {
        assert!(text.contains(workflow), "README lacks {workflow:?}");
    }
    // The headline is the held-out figure, and it is the one the sealed
    // set's own record gives (its first score, committed with its runs).
    assert!(text.contains("**Accuracy, on data held out from every fit.**"));
    let sealed =
        std::fs::read_to_string(root().join("tests/fixtures/pyg/draws/README.md")).unwrap();
    let first = sealed
        .lines()
        .find(|l| l.starts_with("| cgroup | 33 |"))
        .expect("the sealed set's first score row");
    let median = first.split('|').nth(3).unwrap().trim();
    assert!(
        text.contains(&format!("**{median} off at the median**")),
        "README's headline is not the sealed set's first score ({median})"
    );
}

/// One guide per verb and the pages of depth, linked from the README; every
/// relative link in the README and in docs/ leads to a file that exists,
/// except the pages other branches add (scripts, diagnose accuracy, Slurm).
#[test]
fn every_guide_is_linked_and_every_link_resolves() {
    let text = readme();
    for page in [
        "plan",
        "check",
        "diagnose",
        "watch",
        "calibrate",
        "simulate-alloc",
        "model",
        "accuracy",
        "slurm",
        "limits",
        "probe",
        "scripts",
        "diagnose-accuracy",
    ] {
        let link = format!("(docs/{page}.md)");
        assert!(text.contains(&link), "README does not link {link}");
    }
    let coming = [
        "docs/scripts.md",
        "docs/diagnose-accuracy.md",
        "docs/slurm.md",
    ];
    let link = regex::Regex::new(r"\]\(([^)#\s]+)(#[^)]*)?\)").unwrap();
    let mut broken = Vec::new();
    for (page, body) in crate::docs::pages() {
        let dir = page.parent().unwrap().to_path_buf();
        for m in link.captures_iter(&body) {
            let target = &m[1];
            if target.contains("://") {
                continue;
            }
            let path = dir.join(target);
            let rel = path.strip_prefix(root()).unwrap_or(&path).to_path_buf();
            let rel = rel.to_string_lossy().replace("docs/../", "");
            if !path.exists() && !coming.contains(&rel.as_str()) {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
}
