//! Real jobs on a real Slurm, run now: tests/slurm/cluster.sh starts a
//! single-node Slurm 22.05 (installing Debian's packages when root and they
//! are missing), the scenarios of issue 29 run as real batch jobs, and each is
//! diagnosed from every input a user has. Where Slurm cannot start (no root,
//! no apt, no packages) the test says plainly that it skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::slurm_sealed::{diagnose_files, input_files};

/// One scenario: its sbatch arguments and the category each input must give.
struct Scenario {
    name: &'static str,
    args: Vec<String>,
    cancel_after: Option<&'static str>,
    want: &'static [(&'static str, &'static str)],
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn script(name: &str) -> String {
    repo().join("tests/slurm").join(name).display().to_string()
}

/// One cluster at a time on a machine (its ports, munged's socket): every
/// test that starts one holds this.
pub static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Starts the cluster; `Err` carries the reason it could not.
pub fn start(dir: &Path, mode: &str) -> Result<String, String> {
    let out = Command::new("bash")
        .arg(script("cluster.sh"))
        .args(["start", &dir.display().to_string(), mode])
        .output()
        .map_err(|e| format!("bash: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let started = match text.lines().last() {
        Some(l) if l.starts_with("ready ") => Ok(l["ready ".len()..].to_string()),
        Some(l) if l.starts_with("skip: ") => Err(l["skip: ".len()..].to_string()),
        _ => Err(format!(
            "cluster.sh gave no answer: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        )),
    };
    if started.is_err() {
        // A start that failed half-way may have left daemons or the cgroup
        // bind mount (the test's own cgroup) inside the temporary directory,
        // whose removal would then rmdir other programs' empty cgroups.
        drop(Cluster(dir.to_path_buf()));
    }
    started
}

/// Ends the cluster's processes (by the pids it recorded) when dropped.
pub struct Cluster(pub PathBuf);

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script("cluster.sh"))
            .args(["stop", &self.0.display().to_string()])
            .status();
    }
}

fn run(dir: &Path, jobs: &Path, s: &Scenario) {
    let mut cmd = Command::new("bash");
    cmd.arg(script("run_job.sh"))
        .arg(dir)
        .arg(jobs.join(s.name));
    if let Some(after) = s.cancel_after {
        cmd.args(["--cancel-after", after]);
    }
    let st = cmd.arg("--").args(&s.args).status().expect("run_job.sh");
    assert!(st.success(), "{}: run_job.sh failed", s.name);
}

/// A python that imports torch, for the real DataLoader worker.
fn torch_python() -> Option<String> {
    let venv = repo().join("benches/pyg/.venv/bin/python");
    let venv_main = PathBuf::from("/work/main/benches/pyg/.venv/bin/python");
    [venv, venv_main, PathBuf::from("python3")]
        .into_iter()
        .map(|p| p.display().to_string())
        .find(|p| {
            Command::new(p)
                .args(["-c", "import torch"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

fn check(jobs: &Path, scenarios: &[Scenario], table: &mut Vec<String>) -> Vec<String> {
    let mut wrong = Vec::new();
    for s in scenarios {
        let mut row = format!("{:<13}", s.name);
        for (input, want) in s.want {
            let got = diagnose_files(&input_files(&jobs.join(s.name), input))
                .map(|v| v["category"].as_str().unwrap_or("?").to_string())
                .unwrap_or_else(|e| format!("error: {e}"));
            let ok = got == *want;
            row.push_str(&format!(" {input}={}", if ok { "ok" } else { "MISS" }));
            if !ok {
                wrong.push(format!("{} {input}: want {want} got {got}", s.name));
            }
        }
        table.push(row);
    }
    wrong
}

const OOM: &[(&str, &str)] = &[
    ("out+err", "host_oom_cgroup"),
    ("sacct", "host_oom_cgroup"),
    ("json", "host_oom_cgroup"),
    ("seff", "host_oom_cgroup"),
    ("dmesg", "host_oom_cgroup"),
    ("all", "host_oom_cgroup"),
];
const STOPPED: &[(&str, &str)] = &[
    ("out+err", "time_limit"),
    ("sacct", "time_limit"),
    ("json", "time_limit"),
    ("seff", "time_limit"),
    ("all", "time_limit"),
];
const POLLED: &[(&str, &str)] = &[
    ("out+err", "host_oom_rss_sum"),
    ("sacct", "host_oom_rss_sum"),
    ("json", "host_oom_rss_sum"),
    ("seff", "host_oom_rss_sum"),
    ("all", "host_oom_rss_sum"),
];

#[test]
fn real_slurm_jobs_are_diagnosed_from_every_input() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("cluster");
    let jobs = tmp.path().join("jobs");
    let grow = script("jobs/grow.py");
    let wrap = |s: &str| vec!["--wrap".to_string(), s.to_string()];
    let sb = |mem: &str, name: &str, cmd: &str| {
        let mut a = vec![format!("--mem={mem}"), format!("--job-name={name}")];
        a.extend(wrap(cmd));
        a
    };
    let mode = match start(&dir, "cgroup") {
        Ok(m) => m,
        Err(why) => {
            eprintln!(
                "SKIPPED real_slurm_jobs_are_diagnosed_from_every_input: Slurm cannot start here ({why})"
            );
            return;
        }
    };
    let cluster = Cluster(dir.clone());
    let mut table = Vec::new();
    let mut wrong = Vec::new();
    if mode == "cgroup" {
        let worker = match torch_python() {
            Some(py) => format!("{py} {}", script("jobs/dataloader_worker.py")),
            None => format!("python3 {grow} --child step=50 limit=2000"),
        };
        let mut time_limit = vec!["--time=1".to_string()];
        time_limit.extend(sb("200M", "time-limit", "echo training; sleep 600"));
        let scenarios = vec![
            Scenario {
                name: "time-limit",
                args: time_limit,
                cancel_after: None,
                want: STOPPED,
            },
            Scenario {
                name: "oom-main",
                args: sb(
                    "300M",
                    "oom-main",
                    &format!("python3 {grow} step=50 limit=2000"),
                ),
                cancel_after: None,
                want: OOM,
            },
            Scenario {
                name: "oom-worker",
                args: sb("600M", "oom-worker", &worker),
                cancel_after: None,
                want: OOM,
            },
            Scenario {
                name: "oom-fast",
                args: sb(
                    "300M",
                    "oom-fast",
                    &format!("python3 {grow} step=1000 limit=1000 pause=0"),
                ),
                cancel_after: None,
                want: OOM,
            },
            Scenario {
                name: "srun-steps",
                args: sb(
                    "300M",
                    "srun-steps",
                    &format!("srun -n1 true; srun -n1 python3 {grow} step=50 limit=2000"),
                ),
                cancel_after: None,
                // seff shows only the job's own line (FAILED, exit code 1:
                // the batch script's status after its step died), no step
                // rows: from seff alone the step's OOM is invisible, and
                // diagnose says only what seff does, that the script ended
                // itself.
                want: &[
                    ("out+err", "host_oom_cgroup"),
                    ("sacct", "host_oom_cgroup"),
                    ("json", "host_oom_cgroup"),
                    ("seff", "python_error"),
                    ("dmesg", "host_oom_cgroup"),
                    ("all", "host_oom_cgroup"),
                ],
            },
            Scenario {
                name: "scancel",
                args: sb("200M", "scancel", "echo started; sleep 600"),
                cancel_after: Some("2"),
                want: STOPPED,
            },
            // Its node log holds the kills of the jobs above: not its own.
            Scenario {
                name: "success",
                args: sb(
                    "200M",
                    "success",
                    &format!("python3 {grow} step=10 limit=100"),
                ),
                cancel_after: None,
                want: &[
                    ("out+err", "unknown"),
                    ("sacct", "success"),
                    ("json", "success"),
                    ("seff", "success"),
                    ("all", "success"),
                ],
            },
            Scenario {
                name: "exit-3",
                args: sb(
                    "200M",
                    "exit-3",
                    "echo 'config error: no such dataset' >&2; exit 3",
                ),
                cancel_after: None,
                want: &[
                    ("out+err", "unknown"),
                    ("sacct", "python_error"),
                    ("json", "python_error"),
                    ("seff", "python_error"),
                    ("all", "python_error"),
                ],
            },
        ];
        // The time limit takes a minute: it runs beside the others (2 CPUs).
        std::thread::scope(|sc| {
            let (first, rest) = scenarios.split_at(1);
            let handle = sc.spawn(|| run(&dir, &jobs, &first[0]));
            for s in rest {
                run(&dir, &jobs, s);
            }
            handle.join().expect("time-limit job");
        });
        wrong.extend(check(&jobs, &scenarios, &mut table));
    } else {
        eprintln!(
            "cgroup enforcement unavailable here: the cgroup scenarios were skipped, polling ran"
        );
    }
    drop(cluster);

    match start(&dir, "polling") {
        Ok(_) => {
            let _cluster = Cluster(dir.clone());
            let scenarios = vec![
                Scenario {
                    name: "poll-main",
                    args: sb(
                        "300M",
                        "poll-main",
                        &format!("python3 {grow} step=20 limit=2000 pause=0.2"),
                    ),
                    cancel_after: None,
                    want: POLLED,
                },
                Scenario {
                    name: "poll-child",
                    args: sb(
                        "300M",
                        "poll-child",
                        &format!("python3 {grow} --child step=20 limit=2000 pause=0.2"),
                    ),
                    cancel_after: None,
                    want: POLLED,
                },
            ];
            for s in &scenarios {
                run(&dir, &jobs, s);
            }
            wrong.extend(check(&jobs, &scenarios, &mut table));
        }
        Err(why) => eprintln!("polling cluster did not start: {why}"),
    }
    eprintln!(
        "\nreal Slurm ({mode} then polling):\n  {}",
        table.join("\n  ")
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
