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

use std::path::PathBuf;
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
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "headroom" {
            continue;
        }
        let mut cg = LimitCgroup {
            reader: CgroupReader::with_root(entry.path(), parent.version()),
            removed: false,
        };
        let procs = std::fs::read_to_string(cg.procs_path()).unwrap_or_default();
        for p in procs
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
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

/// The one-line alternative for a systemd machine where headroom cannot
/// write cgroups itself; `None` where systemd is not running.
pub fn systemd_hint(limit_text: &str) -> Option<String> {
    std::path::Path::new("/run/systemd/system").exists().then(|| {
        format!(
            "run it under systemd instead: systemd-run --user --scope -p MemoryMax={limit_text} -- headroom watch -- CMD"
        )
    })
}
