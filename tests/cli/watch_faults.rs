//! `watch` under faults, with real processes: a job that ignores SIGTERM is
//! SIGKILLed after `--kill-after`, and a `kill -9` of headroom itself leaves
//! no job process, no limit cgroup and no empty output file behind, with
//! the timeline written so far valid row by row.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn headroom() -> Command {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
}

/// Alive and not a zombie (a container's pid 1 may never reap them).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn wait_for(file: &Path, lines: usize) -> Vec<i32> {
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.len() >= lines {
            return pids;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the job never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The job: a shell that writes its pid and two background workers' pids.
fn job(pids: &Path, ignore_term: bool) -> Vec<String> {
    let trap = if ignore_term { "trap '' TERM; " } else { "" };
    let script = format!(
        "{trap}echo $$ > {p}; sleep 300 & echo $! >> {p}; sleep 300 & echo $! >> {p}; wait",
        p = pids.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

#[test]
fn a_job_ignoring_sigterm_is_killed_after_the_grace_and_the_verdict_says_who() {
    let dir = tempfile::tempdir().unwrap();
    let (pids, summary) = (dir.path().join("pids"), dir.path().join("s.json"));
    let mut h = headroom()
        .args(["watch", "--kill-after", "1s", "--summary"])
        .arg(&summary)
        .arg("--")
        .args(job(&pids, true))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let job_pids = wait_for(&pids, 3);
    let t = Instant::now();
    unsafe { libc::kill(h.id() as i32, libc::SIGTERM) };
    let st = h.wait().unwrap();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(st.code(), Some(137), "SIGKILL after the grace");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let reason = s["reason"].as_str().unwrap();
    assert!(
        reason.contains("SIGTERM") && reason.contains("SIGKILL"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("pid {}", std::process::id())),
        "{reason}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(job_pids.iter().all(|&p| !alive(p)), "{job_pids:?}");
}

/// The memory cgroup controller is usable here (root, v1 or v2 writable).
fn can_make_cgroups() -> bool {
    (unsafe { libc::geteuid() }) == 0
        && std::fs::read_to_string("/proc/self/cgroup").is_ok_and(|t| {
            t.lines()
                .any(|l| l.contains(":memory:") || l.starts_with("0::"))
        })
}

#[test]
fn kill_9_of_headroom_leaves_no_process_no_cgroup_and_no_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let limit = can_make_cgroups();
    let mut cmd = headroom();
    cmd.args(["watch", "--interval", "50ms", "--out"])
        .arg(p("t.csv"));
    cmd.arg("--summary")
        .arg(p("s.json"))
        .arg("--plot")
        .arg(p("p.svg"));
    if limit {
        cmd.args(["--limit", "512M"]);
    }
    let mut h = cmd
        .arg("--")
        .args(job(&p("pids"), false))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let job_pids = wait_for(&p("pids"), 3);
    let cgroup = PathBuf::from(format!("headroom-watch-{}", h.id()));
    let cg_dir = limit.then(|| find_cgroup(job_pids[0], &cgroup)).flatten();
    if limit {
        assert!(cg_dir.is_some(), "the job runs in headroom's limit cgroup");
    }
    std::thread::sleep(Duration::from_millis(400));
    unsafe { libc::kill(h.id() as i32, libc::SIGKILL) };
    h.wait().unwrap();
    let t = Instant::now();
    let left = || {
        job_pids.iter().any(|&p| alive(p))
            || cg_dir.as_ref().is_some_and(|d| d.exists())
            || p("s.json").exists()
            || p("p.svg").exists()
    };
    while left() {
        let files = (p("s.json").exists(), p("p.svg").exists());
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "left: {job_pids:?} {cg_dir:?} {files:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The timeline so far: a header and whole rows, every one the same width.
    let mut rows = csv::Reader::from_path(p("t.csv")).unwrap();
    let width = rows.headers().unwrap().len();
    let n = rows
        .records()
        .map(|r| assert_eq!(r.unwrap().len(), width))
        .count();
    assert!(n >= 2, "{n} rows");
}

/// The directory of cgroup `name` that `pid` is in, from /proc/pid/cgroup
/// and the memory controller's mount.
fn find_cgroup(pid: i32, name: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let rel = text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':').skip(1);
        let (ctl, path) = (f.next()?, f.next()?);
        (ctl.split(',').any(|c| c == "memory") || ctl.is_empty()).then(|| path.to_string())
    })?;
    assert!(rel.ends_with(name.to_str()?), "{rel}");
    ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"]
        .iter()
        .map(|m| PathBuf::from(format!("{m}{rel}")))
        .find(|d| d.exists())
}

#[test]
fn a_stale_cgroup_of_a_dead_headroom_is_removed_at_start() {
    if !can_make_cgroups() {
        eprintln!("SKIPPED: needs root and a memory cgroup");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let run = || {
        headroom()
            .args(["watch", "--limit", "64M", "--summary"])
            .arg(&s)
            .args(["--", "true"])
            .output()
            .unwrap()
    };
    let out = run();
    if !out.status.success() {
        eprintln!("SKIPPED: {}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&s).unwrap()).unwrap();
    let parent = PathBuf::from(v["cgroup_dir"].as_str().unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    // pid 4194304 is above pid_max's ceiling: never a live headroom.
    let stale = parent.join("headroom-watch-4194304");
    std::fs::create_dir(&stale).unwrap();
    assert!(run().status.success());
    assert!(!stale.exists(), "{} left", stale.display());
}
