//! Issue 29's sealed set (tests/fixtures/slurm/real/): eight real jobs run on
//! the real single-node Slurm 22.05 of tests/slurm/cluster.sh, each diagnosed
//! from every input a user has, alone and all together, against the category
//! decided by hand before diagnose ran on them (labels.yaml). Prints the
//! job × input table; every cell must be right and every recorded figure
//! exact.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::util::{fixture, headroom};

#[derive(Debug, Deserialize)]
struct Job {
    job: String,
    want: BTreeMap<String, String>,
    #[serde(default)]
    numbers: BTreeMap<String, BTreeMap<String, u64>>,
}

/// The files of one input, as a user would pass them.
pub fn input_files(dir: &std::path::Path, input: &str) -> Vec<PathBuf> {
    let names: &[&str] = match input {
        "out+err" => &["out", "err"],
        "sacct" => &["sacct.txt"],
        "json" => &["sacct.json"],
        "seff" => &["seff.txt"],
        "dmesg" => &["dmesg.txt"],
        "all" => &[
            "out",
            "err",
            "sacct.txt",
            "sacct.json",
            "seff.txt",
            "dmesg.txt",
        ],
        other => panic!("unknown input {other}"),
    };
    names.iter().map(|n| dir.join(n)).collect()
}

pub fn diagnose_files(files: &[PathBuf]) -> Result<Value, String> {
    let out = headroom()
        .arg("diagnose")
        .args(files)
        .args(["--format", "json"])
        .output()
        .expect("run headroom");
    if out.status.code() != Some(0) {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

#[test]
fn the_sealed_slurm_jobs_are_diagnosed_from_every_input() {
    let root = fixture("slurm/real");
    let text = std::fs::read_to_string(root.join("labels.yaml")).expect("labels");
    let jobs: Vec<Job> = headroom::yaml::from_str(&text).expect("labels YAML");
    let inputs = ["out+err", "sacct", "json", "seff", "all"];
    let (mut right, mut total, mut wrong) = (0, 0, Vec::new());
    eprintln!(
        "\n{:<12} {}",
        "job",
        inputs.map(|i| format!("{i:<18}")).join("")
    );
    for job in &jobs {
        let mut row = format!("{:<12}", job.job);
        for input in inputs {
            let want = &job.want[input];
            let got = diagnose_files(&input_files(&root.join(&job.job), input));
            let cat = match &got {
                Ok(v) => v["category"].as_str().unwrap_or("?").to_string(),
                Err(e) => format!("error: {e}"),
            };
            total += 1;
            let ok = &cat == want;
            right += u32::from(ok);
            if !ok {
                wrong.push(format!("{} {input}: want {want} got {cat}", job.job));
            }
            if let (Ok(v), Some(nums)) = (&got, job.numbers.get(input)) {
                for (k, want) in nums {
                    if v["numbers"][k].as_u64() != Some(*want) {
                        wrong.push(format!(
                            "{} {input}: numbers.{k} want {want} got {}",
                            job.job, v["numbers"][k]
                        ));
                    }
                }
            }
            row.push_str(&format!("{:<18}", if ok { "ok" } else { "MISS" }));
        }
        eprintln!("{row}");
    }
    eprintln!("\nsealed Slurm set: {right}/{total} right");
    for w in &wrong {
        eprintln!("  {w}");
    }
    assert_eq!(total, 40);
    assert!(wrong.is_empty(), "{} of 40 wrong", wrong.len());
}

/// The sentences issue 29 asked for, on the real artifacts: which unit a
/// polling kill's figures were read in, that another job's kill in dmesg is
/// not this job's, that a MaxRSS under the limit of an OOM-killed job is the
/// poll missing the growth, and that exit 3 is the program's own end.
#[test]
fn the_sealed_slurm_verdicts_say_what_they_read() {
    let root = fixture("slurm/real");
    let verdict = |job: &str, input: &str| {
        let v = diagnose_files(&input_files(&root.join(job), input)).expect("diagnose");
        v["verdict"].as_str().unwrap_or("").to_string()
    };
    let poll = verdict("poll-main", "all");
    assert!(poll.contains("read as bytes"), "{poll}");
    assert!(poll.contains("340 MiB > 300 MiB"), "{poll}");
    let tl = verdict("time-limit", "all");
    assert!(tl.contains("not this job's"), "{tl}");
    assert!(tl.contains("job 4"), "{tl}");
    let fast = verdict("oom-fast", "sacct");
    assert!(fast.contains("sampled before the growth"), "{fast}");
    let exit3 = verdict("exit-3", "sacct");
    assert!(exit3.contains("exit status 3"), "{exit3}");
}

/// A job Slurm stopped has `0:0` on its own row and the SIGTERM on its batch
/// step's (`2.batch|batch|CANCELLED|0:15`): the exit line gives the step's
/// signal, not "exited normally". A job that ended itself keeps its own row.
#[test]
fn a_stopped_jobs_exit_line_is_its_batch_steps_signal() {
    let root = fixture("slurm/real");
    let exit = |job: &str, input: &str| {
        let v = diagnose_files(&input_files(&root.join(job), input)).expect("diagnose");
        v["exit"]["raw"].as_str().unwrap_or("-").to_string()
    };
    assert_eq!(exit("time-limit", "sacct"), "0:15");
    assert_eq!(exit("time-limit", "all"), "0:15");
    assert_eq!(exit("success", "sacct"), "0:0");
    assert_eq!(exit("exit-3", "sacct"), "3:0");
    assert_eq!(exit("oom-main", "sacct"), "0:125");
}
