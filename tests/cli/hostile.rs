//! The hostile inputs of issue 15, each run through the real binary under
//! the bounds the issue sets: exit status 2 and one clean line on stderr
//! within 5 s, with the process's data segment limited to 300 MB (a bomb
//! that got through would abort instead). Each input is the one that showed
//! the defect, kept in tests/regressions.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn regression(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/regressions")
        .join(name)
}

/// Runs headroom with `args` under 300 MB and 5 s; returns its stderr after
/// checking exit 2 and a single line free of control characters.
fn refused(args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_headroom"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 300 << 20,
                rlim_max: 300 << 20,
            };
            libc::setrlimit(libc::RLIMIT_DATA, &lim);
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(5) {
            child.kill().unwrap();
            panic!("{args:?} ran past 5 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("headroom: "), "{err}");
    assert!(!err.trim_end().chars().any(char::is_control), "{err:?}");
    assert!(err.len() < 1200, "{} bytes", err.len());
    err
}

#[test]
fn snapshot_pickles_that_panicked_or_exploded_are_refused() {
    let cases = [
        ("snapshot_nan_set.pickle", "float as a dict key"),
        ("snapshot_shared_leaf_bomb.pickle", "largest expansion"),
        ("snapshot_device_1e9.pickle", "largest device index"),
        ("snapshot_device_u64max.pickle", "largest device index"),
        ("snapshot_device_i64max.pickle", "largest device index"),
    ];
    for (file, what) in cases {
        let p = regression(file);
        let err = refused(&["simulate-alloc", "--gpu", "80G", p.to_str().unwrap()]);
        assert!(err.contains(what), "{file}: {err}");
    }
}

#[test]
fn text_inputs_past_a_limit_are_refused_by_name() {
    let plan = |f: &str| refused(&["plan", regression(f).to_str().unwrap()]);
    assert!(plan("sbatch_doubling.sbatch").contains("longest variable"));
    assert!(plan("yaml_nested_100k.yaml").contains("YAML nesting"));
    // serde_yaml built the whole expansion and aborted at the 300 MB limit;
    // the spec is read as it streams, so the first misplaced key stops it.
    assert!(plan("yaml_alias_bomb.yaml").contains("line 4"));
    // Read as a calibration file, whose reader skips the unknown `dataset:`
    // by replaying it, the replay budget (src/yaml.rs) stops it.
    let bomb = regression("yaml_alias_bomb.yaml");
    let err = refused(&[
        "plan",
        "ogbn-arxiv",
        "--mem",
        "64G",
        "--calibration",
        bomb.to_str().unwrap(),
    ]);
    assert!(err.contains("too large or too complex"), "{err}");
    for (file, name) in [
        ("calibration_u64max.yaml", "runtime_bytes"),
        ("calibration_nan.yaml", "cpu_heap_small_tensors"),
        (
            "calibration_negative_reserve.yaml",
            "allocator_reserve_fraction",
        ),
    ] {
        let p = regression(file);
        let err = refused(&[
            "plan",
            "ogbn-papers100m",
            "--mem",
            "180M",
            "--calibration",
            p.to_str().unwrap(),
        ]);
        assert!(err.contains(name), "{file}: {err}");
    }
}

#[test]
fn special_files_are_named_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let d = dir.path().to_str().unwrap();
    let cases = [
        ("/dev/zero", "character device"),
        (fifo.to_str().unwrap(), "FIFO"),
        (d, "directory"),
        (a.to_str().unwrap(), "symlink loop"),
    ];
    for (path, kind) in cases {
        for args in [
            vec!["simulate-alloc", "--gpu", "80G", path],
            vec!["plan", path],
            vec!["plan", "ogbn-arxiv", "--mem", "64G", "--calibration", path],
        ] {
            let err = refused(&args);
            assert!(err.contains(kind), "{args:?}: {err}");
        }
    }
    // A log may be a FIFO (`<(dmesg)`), never a device read forever.
    assert!(refused(&["diagnose", "/dev/zero"]).contains("character device"));
}

#[test]
fn control_characters_in_a_job_name_never_reach_the_terminal() {
    let p = regression("job_escape_name.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["plan", p.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("evil\\x1b]0;pwned\\x07\\x1b[2J"), "{text}");
    assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07));
}
