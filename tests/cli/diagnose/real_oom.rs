//! A real OOM kill on this machine: a child memory cgroup under this test's
//! own cgroup, a 64 MiB limit, `dd` asking for a 256 MiB buffer inside it;
//! the kernel's own `dmesg` lines and the real exit status are diagnosed.
//! Skips, saying so, when not root or when the cgroup is not writable.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::headroom;

const LIMIT: u64 = 64 << 20;

/// The child cgroup; removed on drop (the killed process has left it by then).
struct ChildCgroup(PathBuf);

impl Drop for ChildCgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("warning: could not remove {}", self.0.display());
    }
}

/// This process's own memory cgroup directory and whether it is v2.
fn own_memory_cgroup() -> Option<(PathBuf, bool)> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "memory") {
            return Some((
                Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/')),
                false,
            ));
        }
    }
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    dir.join("cgroup.controllers")
        .exists()
        .then_some((dir, true))
}

fn dmesg_lines() -> Option<Vec<String>> {
    let out = Command::new("dmesg").output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    })
}

fn make_child(parent: &Path, v2: bool) -> Option<ChildCgroup> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .subsec_nanos();
    let dir = parent.join(format!(
        "headroom-diagnose-test-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).ok()?;
    let guard = ChildCgroup(dir.clone());
    let writes: &[(&str, String)] = if v2 {
        &[
            ("memory.max", LIMIT.to_string()),
            ("memory.swap.max", "0".into()),
        ]
    } else {
        &[
            ("memory.limit_in_bytes", LIMIT.to_string()),
            ("memory.memsw.limit_in_bytes", LIMIT.to_string()),
        ]
    };
    // The limit is required; the swap limit only exists when swap accounting is on.
    std::fs::write(dir.join(writes[0].0), &writes[0].1).ok()?;
    let _ = std::fs::write(dir.join(writes[1].0), &writes[1].1);
    Some(guard)
}

#[test]
fn real_cgroup_oom_kill_from_dmesg_is_certain_host_oom_cgroup() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED real_cgroup_oom_kill: needs root to create a memory cgroup");
        return;
    }
    let Some((parent, v2)) = own_memory_cgroup() else {
        eprintln!("SKIPPED real_cgroup_oom_kill: no memory cgroup found in /proc/self/cgroup");
        return;
    };
    let Some(before) = dmesg_lines() else {
        eprintln!("SKIPPED real_cgroup_oom_kill: dmesg is not readable");
        return;
    };
    let Some(child) = make_child(&parent, v2) else {
        eprintln!(
            "SKIPPED real_cgroup_oom_kill: {} is not writable",
            parent.display()
        );
        return;
    };
    // dd mallocs its 256 MiB block and read() fills it: every page is touched.
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec dd if=/dev/zero of=/dev/null bs=256M count=1",
        child.0.display()
    );
    let mut proc = Command::new("sh")
        .args(["-c", &script])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = proc.id();
    let status = proc.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    if status.success() {
        // Only possible when swap absorbed the excess (no swap limit exists
        // without swap accounting): there was no OOM kill to diagnose.
        eprintln!("SKIPPED real_cgroup_oom_kill: dd fit in 64 MiB plus swap; no OOM kill happened");
        return;
    }
    assert_eq!(
        status.signal(),
        Some(9),
        "dd in a 64 MiB cgroup must be SIGKILLed: {status:?}"
    );
    let exit_code = 128 + 9; // the shell's view of SIGKILL: 137
    let name = child.0.file_name().unwrap().to_string_lossy().into_owned();
    // Other tests kill processes in their own cgroups at the same time: keep
    // only the new lines that name this child cgroup or this pid.
    let seen: std::collections::HashSet<String> = before.into_iter().collect();
    let ours = |l: &String| {
        l.contains(&name)
            || l.contains(&format!("process {pid} "))
            || l.contains(&format!("pid={pid},"))
    };
    let new: Vec<String> = dmesg_lines()
        .unwrap_or_default()
        .into_iter()
        .filter(|l| !seen.contains(l) && ours(l))
        .collect();
    assert!(!new.is_empty(), "the kernel logged nothing for pid {pid}");
    let out = headroom()
        .args([
            "diagnose",
            "-",
            "--format",
            "json",
            "--exit-code",
            &exit_code.to_string(),
        ])
        .write_stdin(new.join("\n") + "\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["category"], "host_oom_cgroup", "lines: {new:#?}");
    assert_eq!(got["confidence"], "certain");
    assert_eq!(got["numbers"]["killed_pid"], pid, "lines: {new:#?}");
    assert_eq!(got["exit"]["signal"], 9);
}
