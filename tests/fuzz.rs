//! The fuzz targets as part of `cargo test`: every input that ever broke a
//! parser (tests/regressions, named by what they hit, and the harness's
//! crash corpus tests/fuzz/crashes, named `TARGET-HASH`) is replayed through
//! its target, and each target gets a short smoke run of mutated inputs
//! (FUZZ_SMOKE_SECS seconds each, 5 by default; examples/fuzz.rs runs them
//! for longer). A panic fails the test with the input's path.

use std::path::{Path, PathBuf};
use std::time::Duration;

use headroom::fuzz::{TARGETS, Target, fuzz, seeds_of};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn target(name: &str) -> &'static Target {
    TARGETS.iter().find(|t| t.name == name).unwrap()
}

/// The target a regression file belongs to, from its name.
fn target_of(file: &str) -> Option<&'static Target> {
    let prefix = |p: &str| file.starts_with(p);
    let name = match () {
        _ if prefix("snapshot") => "snapshot",
        _ if prefix("sbatch") => "sbatch",
        _ if prefix("yaml") || prefix("job") => "job_yaml",
        _ if prefix("calibration") => "calibration",
        _ => file.split('-').next()?,
    };
    TARGETS.iter().find(|t| t.name == name)
}

#[test]
fn every_input_that_broke_a_parser_is_replayed() {
    let mut n = 0;
    for dir in ["tests/regressions", "tests/fuzz/crashes"] {
        let Ok(rd) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for f in rd.flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let t =
                target_of(&name).unwrap_or_else(|| panic!("{dir}/{name}: no target by that name"));
            let bytes = std::fs::read(f.path()).unwrap();
            let res = std::panic::catch_unwind(|| (t.run)(&bytes));
            assert!(res.is_ok(), "{dir}/{name} panics the {} target", t.name);
            n += 1;
        }
    }
    assert!(n >= 11, "{n} regression inputs");
}

fn smoke(name: &str) {
    let secs = std::env::var("FUZZ_SMOKE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let t = target(name);
    let seeds = seeds_of(t, root());
    let crash_dir: PathBuf =
        std::env::temp_dir().join(format!("headroom-fuzz-{}", std::process::id()));
    let out = fuzz(
        t,
        &seeds,
        u64::MAX,
        Duration::from_secs(secs),
        0x5eed,
        &crash_dir,
    );
    assert!(out.inputs > 100, "{name}: {} inputs", out.inputs);
    assert!(out.crashes.is_empty(), "{name}: {:?}", out.crashes);
    eprintln!("{name}: {} inputs, slowest {:?}", out.inputs, out.slowest);
}

#[test]
fn smoke_snapshot() {
    smoke("snapshot");
}
#[test]
fn smoke_logs() {
    smoke("logs");
}
#[test]
fn smoke_sacct() {
    smoke("sacct");
}
#[test]
fn smoke_seff() {
    smoke("seff");
}
#[test]
fn smoke_job_yaml() {
    smoke("job_yaml");
}
#[test]
fn smoke_sbatch() {
    smoke("sbatch");
}
#[test]
fn smoke_sizes() {
    smoke("sizes");
}
#[test]
fn smoke_alloc_conf() {
    smoke("alloc_conf");
}
#[test]
fn smoke_calibration() {
    smoke("calibration");
}
#[test]
fn smoke_output() {
    smoke("output");
}
