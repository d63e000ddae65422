//! `headroom watch --pid | --cgroup | --slurm-job`: attaching to jobs that
//! the test starts itself, outside headroom; a real memory cgroup where this
//! machine lets us make one, a Slurm layout pasted into a temporary tree
//! around real processes otherwise.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use crate::util::{headroom, python, read_json, share_py};

/// Starts `argv` as the test's own child, then gives it time to fork.
fn start(argv: &[&str]) -> Child {
    let child = Command::new(argv[0]).args(&argv[1..]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    child
}

#[test]
fn attaches_to_a_running_tree_by_pid_and_sees_its_workers_and_its_end() {
    let Some(py) = python() else {
        eprintln!("SKIPPED: python3 not found");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    // 64 MiB shared by 3 forked workers for 2 s, started by the test.
    let mut job = start(&[&py, &share_py(), "64", "3", "2"]);
    let out = headroom()
        .args(["watch", "--interval", "100ms", "--pid"])
        .arg(job.id().to_string())
        .arg("--summary")
        .arg(&summary)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert!(job.wait().unwrap().success());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = read_json(&summary);
    assert_eq!(s["attached_to"], format!("pid {}", job.id()));
    assert_eq!(s["max_processes"], 4);
    assert!(s["duration_s"].as_f64().unwrap() > 1.0, "{s}");
    assert!(
        s["exit_status"]
            .as_str()
            .unwrap()
            .contains("cannot see its exit status")
    );
    // The forks are the training workers; the main process holds the array.
    let roles = s["roles_at_peak"].as_array().unwrap();
    let role = |name: &str| roles.iter().find(|r| r["role"] == name).cloned();
    let main = role("main").expect("main role");
    let workers = role("train_workers").expect("train workers");
    assert!(
        workers["rss_bytes"].as_u64().unwrap() >= (3 * 64) << 20,
        "{workers}"
    );
    // Each page once: the 4 processes' PSS sums to about one array.
    let pss = main["pss_bytes"].as_u64().unwrap() + workers["pss_bytes"].as_u64().unwrap();
    assert!(((64 << 20)..((64 + 48) << 20)).contains(&pss), "{roles:?}");
}

#[test]
fn a_process_that_is_not_there_is_bad_input() {
    for args in [
        vec!["--pid", "999999999"],
        vec!["--cgroup", "/nonexistent/cg"],
        vec!["--slurm-job", "12345", "--cgroup-root", "/nonexistent"],
    ] {
        let out = headroom().arg("watch").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// A Slurm job directory (v1 or v2 layout) whose task cgroup lists `pids`.
fn fake_slurm(root: &Path, v2: bool, job: u64, pids: &[u32]) -> PathBuf {
    let (dir, files): (PathBuf, Vec<(&str, &str)>) = if v2 {
        (
            root.join(format!("system.slice/slurmstepd.scope/job_{job}")),
            vec![
                ("memory.current", "104857600\n"),
                ("memory.max", "1073741824\n"),
                ("memory.events", "oom_kill 0\n"),
            ],
        )
    } else {
        (
            root.join(format!("memory/slurm/uid_1000/job_{job}")),
            vec![
                ("memory.usage_in_bytes", "104857600\n"),
                ("memory.limit_in_bytes", "1073741824\n"),
            ],
        )
    };
    let task = if v2 {
        dir.join("step_0/user/task_0")
    } else {
        dir.join("step_0/task_0")
    };
    std::fs::create_dir_all(&task).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let list: String = pids.iter().map(|p| format!("{p}\n")).collect();
    std::fs::write(task.join("cgroup.procs"), list).unwrap();
    dir
}

#[test]
fn a_slurm_job_is_found_in_both_layouts_and_ends_with_its_processes() {
    for v2 in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let mut job = start(&["sleep", "1.5"]);
        fake_slurm(root.path(), v2, 4242, &[job.id()]);
        let summary = root.path().join("s.json");
        let out = headroom()
            .args([
                "watch",
                "--slurm-job",
                "4242",
                "--interval",
                "100ms",
                "--cgroup-root",
            ])
            .arg(root.path())
            .arg("--summary")
            .arg(&summary)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        job.wait().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s = read_json(&summary);
        assert_eq!(s["attached_to"], "Slurm job 4242");
        assert_eq!(s["cgroup_limit_bytes"], 1u64 << 30, "v2 {v2}");
        assert_eq!(s["max_processes"], 1);
        assert!(s["samples"].as_u64().unwrap() >= 5, "{s}");
    }
}

/// Root and a writable memory cgroup v1 (this machine) or v2.
fn own_memory_cgroup() -> Option<PathBuf> {
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let v1 = text.lines().find_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, ctl, path) = (p.next()?, p.next()?, p.next()?);
        ctl.split(',')
            .any(|c| c == "memory")
            .then(|| PathBuf::from("/sys/fs/cgroup/memory").join(path.trim_start_matches('/')))
    });
    v1.filter(|d| d.join("memory.limit_in_bytes").exists())
}

#[test]
fn a_real_cgroup_crosses_both_thresholds_alerts_and_its_oom_kill_is_read() {
    let Some(py) = python() else {
        eprintln!("SKIPPED: python3 not found");
        return;
    };
    let Some(own) = own_memory_cgroup() else {
        eprintln!("SKIPPED: needs root and a memory cgroup v1 to make a child cgroup");
        return;
    };
    let cg = own.join(format!("headroom-attach-test-{}", std::process::id()));
    std::fs::create_dir(&cg).unwrap();
    std::fs::write(cg.join("memory.limit_in_bytes"), (128u64 << 20).to_string()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (summary, env_file) = (dir.path().join("s.json"), dir.path().join("env"));
    // The job joins the cgroup itself, then grows 8 MiB every 0.25 s
    // towards 320 MiB: past 50% and 75% of 128 MiB, then killed.
    let script = format!(
        "echo $$ > {}/cgroup.procs && sleep 0.5 && exec {py} {} grow 8 40 0.25",
        cg.display(),
        share_py()
    );
    let mut job = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let out = headroom()
        .args([
            "watch",
            "--interval",
            "50ms",
            "--stat-every",
            "1",
            "--alert-at",
            "50,75",
            "--cgroup",
        ])
        .arg(&cg)
        .arg("--summary")
        .arg(&summary)
        .arg("--alert-cmd")
        .arg(format!(
            "env | grep ^HEADROOM_ | sort >> {}; echo --- >> {}",
            env_file.display(),
            env_file.display()
        ))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let status = job.wait().unwrap();
    let _ = std::fs::remove_dir(&cg);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "the kernel killed the job");
    let err = String::from_utf8_lossy(&out.stderr);
    let alerts: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("[headroom] ALERT"))
        .collect();
    assert_eq!(alerts.len(), 2, "{err}");
    assert!(
        alerts[0].contains("ALERT 50%") && alerts[1].contains("ALERT 75%"),
        "{err}"
    );
    assert!(
        alerts
            .iter()
            .all(|a| a.contains("growing") && a.contains("the limit in about")),
        "{err}"
    );
    let env = std::fs::read_to_string(&env_file).unwrap();
    let blocks: Vec<&str> = env
        .split("---\n")
        .filter(|b| !b.trim().is_empty())
        .collect();
    assert_eq!(blocks.len(), 2, "{env}");
    for (block, pct) in blocks.iter().zip(["50", "75"]) {
        assert!(
            block.contains(&format!("HEADROOM_THRESHOLD_PCT={pct}\n")),
            "{block}"
        );
        assert!(
            block.contains("HEADROOM_LIMIT_BYTES=134217728\n"),
            "{block}"
        );
        let rate: f64 = block
            .lines()
            .find_map(|l| l.strip_prefix("HEADROOM_RATE_BYTES_PER_S="))
            .unwrap()
            .parse()
            .unwrap();
        // 8 MiB per 0.25 s is 32 MiB/s; the fit over a few samples is rough.
        assert!((8e6..80e6).contains(&rate), "{block}");
        assert!(
            block.contains(&format!("HEADROOM_TARGET=cgroup {}\n", cg.display())),
            "{block}"
        );
    }
    let s = read_json(&summary);
    assert_eq!(s["category"], "host_oom_cgroup", "{s}");
    assert_eq!(s["confidence"], "certain", "{s}");
    assert_eq!(s["oom_kill_delta"], 1, "{s}");
    assert_eq!(s["alerts"].as_array().unwrap().len(), 2);
}

#[test]
fn a_limit_above_the_machines_memory_is_warned_about() {
    let Some(own) = own_memory_cgroup() else {
        eprintln!("SKIPPED: needs root and a memory cgroup to make a --limit cgroup");
        return;
    };
    let _ = own;
    let out = headroom()
        .args(["watch", "--limit", "64T", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is more than this machine's memory") && err.contains("cannot be faithful"),
        "{err}"
    );
    let out = headroom()
        .args(["watch", "--limit", "64M", "--", "true"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("cannot be faithful"));
}

#[test]
fn an_attached_pid_killed_by_its_cgroup_reads_sigkill_from_the_kernel_log() {
    let Some(py) = python() else {
        eprintln!("SKIPPED: python3 not found");
        return;
    };
    let Some(own) = own_memory_cgroup() else {
        eprintln!("SKIPPED: needs root and a memory cgroup v1 to make a child cgroup");
        return;
    };
    if std::fs::File::open("/dev/kmsg").is_err() {
        eprintln!("SKIPPED: the kernel log is not readable here");
        return;
    }
    let cg = own.join(format!("headroom-attach-pid-{}", std::process::id()));
    std::fs::create_dir(&cg).unwrap();
    std::fs::write(cg.join("memory.limit_in_bytes"), (96u64 << 20).to_string()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    let script = format!(
        "echo $$ > {}/cgroup.procs && sleep 0.5 && exec {py} {} grow 16 40 0.1",
        cg.display(),
        share_py()
    );
    let mut job = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let out = headroom()
        .args(["watch", "--interval", "50ms", "--pid"])
        .arg(job.id().to_string())
        .arg("--summary")
        .arg(&summary)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    job.wait().unwrap();
    let _ = std::fs::remove_dir(&cg);
    assert_eq!(
        out.status.code(),
        Some(137),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = read_json(&summary);
    // The pid's own cgroup is the child cgroup: its counter makes it certain.
    assert_eq!(s["cgroup_dir"], cg.display().to_string());
    assert_eq!(s["category"], "host_oom_cgroup", "{s}");
    assert_eq!(s["confidence"], "certain", "{s}");
    assert!(
        s["exit_status"].as_str().unwrap().contains("SIGKILL"),
        "{s}"
    );
}
