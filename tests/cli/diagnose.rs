//! End-to-end tests of `headroom diagnose`: the fixture corpus with its
//! hand-worked expectations (tests/fixtures/diagnose/expected.yaml), a cause
//! buried in 100,000 lines, bad inputs, stdin, and a real cgroup OOM kill.

mod ignored_tracebacks;
mod real_corpus;
mod real_oom;

use std::io::Write;

use serde_json::Value;

use crate::util::{fixture, headroom, json_of};

/// Runs diagnose with `args` and returns its JSON report (exit 0 required).
fn diagnose_json(args: &[String]) -> Value {
    let out = headroom()
        .arg("diagnose")
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("run headroom");
    assert_eq!(
        out.status.code(),
        Some(0),
        "args {args:?}: stderr {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("diagnose prints JSON")
}

fn first_location(report: &Value) -> String {
    let ev = &report["evidence"][0];
    let source = ev["source"].as_str().unwrap_or("");
    let name = std::path::Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name}:{}", ev["line"])
}

#[test]
fn fixture_corpus_matches_hand_worked_expectations() {
    let text = std::fs::read_to_string(fixture("diagnose/expected.yaml")).unwrap();
    let cases: Vec<Value> = headroom::yaml::from_str(&text).unwrap();
    assert!(cases.len() >= 30, "corpus shrank to {}", cases.len());
    for case in cases {
        let name = case["name"].as_str().unwrap().to_string();
        let mut args: Vec<String> = Vec::new();
        for f in case["files"].as_array().into_iter().flatten() {
            args.push(
                fixture(&format!("diagnose/{}", f.as_str().unwrap()))
                    .display()
                    .to_string(),
            );
        }
        for a in case["args"].as_array().into_iter().flatten() {
            let a = a.as_str().unwrap();
            let path = fixture(&format!("diagnose/{a}"));
            args.push(if a.ends_with(".txt") {
                path.display().to_string()
            } else {
                a.to_string()
            });
        }
        let got = diagnose_json(&args);
        assert_eq!(got["category"], case["category"], "{name}: category");
        assert_eq!(got["confidence"], case["confidence"], "{name}: confidence");
        if !case["chain"].is_null() {
            assert_eq!(got["chain"], case["chain"], "{name}: chain");
        }
        if let Some(loc) = case["first_evidence"].as_str() {
            assert_eq!(first_location(&got), loc, "{name}: first evidence");
        }
        if let Some(sig) = case["exit_signal"].as_u64() {
            assert_eq!(
                got["exit"]["signal"].as_u64(),
                Some(sig),
                "{name}: exit signal"
            );
        }
        if case["next_steps"].as_bool() == Some(true) {
            assert!(
                !got["next_steps"].as_array().unwrap().is_empty(),
                "{name}: next steps"
            );
        }
        for (key, want) in case["numbers"].as_object().into_iter().flatten() {
            assert_eq!(&got["numbers"][key], want, "{name}: numbers.{key}");
        }
        for (key, want) in case["cuda_oom"].as_object().into_iter().flatten() {
            assert_eq!(&got["cuda_oom"][key], want, "{name}: cuda_oom.{key}");
        }
    }
}

#[test]
fn cause_buried_in_100k_progress_lines_is_found_on_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slurm-777.out");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 1..=100_000u32 {
        if i == 73_421 {
            writeln!(f, "slurmstepd: error: Detected 1 oom_kill event in StepId=777.batch. Some of the step tasks have been OOM Killed.").unwrap();
        } else {
            writeln!(
                f,
                "Epoch 3:  {:>3}%|#####     | {i}/100000 [01:02<01:40, 14.97it/s, loss=0.{:03}]",
                i / 1000,
                i % 997
            )
            .unwrap();
        }
    }
    drop(f);
    let got = diagnose_json(&[path.display().to_string()]);
    assert_eq!(got["category"], "host_oom_cgroup");
    assert_eq!(got["confidence"], "certain");
    assert_eq!(got["evidence"][0]["line"], 73_421);
    assert_eq!(got["inputs"][0]["lines"], 100_000);
}

#[test]
fn stdin_is_read_with_a_dash() {
    let dmesg = std::fs::read(fixture("diagnose/dmesg_cgroup_oom.txt")).unwrap();
    let out = headroom()
        .args(["diagnose", "-", "--format", "json"])
        .write_stdin(dmesg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["category"], "host_oom_cgroup");
    assert_eq!(got["evidence"][0]["source"], "<stdin>");
}

#[test]
fn text_report_names_verdict_evidence_location_and_fix() {
    let log = fixture("diagnose/cuda_oom_2x_seed004.log");
    let out = headroom().arg("diagnose").arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("verdict:    cuda_oom_capacity (certain)"),
        "{text}"
    );
    assert!(text.contains("cuda_oom_2x_seed004.log:8:"), "{text}");
    // 3.84 + 3.56 = 7.40 GiB >= 4.15: the note about expandable segments appears.
    assert!(text.contains("expandable_segments:True"), "{text}");
}

/// Runs diagnose expecting exit 2 and one line on stderr containing `needle`.
fn refused(args: &[&std::ffi::OsStr], needle: &str) {
    let out = headroom().arg("diagnose").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{err}");
}

#[test]
fn bad_inputs_get_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.out");
    std::fs::write(&empty, b"").unwrap();
    let binary = dir.path().join("core.bin");
    let mut bytes = vec![0u8; 16 << 10];
    bytes
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = (i * 7 % 251) as u8);
    std::fs::write(&binary, &bytes).unwrap();
    let missing = dir.path().join("nope.out");
    refused(&[empty.as_os_str()], "empty input");
    refused(&[binary.as_os_str()], "binary file");
    refused(&[dir.path().as_os_str()], "is a directory");
    refused(&[missing.as_os_str()], "nope.out");
    refused(&[], "nothing to diagnose");
    refused(
        &["--exit-code".as_ref(), "banana".as_ref()],
        "exit code 'banana'",
    );
    let out = headroom()
        .args(["diagnose", "-"])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_log_with_nul_padding_but_evidence_is_still_diagnosed() {
    // Nodes that crash leave NUL blocks in log files; the evidence still counts.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slurm-9.out");
    let mut bytes = vec![0u8; 4096];
    bytes.extend_from_slice(b"\nslurmstepd: error: *** JOB 9 ON n1 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***\n");
    std::fs::write(&path, bytes).unwrap();
    let got = diagnose_json(&[path.display().to_string()]);
    assert_eq!(got["category"], "time_limit");
    assert_eq!(got["inputs"][0]["binary"], true);
}

#[test]
fn job_flag_needs_an_existing_file() {
    let log = fixture("diagnose/time_limit.log");
    let out = headroom()
        .arg("diagnose")
        .arg(&log)
        .args(["--job", "/nonexistent/job.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--job /nonexistent/job.yaml"));
    let job = fixture("diagnose/sacct_oom.txt"); // not a job spec: refused with the reason
    let out = headroom()
        .arg("diagnose")
        .arg(&log)
        .arg("--job")
        .arg(&job)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn job_flag_recommends_a_setting_the_planner_says_fits() {
    // seeds/002: a cgroup OOM kill with three resident loaders at 128G; the
    // planner's answer keeps batch 256 and fanout [5, 3] and passes a sorted
    // edge_index (is_sorted=True: each loader's row is then a view of it, so
    // the three loaders hold only their colptr).
    let r = json_of(
        headroom()
            .arg("diagnose")
            .arg(fixture("diagnose/slurm_oom_kill_event.log"))
            .args(["--exit-code", "137", "--format", "json", "--job"])
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/profiles/jobs/seed-002-three-loaders.yaml"
            )),
    );
    assert_eq!(r["category"], "host_oom_cgroup");
    assert_eq!(r["recommended"]["batch_size"], 256);
    assert_eq!(r["recommended"]["is_sorted"], true);
    assert!(
        r["recommendation"]
            .as_str()
            .unwrap()
            .contains("batch_size=256")
    );
}

#[test]
fn sacct_from_stdin_and_yaml_output() {
    let sacct = std::fs::read(fixture("diagnose/sacct_oom.txt")).unwrap();
    let out = headroom()
        .args(["diagnose", "--sacct", "-", "--format", "yaml"])
        .write_stdin(sacct)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got: Value = headroom::yaml::from_str(std::str::from_utf8(&out.stdout).unwrap()).unwrap();
    assert_eq!(got["category"].as_str(), Some("host_oom_cgroup"));
    // The job row's ExitCode 0:125 is Slurm's OUT_OF_MEMORY marker.
    assert_eq!(got["exit"]["raw"].as_str(), Some("0:125"));
}

#[test]
fn seed_004_expandable_segments_what_if_is_worked_out() {
    // free 3.84 GiB = 4,123,168,604 B, reserved-but-unallocated 3.56 GiB = 3,822,520,893 B:
    // usable = 7,945,689,497 − 2 × 20 MiB slack (41,943,040) = 7,903,746,457 B;
    // the 4.15 GiB (4.15 × 2^30 = 4,456,028,570 B) request in 20 MiB pages: 213 × 20,971,520 = 4,466,933,760 B;
    // margin = 7,903,746,457 − 4,466,933,760 = 3,436,812,697 B (3.20 GiB to spare).
    let out = headroom()
        .arg("diagnose")
        .arg(fixture("diagnose/cuda_oom_2x_seed004.log"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &r["expandable_what_if"];
    assert_eq!(w["would_fit"], true);
    assert_eq!(w["usable_bytes"], 7_903_746_457u64);
    assert_eq!(w["margin_bytes"], 3_436_812_697i64);
}

#[test]
fn competing_causes_are_listed_in_the_order_their_lines_appear() {
    // The worker's death is printed before Slurm's proof of who killed it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slurm-9.out");
    std::fs::write(
        &path,
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.\n\
         slurmstepd: error: Detected 1 oom_kill event in StepId=9.batch. Some of the step tasks have been OOM Killed.\n",
    )
    .unwrap();
    let got = diagnose_json(&[path.display().to_string()]);
    assert_eq!(got["category"], "host_oom_cgroup");
    let verdict = got["verdict"].as_str().unwrap();
    let worker = verdict
        .find("dataloader_worker_killed (")
        .expect("worker listed");
    let slurm = verdict.find("host_oom_cgroup (").expect("slurm listed");
    assert!(worker < slurm, "order of appearance: {verdict}");
    assert!(verdict.contains("slurm-9.out:1") && verdict.contains("slurm-9.out:2"));
}
