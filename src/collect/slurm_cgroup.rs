//! Where a running Slurm job's memory cgroup is on this node, wherever
//! Slurm put it (`watch --slurm-job N`). Three ways, in order:
//!
//! 1. the job's own processes: `scontrol listpids N` names them, and each
//!    one's `/proc/PID/cgroup` (read against its mountinfo) is its cgroup,
//!    `…/job_N/step_*/task_*`; the job is the nearest `job_N` above it. This
//!    finds it under any mount point, prefix or node name;
//! 2. cgroup.conf's `CgroupMountpoint` (beside `$SLURM_CONF`, else
//!    /etc/slurm), searched in Slurm's layouts ([`super::job_cgroup::slurm_job`]);
//! 3. the cgroup mount root (`/sys/fs/cgroup`), searched the same way.
//!
//! Each way says why it found nothing, and the error lists them all.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::cgroup::CgroupReader;
use super::job_cgroup;

/// The pids of `scontrol listpids` output (`PID JOBID STEPID LOCALID
/// GLOBALID` header, then one row per process).
pub fn parse_listpids(text: &str) -> Vec<u32> {
    let mut pids: Vec<u32> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// `CgroupMountpoint=` of a cgroup.conf text (keys are case-insensitive in
/// Slurm's config files; `#` starts a comment).
pub fn parse_cgroup_mountpoint(conf: &str) -> Option<PathBuf> {
    conf.lines().find_map(|line| {
        let line = line.split('#').next()?.trim();
        let (key, value) = line.split_once('=')?;
        (key.trim().eq_ignore_ascii_case("CgroupMountpoint") && !value.trim().is_empty())
            .then(|| PathBuf::from(value.trim()))
    })
}

/// The nearest directory at or above `dir` named `job_<job>`.
pub fn job_ancestor(dir: &Path, job: u64) -> Option<PathBuf> {
    let name = format!("job_{job}");
    dir.ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == name.as_str()))
        .map(Path::to_path_buf)
}

/// The job's cgroup from its processes' `/proc/PID/cgroup` under `proc_root`.
pub fn from_pids(proc_root: &Path, pids: &[u32], job: u64) -> Result<CgroupReader, String> {
    for pid in pids {
        let Some(cg) = CgroupReader::of_process(proc_root, &pid.to_string()) else {
            continue;
        };
        if let Some(dir) = job_ancestor(cg.dir(), job) {
            return job_cgroup::open_dir(&dir);
        }
    }
    Err(format!(
        "none of its {} process(es) is in a job_{job} memory cgroup",
        pids.len()
    ))
}

/// cgroup.conf beside `slurm_conf` (`$SLURM_CONF`), else /etc/slurm's.
fn cgroup_conf_path(slurm_conf: Option<&Path>) -> PathBuf {
    slurm_conf
        .and_then(Path::parent)
        .unwrap_or(Path::new("/etc/slurm"))
        .join("cgroup.conf")
}

/// `scontrol listpids JOB` on this node.
fn listpids(job: u64) -> Result<Vec<u32>, String> {
    let out = Command::new("scontrol")
        .args(["listpids", &job.to_string()])
        .output()
        .map_err(|e| format!("cannot run it: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(why.lines().next().unwrap_or("failed").trim().to_string());
    }
    let pids = parse_listpids(&String::from_utf8_lossy(&out.stdout));
    if pids.is_empty() {
        return Err("no process of the job on this node".into());
    }
    Ok(pids)
}

/// Finds job `job`'s memory cgroup on this node; the reader and how it was
/// found, or every way's reason in one line.
pub fn find(job: u64, cgroup_root: &Path) -> Result<(CgroupReader, String), String> {
    let mut tried = Vec::new();
    match listpids(job).and_then(|pids| from_pids(Path::new("/proc"), &pids, job)) {
        Ok(cg) => return Ok((cg, format!("from its processes (scontrol listpids {job})"))),
        Err(e) => tried.push(format!("scontrol listpids {job}: {e}")),
    }
    let slurm_conf = std::env::var_os("SLURM_CONF").map(PathBuf::from);
    let conf = cgroup_conf_path(slurm_conf.as_deref());
    match std::fs::read_to_string(&conf) {
        Ok(text) => match parse_cgroup_mountpoint(&text) {
            Some(mount) => match job_cgroup::slurm_job(&mount, job) {
                Ok(cg) => {
                    let how = format!(
                        "under CgroupMountpoint {} ({})",
                        mount.display(),
                        conf.display()
                    );
                    return Ok((cg, how));
                }
                Err(e) => tried.push(format!("{}: {e}", conf.display())),
            },
            None => tried.push(format!("{}: no CgroupMountpoint", conf.display())),
        },
        Err(e) => tried.push(format!("{}: {e}", conf.display())),
    }
    match job_cgroup::slurm_job(cgroup_root, job) {
        Ok(cg) => Ok((cg, format!("under {}", cgroup_root.display()))),
        Err(e) => {
            tried.push(e);
            Err(format!("Slurm job {job}: {}", tried.join("; ")))
        }
    }
}

#[cfg(test)]
#[path = "slurm_cgroup_tests.rs"]
mod tests;
