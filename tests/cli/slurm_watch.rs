//! `watch --slurm-job N` and `watch --pid` on a real Slurm job killed by its
//! cgroup (tests/slurm/cluster.sh, task/cgroup with the cgroup root under the
//! test's own memory cgroup, so under no fixed path): the job's cgroup is
//! found from its processes, the limit is --mem from the ancestry (the
//! process's own task_0 is unlimited), the peak is the kernel's counter, and
//! "certain" only where the oom_kill counter showed the kill. Skips, saying
//! why, where Slurm or cgroup enforcement cannot start.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::slurm_live::{Cluster, ONE_CLUSTER, script, start};

fn slurm(dir: &Path, program: &str) -> Command {
    let mut c = Command::new(program);
    c.env("SLURM_CONF", dir.join("etc/slurm.conf"));
    c
}

fn stdout(mut c: Command) -> String {
    let out = c.output().expect("run a Slurm command");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The job's pids once it runs (scontrol listpids), waiting up to 20 s.
/// listpids also prints a row with PID -1 (a step whose task has no pid
/// yet): only real pids are kept (the test took "-1" for a pid once, and
/// `watch --pid -1` is refused).
fn running_pids(dir: &Path, job: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        let mut c = slurm(dir, "scontrol");
        c.args(["listpids", job]);
        let pids: Vec<String> = stdout(c)
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.parse::<u32>().ok())
            .filter(|&p| p > 0)
            .map(|p| p.to_string())
            .collect();
        if !pids.is_empty() {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("job {job} never ran");
}

fn watch(dir: &Path, target: &[&str], summary: &Path) -> Child {
    slurm(dir, env!("CARGO_BIN_EXE_headroom"))
        .arg("watch")
        .args(target)
        .args(["--interval", "100ms", "--summary"])
        .arg(summary)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start headroom watch")
}

fn summary(child: Child, path: &Path) -> Value {
    let out = child.wait_with_output().expect("headroom watch");
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no summary ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    serde_json::from_str(&text).expect("summary JSON")
}

#[test]
fn watch_finds_a_real_slurm_jobs_cgroup_limit_and_kernel_peak() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("cluster");
    match start(&dir, "cgroup") {
        Ok(mode) if mode == "cgroup" => {}
        Ok(mode) => {
            let _cluster = Cluster(dir.clone());
            eprintln!("SKIPPED watch_finds_a_real_slurm_job: no cgroup enforcement here ({mode})");
            return;
        }
        Err(why) => {
            eprintln!("SKIPPED watch_finds_a_real_slurm_job: Slurm cannot start here ({why})");
            return;
        }
    }
    let _cluster = Cluster(dir.clone());
    // 50 MiB/s to --mem=300M: killed by the cgroup after about 6 s.
    let grow = format!(
        "python3 {} step=20 limit=2000 pause=0.4",
        script("jobs/grow.py")
    );
    let mut sb = slurm(&dir, "sbatch");
    sb.args(["--parsable", "--mem=300M", "--job-name=watched", "-o"])
        .arg(tmp.path().join("out"))
        .args(["--wrap", &grow]);
    let job = stdout(sb);
    assert!(job.parse::<u64>().is_ok(), "sbatch said {job}");
    let pids = running_pids(&dir, &job);
    let (by_job, by_pid) = (tmp.path().join("job.json"), tmp.path().join("pid.json"));
    let w_job = watch(&dir, &["--slurm-job", &job], &by_job);
    let w_pid = watch(&dir, &["--pid", &pids[0]], &by_pid);
    let s = summary(w_job, &by_job);
    let p = summary(w_pid, &by_pid);

    // The kill did happen, by the cgroup (Slurm's own record).
    let until = Instant::now() + Duration::from_secs(30);
    let mut state = String::new();
    while Instant::now() < until && !state.contains("OUT_OF_MEMORY") {
        let mut c = slurm(&dir, "sacct");
        c.args(["-n", "-X", "-P", "-o", "State", "-j", &job]);
        state = stdout(c);
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(state, "OUT_OF_MEMORY");

    let limit = 300u64 << 20;
    let cgdir = s["cgroup_dir"].as_str().unwrap_or("");
    assert!(cgdir.ends_with(&format!("/job_{job}")), "{cgdir}");
    assert!(
        cgdir.starts_with(dir.to_str().unwrap_or("-")) || cgdir.contains("/slurm_"),
        "{cgdir}"
    );
    assert_eq!(s["cgroup_limit_bytes"].as_u64(), Some(limit), "{s}");
    let kernel = s["cgroup_kernel_peak_bytes"]
        .as_u64()
        .expect("a kernel peak");
    assert!(
        kernel > 250 << 20 && kernel <= limit,
        "kernel peak {kernel}"
    );
    let sampled = s["peak_cgroup_bytes"].as_u64().unwrap_or(0);
    assert!(
        sampled <= kernel,
        "sampled {sampled} over the kernel's {kernel}"
    );
    assert!(
        s["cgroup_kernel_peak_source"]
            .as_str()
            .unwrap_or("")
            .contains("memory.max_usage_in_bytes"),
        "{s}"
    );
    assert_eq!(s["category"], "host_oom_cgroup", "{s}");
    let counted = s["oom_kill_delta"].as_u64().unwrap_or(0) > 0;
    let reason = s["reason"].as_str().unwrap_or("");
    if counted {
        assert_eq!(s["confidence"], "certain", "{s}");
    } else {
        assert_ne!(s["confidence"], "certain", "{s}");
        assert!(
            reason.contains("rests on") || reason.contains("peak counter reached"),
            "{reason}"
        );
    }
    eprintln!(
        "watch --slurm-job {job}: limit {limit}, kernel peak {kernel}, sampled {sampled}, oom_kill +{}, {} ({})",
        s["oom_kill_delta"], s["confidence"], s["cgroup_kernel_peak_source"]
    );

    // --pid on the batch script: its task_0 is unlimited, the job's --mem
    // is above it.
    assert_eq!(p["cgroup_limit_bytes"].as_u64(), Some(limit), "{p}");
    let from = p["cgroup_limit_from"].as_str().unwrap_or("");
    assert!(
        from.contains("step_batch") || from.contains(&format!("job_{job}")),
        "{from}"
    );
}
