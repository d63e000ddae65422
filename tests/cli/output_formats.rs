//! Every output format says what the text says (issue 26): a job on the CPU
//! has no GPU figure in JSON or YAML either, and a control character that
//! came from input (a log line, a process name, a command's argument) is
//! escaped in the table, JSON, YAML, GitHub annotations, the watch timeline
//! (CSV and JSON lines), its summary and its SVG plot.

use std::collections::BTreeSet;

use crate::util::{headroom, json_of, python};

/// Every key path of a document, array positions left out (`a.b.c`).
fn key_paths(v: &serde_json::Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}.{k}");
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| key_paths(x, at, out)),
        _ => {}
    }
}

fn paths(v: &serde_json::Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    key_paths(v, "", &mut out);
    out
}

fn about_the_gpu(path: &str) -> bool {
    path.split('.').any(|k| k.contains("gpu"))
}

#[test]
fn a_cpu_plan_carries_no_gpu_figure_in_json_or_yaml() {
    let args = ["plan", "ogbn-papers100m", "--mem", "128G"];
    let cuda = json_of(headroom().args(args).args(["--format", "json"]));
    let cpu = json_of(
        headroom()
            .args(args)
            .args(["--device", "cpu", "--format", "json"]),
    );
    assert_eq!(cpu["device"], "cpu");
    let (cuda_keys, cpu_keys) = (paths(&cuda), paths(&cpu));
    let gpu: Vec<&String> = cpu_keys.iter().filter(|p| about_the_gpu(p)).collect();
    assert!(gpu.is_empty(), "GPU keys in a CPU plan: {gpu:?}");
    // Everything else is there: the CPU form leaves out the GPU, nothing more.
    let expected: BTreeSet<String> = cuda_keys
        .iter()
        .filter(|p| !about_the_gpu(p))
        .cloned()
        .collect();
    assert_eq!(cpu_keys, expected);
    assert!(cuda["peak_gpu_bytes"].as_u64().unwrap() > 0);
    // YAML carries the same document.
    let out = headroom()
        .args(args)
        .args(["--device", "cpu", "--format", "yaml"])
        .output()
        .unwrap();
    let yaml: serde_json::Value =
        headroom::yaml::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(paths(&yaml), cpu_keys);
    assert_eq!(yaml["peak_host_bytes"], cpu["peak_host_bytes"]);
}

#[test]
fn diagnose_recommends_for_a_cpu_job_without_gpu_figures() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("cpu.yaml");
    std::fs::write(
        &job,
        "dataset: ogbn-products\ndevice: cpu\nbudget: {host: 16G}\nloader: {batch_size: 1024, fanout: [15, 10], num_workers: 4}\n",
    )
    .unwrap();
    let job = job.to_str().unwrap();
    let d = json_of(headroom().args([
        "diagnose",
        "--exit-code",
        "137",
        "--job",
        job,
        "--format",
        "json",
    ]));
    assert!(d["recommended"].is_object(), "{d}");
    let gpu: Vec<String> = paths(&d["recommended"])
        .into_iter()
        .filter(|p| about_the_gpu(p))
        .collect();
    assert!(gpu.is_empty(), "{gpu:?}");
    let line = d["recommendation"].as_str().unwrap();
    assert!(!line.contains("GPU"), "{line}");
}

/// Bytes that a terminal would obey: C0 controls but line breaks and tabs,
/// DEL, and C1 controls (as UTF-8 or as lone bytes).
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.chars()
        .filter(|&c| c.is_control() && c != '\n' && c != '\t')
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

#[test]
fn control_characters_from_a_log_are_escaped_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("slurm-1.out");
    // slurmstepd's proof line with DEL, an OSC title sequence, and C1 CSI
    // both as UTF-8 (U+009B) and as a lone byte.
    let mut bytes = b"slurmstepd: error: Detected 1 oom_kill event in StepId=1.batch".to_vec();
    bytes.extend_from_slice(b"\x7f\x1b]0;pwned\x07\xc2\x9b2J\x9b");
    bytes.extend_from_slice(b". Some of the step tasks have been OOM Killed.\n");
    std::fs::write(&log, &bytes).unwrap();
    for format in ["table", "json", "yaml", "github"] {
        let out = headroom()
            .args(["diagnose", log.to_str().unwrap(), "--format", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}");
        let mut all = out.stdout.clone();
        all.extend_from_slice(&out.stderr);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("oom_kill event"),
            "{format}: the line is not shown"
        );
        assert_eq!(raw_controls(&all), Vec::<String>::new(), "{format}");
    }
    // The reader drops terminal sequences (ESC ]…BEL, CSI) as it drops
    // colour codes, and keeps DEL; JSON escapes it and a reader gets it back.
    let d = json_of(headroom().args(["diagnose", log.to_str().unwrap(), "--format", "json"]));
    let text = d["evidence"][0]["text"].as_str().unwrap();
    assert!(text.contains("batch\u{7f}"), "{text:?}");
}

#[test]
fn a_process_named_with_control_characters_is_escaped_in_every_watch_file() {
    let Some(py) = python() else {
        eprintln!("skipped: no python3");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = |f: &str| dir.path().join(f);
    // The job renames itself (prctl PR_SET_NAME) and holds 64 MiB, so it is
    // the top process in every row; its argument carries ESC and DEL too.
    let script = "import ctypes, sys, time\n\
        ctypes.CDLL(None).prctl(15, b'ev\\x1b]0;x\\x07\\x7f\\xc2\\x9b', 0, 0, 0)\n\
        b = bytearray(64 << 20)\n\
        for i in range(0, len(b), 4096): b[i] = 1\n\
        time.sleep(0.6)\n";
    std::fs::write(d("job.py"), script).unwrap();
    let arg = "a\u{1b}[2J\u{7f}b";
    for (format, timeline) in [("csv", "t.csv"), ("jsonl", "t.jsonl")] {
        let out = headroom()
            .args(["watch", "--interval", "50ms", "--format", format])
            .arg("--out")
            .arg(d(timeline))
            .arg("--summary")
            .arg(d("s.json"))
            .arg("--plot")
            .arg(d("p.svg"))
            .args(["--", &py, d("job.py").to_str().unwrap(), arg])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for file in [timeline, "s.json", "p.svg"] {
            let bytes = std::fs::read(d(file)).unwrap();
            assert_eq!(raw_controls(&bytes), Vec::<String>::new(), "{file}");
        }
        assert_eq!(raw_controls(&out.stderr), Vec::<String>::new(), "stderr");
        let rows = std::fs::read_to_string(d(timeline)).unwrap();
        assert!(
            rows.contains(r"ev\x1b]0;x\x07\x7f\x9b")
                || rows.contains(r"ev\u001b]0;x\u0007\u007f\u009b"),
            "{timeline}: the renamed process is not in it:\n{}",
            &rows[..rows.len().min(2000)]
        );
        let svg = std::fs::read_to_string(d("p.svg")).unwrap();
        assert!(svg.contains(r"a\x1b[2J\x7fb"), "the plot's title");
    }
}
