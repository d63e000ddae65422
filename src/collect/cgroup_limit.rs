//! A temporary child memory cgroup with a hard limit, to rehearse a cluster's
//! limit on this machine (`headroom watch --limit`).
//!
//! [`LimitCgroup::create`] makes `<own cgroup>/<name>` with the limit set;
//! the job joins it before exec by writing `0` to [`LimitCgroup::procs_path`];
//! [`LimitCgroup::remove`] deletes it once its processes are gone (also on
//! drop). Only directories this type created are ever removed. Swap limits
//! (`memory.memsw.limit_in_bytes`, `memory.swap.max`) are left alone: the
//! rehearsal limits RAM like Slurm's ConstrainRAMSpace, and changing swap
//! would change the parent's behaviour too.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::cgroup::{CgroupReader, CgroupVersion};

/// A child memory cgroup this process created and will remove.
#[derive(Debug)]
pub struct LimitCgroup {
    reader: CgroupReader,
    removed: bool,
}

impl LimitCgroup {
    /// Creates `<parent>/<name>` with a hard limit of `limit` bytes.
    /// The error says in one line why it could not be done.
    pub fn create(parent: &CgroupReader, name: &str, limit: u64) -> Result<Self, String> {
        let dir = parent.dir().join(name);
        if parent.version() == CgroupVersion::V2 {
            // v2 hands the memory controller to children only when asked.
            let ctl = parent.dir().join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&ctl).unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == "memory") {
                std::fs::write(&ctl, "+memory").map_err(|e| {
                    format!(
                        "cannot enable the memory controller in {}: {e}",
                        ctl.display()
                    )
                })?;
            }
        }
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create cgroup {}: {e}", dir.display()))?;
        let cg = LimitCgroup {
            reader: CgroupReader::with_root(&dir, parent.version()),
            removed: false,
        };
        let file = match parent.version() {
            CgroupVersion::V1 => "memory.limit_in_bytes",
            CgroupVersion::V2 => "memory.max",
        };
        std::fs::write(dir.join(file), limit.to_string())
            .map_err(|e| format!("cannot set {}: {e}", dir.join(file).display()))?;
        Ok(cg)
    }

    /// The reader of the new cgroup.
    pub fn reader(&self) -> &CgroupReader {
        &self.reader
    }

    /// The file a process writes `0` to in order to join.
    pub fn procs_path(&self) -> PathBuf {
        self.reader.dir().join("cgroup.procs")
    }

    /// Marks the directory as already gone (removed by someone else), so
    /// that dropping this does not remove a new cgroup made under its name.
    pub fn mark_gone(&mut self) {
        self.removed = true;
    }

    /// Removes the directory, retrying for up to two seconds while the
    /// kernel finishes tearing down the processes that were in it.
    pub fn remove(&mut self) -> Result<(), String> {
        if self.removed {
            return Ok(());
        }
        let dir = self.reader.dir().to_path_buf();
        let mut last = String::new();
        for _ in 0..40 {
            match std::fs::remove_dir(&dir) {
                Ok(()) => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("cannot remove cgroup {}: {last}", dir.display()))
    }
}

impl Drop for LimitCgroup {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Removes the `<prefix><pid>` cgroups under `parent` whose headroom
/// process is gone (killed with -9 before its guardian existed, or on a
/// kernel that lost it): their processes are killed, then the directory
/// removed. A pid that is alive and still a headroom keeps its cgroup.
/// Returns the directories removed.
pub fn remove_stale(parent: &CgroupReader, prefix: &str) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(parent.dir()) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(prefix)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let mut cg = LimitCgroup {
            reader: CgroupReader::with_root(entry.path(), parent.version()),
            removed: false,
        };
        let procs: Vec<i32> = std::fs::read_to_string(cg.procs_path())
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
            .collect();
        if owner_alive(Path::new("/proc"), pid, &procs) {
            continue;
        }
        for &p in &procs {
            // A process inside a cgroup headroom made.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        // remove() waits up to two seconds for the killed tasks to go.
        if cg.remove().is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// Whether the headroom that made `headroom-watch-PID` still runs: PID is
/// alive and is a headroom under any installed name (its comm starts with
/// "headroom": `headroom-gnn`, a copy named after its commit) or is the
/// parent of a process inside the cgroup. Checking for the exact comm
/// "headroom" killed the job of a watch running from a renamed binary.
/// A PID that names nothing, or another program (the PID reused), is stale.
fn owner_alive(proc_root: &Path, pid: u32, procs: &[i32]) -> bool {
    let Ok(comm) = std::fs::read_to_string(proc_root.join(format!("{pid}/comm"))) else {
        return false;
    };
    comm.starts_with("headroom")
        || procs.iter().any(|p| {
            std::fs::read_to_string(proc_root.join(format!("{p}/stat")))
                .ok()
                .and_then(|s| parent_pid(&s))
                == Some(pid)
        })
}

/// The parent PID in a /proc/PID/stat line (after the parenthesised comm,
/// which may itself hold spaces and parentheses).
fn parent_pid(stat: &str) -> Option<u32> {
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The one-line alternative for a systemd machine where headroom cannot
/// write cgroups itself; `None` where systemd is not running.
pub fn systemd_hint(limit_text: &str) -> Option<String> {
    std::path::Path::new("/run/systemd/system").exists().then(|| {
        format!(
            "run it under systemd instead: systemd-run --user --scope -p MemoryMax={limit_text} -- headroom watch -- CMD"
        )
    })
}

#[cfg(test)]
mod stale_tests {
    use super::*;

    /// A /proc stand-in: each (pid, comm, stat line).
    fn proc_tree(entries: &[(u32, &str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (pid, comm, stat) in entries {
            let d = root.path().join(pid.to_string());
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
            std::fs::write(d.join("stat"), stat).unwrap();
        }
        root
    }

    // Real /proc/PID/stat text (this machine's `cat`), pid and ppid edited.
    const CHILD_OF_29480: &str = "29482 (python) R 29480 29480 22309 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 2608304 3133440 410";
    const ODD_COMM: &str =
        "7 (a) b (c) S 29480 7 7 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 2608304 3133440 410";

    #[test]
    fn a_watch_running_from_a_renamed_binary_is_alive() {
        // comm is cut to 15 bytes: /work/bin/headroom-0573cbf shows so.
        let root = proc_tree(&[(29480, "headroom-0573cb", "")]);
        assert!(owner_alive(root.path(), 29480, &[]));
        let root = proc_tree(&[(29480, "headroom-gnn", "")]);
        assert!(owner_alive(root.path(), 29480, &[]));
    }

    #[test]
    fn an_owner_that_is_the_parent_of_the_cgroups_process_is_alive_whatever_its_name() {
        let root = proc_tree(&[(29480, "hr", ""), (29482, "python", CHILD_OF_29480)]);
        assert!(owner_alive(root.path(), 29480, &[29482]));
    }

    #[test]
    fn a_gone_or_reused_pid_is_stale() {
        let root = proc_tree(&[(29480, "bash", ""), (29482, "python", CHILD_OF_29480)]);
        assert!(!owner_alive(root.path(), 4194304, &[29482]));
        // 29480 is bash now, and the cgroup's process is not its child.
        assert!(!owner_alive(root.path(), 29480, &[]));
    }

    #[test]
    fn the_parent_pid_is_read_past_a_comm_with_spaces_and_parentheses() {
        assert_eq!(parent_pid(CHILD_OF_29480), Some(29480));
        assert_eq!(parent_pid(ODD_COMM), Some(29480));
        assert_eq!(parent_pid("garbage"), None);
    }
}
