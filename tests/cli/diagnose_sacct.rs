//! `diagnose --sacct` reads sacct's columns by the header (`-P` in any order,
//! with or without JobID; the default fixed-width layout; `--json` as a JSON
//! document), and `--exit-code` takes what shells and Slurm print.

use serde_json::Value;

use crate::util::{fixture, headroom, json_of};

fn sacct(name: &str) -> Value {
    let path = fixture(&format!("sacct/{name}"));
    json_of(
        headroom()
            .args(["diagnose", "--format", "json", "--sacct"])
            .arg(path),
    )
}

#[test]
fn pipes_in_any_order_are_read_by_their_header() {
    // ExitCode first, JobID third: the default order would read "4242" as the exit code.
    let r = sacct("reordered.psv");
    assert_eq!(r["category"], "host_oom_cgroup", "{r}");
    assert_eq!(r["exit"]["raw"], "0:125", "{}", r["exit"]);
    let evidence = r["evidence"].to_string();
    assert!(
        !evidence.contains("ExitCode|State"),
        "the header is not a row: {evidence}"
    );
}

#[test]
fn a_header_without_jobid_is_still_a_header() {
    let r = sacct("no_jobid.psv");
    assert_eq!(r["category"], "success", "{r}");
    assert_eq!(r["exit"]["raw"], "0:0");
}

#[test]
fn the_fixed_width_layout_and_the_json_document() {
    let r = sacct("fixed_width.txt");
    assert_eq!(r["category"], "host_oom_cgroup", "{r}");
    assert_eq!(r["exit"]["raw"], "0:125");
    let r = sacct("oom.json");
    assert_eq!(r["category"], "host_oom_cgroup", "{r}");
    assert_eq!(r["confidence"], "certain");
    assert_eq!(r["exit"]["signal_name"], "SIGKILL", "{}", r["exit"]);
    // required.memory_per_node is MiB: 131072 MiB = 128 GiB, the job's limit.
    assert_eq!(
        r["numbers"]["req_mem_bytes"],
        128u64 << 30,
        "{}",
        r["numbers"]
    );
    assert!(
        r["verdict"].as_str().unwrap().contains("limit 128 GiB"),
        "{}",
        r["verdict"]
    );
}

#[test]
fn exit_codes_as_shells_and_slurm_print_them() {
    for (code, signal) in [
        ("0:9", "SIGKILL"),
        ("137", "SIGKILL"),
        ("-9", "SIGKILL"),
        ("271", "SIGTERM"),
    ] {
        let r = json_of(headroom().args(["diagnose", "--format", "json", "--exit-code", code]));
        assert_eq!(r["exit"]["signal_name"], signal, "{code}: {}", r["exit"]);
    }
    for bad in ["256", "nine", "0:300", "1.5"] {
        let out = headroom()
            .args(["diagnose", "--exit-code", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("shell or Slurm"), "{err}");
    }
}

#[test]
fn seffs_exit_code_0_on_an_oom_job_is_not_a_clean_exit() {
    // The State line as seff printed it in jdblischak/smk-simple-slurm#29:
    // seff shows only the exit half of Slurm's exit:signal. The other lines
    // are written in seff's layout around it (not copied from one job).
    let r = json_of(
        headroom()
            .args(["diagnose", "--format", "json"])
            .arg(fixture("sacct/seff_oom.txt")),
    );
    assert_eq!(r["category"], "host_oom_cgroup", "{r}");
    assert!(
        r["exit"].is_null(),
        "exit code 0 is not the job's status: {}",
        r["exit"]
    );
    assert!(
        r["verdict"].as_str().unwrap().contains("limit 2.00 GiB"),
        "{}",
        r["verdict"]
    );
}
