//! The binary knows every dataset profile of the checkout it was built
//! from, and the build script refuses a manifest directory without
//! profiles (build.rs reads `profiles/` from the directory cargo runs it
//! with, and stops when it finds none).

use std::path::{Path, PathBuf};

use crate::util::headroom;

#[test]
fn the_binary_lists_every_dataset_profile_of_the_checkout() {
    let out = headroom()
        .args(["profiles", "--kind", "datasets"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/datasets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "yaml").then(|| p.file_stem().unwrap().to_string_lossy().to_string())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 30, "{} dataset profiles", names.len());
    for n in &names {
        assert!(
            listed
                .lines()
                .any(|l| l.split_whitespace().next() == Some(n.as_str())),
            "{n} is not embedded:\n{listed}"
        );
    }
}

/// The compiled build script of this crate, beside the test binary.
fn build_script() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?; // target/<profile>/deps/cli-* → target/<profile>
    std::fs::read_dir(profile_dir.join("build"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("headroom-"))
        })
        .map(|p| p.join("build-script-build"))
        .find(|p| p.is_file())
}

#[test]
fn the_build_script_stops_when_it_finds_no_profile() {
    let Some(script) = build_script() else {
        eprintln!("skipped: no compiled build script next to the test binary");
        return;
    };
    let empty = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&script)
        .env("CARGO_MANIFEST_DIR", empty.path())
        .env("OUT_DIR", out_dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no datasets profile"), "{err}");
    assert!(!out_dir.path().join("profiles.rs").exists());
    // With this checkout's profiles it writes the table of every one.
    let out = std::process::Command::new(&script)
        .env("CARGO_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"))
        .env("OUT_DIR", out_dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = std::fs::read_to_string(out_dir.path().join("profiles.rs")).unwrap();
    assert!(table.contains("\"ogbn-proteins\"") && table.contains("\"dgraphfin\""));
}
