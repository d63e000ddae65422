//! End-to-end tests of `headroom watch`: real child processes, the real
//! /proc, and a real memory cgroup where this machine lets us make one.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{fixture, headroom, json_of, python, read_json, share_py};

const MIB: u64 = 1 << 20;

/// The real python interpreter (not a pyenv shim, whose helper processes
/// would join the tree), or None to skip.
fn u(v: &serde_json::Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn forked_workers_sum_to_many_rss_but_one_pss() {
    let Some(py) = python() else {
        eprintln!("SKIPPED: python3 not found");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (summary, csv) = (dir.path().join("s.json"), dir.path().join("t.csv"));
    // 128 MiB held by the main process and shared by 3 forked workers for 1.5 s
    // (15 intervals, so the sampler sees the plateau many times).
    let a = 128 * MIB;
    headroom()
        .args(["watch", "--interval", "100ms", "--summary"])
        .arg(&summary)
        .arg("--out")
        .arg(&csv)
        .args(["--", &py, &share_py(), "128", "3", "1.5"])
        .assert()
        .success();
    let s = read_json(&summary);
    assert_eq!(u(&s, "max_processes"), 4);
    // Each of the 4 processes maps the whole array: RSS sums to 4 x 128 MiB.
    // On top comes each interpreter's own resident set, 10-14 MiB here
    // (see tests/fixtures/watch/proc: 21672 kB RSS with an 8 MiB array), so
    // allow 4 x 32 MiB above and nothing below.
    let rss = u(&s, "peak_rss_sum_bytes");
    assert!((4 * a..=4 * a + 4 * 32 * MIB).contains(&rss), "rss {rss}");
    // PSS counts each shared page once: 1 x 128 MiB plus the interpreters'
    // proportional share, at most 4 x 12 MiB (fixture: PSS 11 MiB for the
    // main python incl. half of its 8 MiB array, 8.3 MiB for its child).
    let pss = u(&s, "peak_pss_bytes");
    assert!((a..=a + 48 * MIB).contains(&pss), "pss {pss}");
    // USS: while all 4 are alive the array is private to nobody, so the
    // summed USS is only the interpreters' own pages (before the fork and
    // after the workers exit the main process holds it alone, so check rows).
    let mut rows = csv::Reader::from_path(&csv).unwrap();
    let shared: Vec<u64> = rows
        .deserialize::<std::collections::HashMap<String, String>>()
        .map(|r| r.unwrap())
        .filter(|r| r["processes"] == "4")
        .map(|r| r["uss_sum_bytes"].parse().unwrap())
        .collect();
    assert!(shared.len() >= 5, "{shared:?}");
    assert!(shared.iter().all(|&b| b < 48 * MIB), "{shared:?}");
    assert_eq!(s["category"], "success");
    assert_eq!(s["exit_code"], 0);
}

/// The memory cgroup controller is usable here (root, v1 or v2 writable).
fn can_make_cgroups() -> bool {
    let uid = unsafe { libc::geteuid() };
    uid == 0
        && std::fs::read_to_string("/proc/self/cgroup")
            .map(|t| {
                t.lines().any(|l| {
                    l.split(':')
                        .nth(1)
                        .is_some_and(|c| c.split(',').any(|x| x == "memory"))
                        || l.starts_with("0::")
                })
            })
            .unwrap_or(false)
}

#[test]
fn a_real_cgroup_oom_is_certain_and_the_timeline_keeps_the_samples() {
    let Some(py) = python() else {
        eprintln!("SKIPPED: python3 not found");
        return;
    };
    if !can_make_cgroups() {
        eprintln!("SKIPPED: needs root and a memory cgroup to rehearse an OOM");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (csv, summary) = (dir.path().join("t.csv"), dir.path().join("s.json"));
    // Grows 16 MiB every 0.1 s towards 256 MiB under a 96 MiB limit: the
    // kernel kills it at about 0.6 s, after several samples.
    let out = headroom()
        .args(["watch", "--limit", "96M", "--out"])
        .arg(&csv)
        .arg("--summary")
        .arg(&summary)
        .args(["--", &py, &share_py(), "grow", "16", "16", "0.1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("--limit: ") {
        eprintln!("SKIPPED: cgroups not writable here: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(137), "{stderr}");
    let s = read_json(&summary);
    assert_eq!(s["category"], "host_oom_cgroup");
    assert_eq!(s["confidence"], "certain");
    assert_eq!(s["oom_kill_delta"], 1);
    assert_eq!(u(&s, "cgroup_limit_bytes"), 96 * MIB);
    let mut rows = csv::Reader::from_path(&csv).unwrap();
    let usage: Vec<u64> = rows
        .deserialize::<std::collections::HashMap<String, String>>()
        .map(|r| r.unwrap()["cgroup_usage_bytes"].parse().unwrap())
        .collect();
    // Samples up to the kill: at least 3 rows, growing past half the limit.
    assert!(usage.len() >= 3, "{usage:?}");
    assert!(*usage.iter().max().unwrap() > 48 * MIB, "{usage:?}");
    assert!(usage.iter().all(|&b| b <= 96 * MIB));
    // The cgroup headroom made is gone.
    let cg = s["cgroup_dir"].as_str().unwrap();
    assert!(cg.contains("headroom-watch-") && !std::path::Path::new(cg).exists());
}

#[test]
fn a_missing_command_exits_127_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let out = headroom()
        .args(["watch", "--out"])
        .arg(&csv)
        .args(["--", "headroom-no-such-command-xyz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("command not found"));
    assert!(
        !csv.exists(),
        "the timeline of a job that never ran is removed"
    );
}

#[test]
fn a_zero_interval_is_bad_input() {
    let out = headroom()
        .args(["watch", "--interval", "0", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("above zero"));
}

#[test]
fn an_unwritable_output_fails_first_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    let marker = dir.path().join("ran");
    let out = headroom()
        .args(["watch", "--summary"])
        .arg(&summary)
        .args(["--plot", "/nonexistent-dir/p.svg", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent-dir/p.svg"));
    assert!(
        !summary.exists(),
        "the summary created before the failure is removed"
    );
    assert!(!marker.exists(), "the job never started");
}

#[test]
fn exit_codes_and_signals_pass_through_like_a_shell() {
    headroom()
        .args(["watch", "--", "sh", "-c", "exit 3"])
        .assert()
        .code(3);
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    // kill -TERM $$ : the shell dies of SIGTERM, 128 + 15 = 143.
    headroom()
        .args(["watch", "--summary"])
        .arg(&summary)
        .args(["--", "sh", "-c", "kill -TERM $$"])
        .assert()
        .code(143);
    let s = read_json(&summary);
    assert_eq!(
        (s["signal"].as_u64(), s["category"].as_str()),
        (Some(15), Some("time_limit"))
    );
}

#[test]
fn sigterm_to_headroom_reaches_the_job_and_the_summary_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    let mut h = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["watch", "--summary"])
        .arg(&summary)
        .args(["--", "sh", "-c", "sleep 30 & wait"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    unsafe { libc::kill(h.id() as i32, libc::SIGTERM) };
    let st = h.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(st.code(), Some(143));
    let s = read_json(&summary);
    assert_eq!(
        (s["category"].as_str(), s["confidence"].as_str()),
        (Some("time_limit"), Some("certain"))
    );
    assert_eq!(u(&s, "max_processes"), 2, "the shell and its sleep");
}

#[test]
fn jsonl_rows_and_no_gpu_without_a_driver() {
    let dir = tempfile::tempdir().unwrap();
    let (tl, summary) = (dir.path().join("t.jsonl"), dir.path().join("s.json"));
    headroom()
        .args(["watch", "--interval", "50ms", "--format", "jsonl", "--out"])
        .arg(&tl)
        .arg("--summary")
        .arg(&summary)
        .args(["--", "sleep", "0.3"])
        .assert()
        .success();
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&tl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 0.3 s at 50 ms: about 6 samples; scheduling on a busy box may drop some.
    assert!(rows.len() >= 3, "{} rows", rows.len());
    assert!(
        rows.iter()
            .all(|r| r["processes"] == 1 && r["pss_sum_bytes"].as_u64().unwrap() > 0)
    );
    let s = read_json(&summary);
    if std::path::Path::new("/proc/driver/nvidia").exists() {
        eprintln!("SKIPPED the no-GPU half: an NVIDIA driver is present");
        return;
    }
    assert_eq!(s["gpu"], "no NVIDIA driver");
    assert!(s["peak_gpu_bytes"].is_null());
    assert!(rows.iter().all(|r| r["gpu_used_bytes"].is_null()));
}

#[test]
fn stderr_passes_through_and_its_tail_names_a_cuda_oom() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    let line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
    let out = headroom()
        .args(["watch", "--summary"])
        .arg(&summary)
        .args(["--", "sh", "-c", &format!("echo '{line}' >&2; exit 1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(line),
        "teed to the terminal"
    );
    let s = read_json(&summary);
    assert_eq!(
        (s["category"].as_str(), s["confidence"].as_str()),
        (Some("cuda_oom_capacity"), Some("likely"))
    );
}

#[test]
fn a_progress_line_only_on_a_terminal() {
    let out = headroom()
        .args(["watch", "--", "sleep", "0.3"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("[headroom]"),
        "pipes get no progress line"
    );
    // `script` gives the command a pseudo-terminal.
    let bin = env!("CARGO_BIN_EXE_headroom");
    let Ok(tty) = Command::new("script")
        .args([
            "-qec",
            &format!("{bin} watch --interval 50ms -- sleep 0.3"),
            "/dev/null",
        ])
        .output()
    else {
        eprintln!("SKIPPED the terminal half: no `script` here");
        return;
    };
    let text = String::from_utf8_lossy(&tty.stdout);
    assert!(
        text.contains("[headroom]") && text.contains("PSS"),
        "{text}"
    );
}

#[test]
fn the_job_leads_its_own_process_group_and_is_the_oom_killers_first_pick() {
    // The shell prints its pid, its process group (field 5 of stat) and its
    // oom_score_adj: pid == pgid after setpgid(0, 0), and 1000 as set pre-exec.
    let out = headroom()
        .args([
            "watch",
            "--",
            "sh",
            "-c",
            "echo $$; cut -d' ' -f5 /proc/$$/stat; cat /proc/$$/oom_score_adj",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], lines[1], "pid and process group");
    assert_eq!(lines[2], "1000");
}

#[test]
fn a_job_spec_draws_the_planned_peak_and_a_bad_one_stops_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (plot, marker) = (dir.path().join("p.svg"), dir.path().join("ran"));
    let out = headroom()
        .args(["watch", "--job", "ogbn-arxiv", "--plot"])
        .arg(&plot)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The planner's host peak for the default arxiv job, drawn and printed.
    let peak = json_of(headroom().args(["plan", "ogbn-arxiv", "--mem", "1T", "--format", "json"]));
    let want = headroom::units::fmt_bytes(u(&peak, "peak_host_bytes"));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.contains(&format!("predicted peak {want}")),
        "no '{want}' line in the plot"
    );
    let bad = headroom()
        .args(["watch", "--job"])
        .arg(fixture("plan/malformed.yaml"))
        .args(["--plot"])
        .arg(dir.path().join("q.svg"))
        .args(["--", "touch"])
        .arg(dir.path().join("ran2"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(!dir.path().join("q.svg").exists() && !dir.path().join("ran2").exists());
}
