//! The memory cgroup of a job that is already running: a directory the user
//! names (`watch --cgroup`), or a Slurm job's cgroup on this node (`watch
//! --slurm-job`), found under a cgroup mount root that tests replace with a
//! fake tree. Also what only a whole subtree can answer: which processes are
//! in it (Slurm puts them in `step_*/task_*` below the job) and how many
//! OOM kills it counted.
//!
//! Slurm's layouts, from its cgroup guides (slurm.schedmd.com/cgroups.html,
//! cgroup_v2.html): cgroup/v1 makes `memory/slurm/uid_<uid>/job_<id>/
//! step_<s>/task_<t>` (`slurm_<nodename>` when one host runs several
//! slurmd); cgroup/v2 makes `system.slice/slurmstepd.scope/job_<id>/
//! step_<s>/user/task_<t>` (`<nodename>_slurmstepd.scope` likewise). The job
//! directory's limit is the job's `--mem`.

use std::path::{Path, PathBuf};

use super::cgroup::{CgroupReader, CgroupVersion};
use super::{flat_field, read_optional};

/// Opens a memory cgroup directory, telling v1 from v2 by its files.
pub fn open_dir(dir: &Path) -> Result<CgroupReader, String> {
    if dir.join("memory.usage_in_bytes").is_file() {
        return Ok(CgroupReader::with_root(dir, CgroupVersion::V1));
    }
    if dir.join("memory.current").is_file() {
        return Ok(CgroupReader::with_root(dir, CgroupVersion::V2));
    }
    if !dir.is_dir() {
        return Err(format!("{}: no such cgroup directory", dir.display()));
    }
    Err(format!(
        "{} is not a memory cgroup (no memory.usage_in_bytes or memory.current)",
        dir.display()
    ))
}

/// Directories under `dir` whose name matches `keep`.
fn subdirs(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| keep(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// The cgroup of Slurm job `job` under the cgroup mount `root`
/// (`/sys/fs/cgroup`), v1 layout first, then v2.
pub fn slurm_job(root: &Path, job: u64) -> Result<CgroupReader, String> {
    let name = format!("job_{job}");
    let mut candidates = Vec::new();
    for slurm in subdirs(&root.join("memory"), |n| {
        n == "slurm" || n.starts_with("slurm_")
    }) {
        for uid in subdirs(&slurm, |n| n.starts_with("uid_")) {
            candidates.push(uid.join(&name));
        }
    }
    for scope in subdirs(&root.join("system.slice"), |n| {
        n == "slurmstepd.scope" || n.ends_with("_slurmstepd.scope")
    }) {
        candidates.push(scope.join(&name));
    }
    let searched = candidates.len();
    candidates
        .into_iter()
        .find(|d| d.is_dir())
        .map(|d| open_dir(&d))
        .unwrap_or_else(|| {
            Err(format!(
                "Slurm job {job} has no cgroup on this node under {} ({} Slurm cgroup \
                 directories searched: memory/slurm*/uid_*/ and system.slice/*slurmstepd.scope/); \
                 run this on the node where the job runs",
                root.display(),
                searched
            ))
        })
}

/// The cgroup directory and every directory below it.
fn subtree(dir: &Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < all.len() {
        let kids = subdirs(&all[i], |_| true);
        all.extend(kids);
        i += 1;
    }
    all
}

/// Every process in the cgroup or below it, in pid order; empty once the
/// job has ended (or its directory was removed).
pub fn member_pids(cg: &CgroupReader) -> Vec<u32> {
    let mut pids: Vec<u32> = subtree(cg.dir())
        .iter()
        .filter_map(|d| read_optional(&d.join("cgroup.procs")))
        .flat_map(|t| {
            t.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// OOM kills counted in the cgroup's subtree. v2's `memory.events` already
/// counts the whole subtree; v1 charges the kill to the victim's own cgroup
/// only (Slurm's `task_<t>` leaf), so v1 sums every directory below.
pub fn oom_kills(cg: &CgroupReader) -> Option<u64> {
    match cg.version() {
        CgroupVersion::V2 => cg.oom_kill(),
        CgroupVersion::V1 => {
            let counts: Vec<u64> = subtree(cg.dir())
                .iter()
                .filter_map(|d| read_optional(&d.join("memory.oom_control")))
                .filter_map(|t| flat_field(&t, "oom_kill"))
                .collect();
            (!counts.is_empty()).then(|| counts.iter().sum())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, files: &[(&str, &str)]) {
        std::fs::create_dir_all(dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    #[test]
    fn finds_a_v1_slurm_job_and_its_task_processes_and_kills() {
        let root = tempfile::tempdir().unwrap();
        let job = root.path().join("memory/slurm/uid_1000/job_4242");
        touch(
            &job,
            &[
                ("memory.usage_in_bytes", "1048576\n"),
                ("memory.limit_in_bytes", "8589934592\n"),
                (
                    "memory.oom_control",
                    "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
                ),
                ("cgroup.procs", ""),
            ],
        );
        touch(
            &job.join("step_0/task_0"),
            &[
                ("cgroup.procs", "311\n309\n"),
                (
                    "memory.oom_control",
                    "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
                ),
            ],
        );
        touch(&job.join("step_batch"), &[("cgroup.procs", "300\n")]);
        // Another job of the same user is not it.
        touch(
            &root.path().join("memory/slurm/uid_1000/job_42"),
            &[("memory.usage_in_bytes", "1\n")],
        );
        let cg = slurm_job(root.path(), 4242).unwrap();
        assert_eq!(cg.dir(), job);
        assert_eq!(cg.version(), CgroupVersion::V1);
        assert_eq!(cg.read().limit, Some(8 << 30));
        assert_eq!(member_pids(&cg), vec![300, 309, 311]);
        assert_eq!(oom_kills(&cg), Some(2));
    }

    #[test]
    fn finds_a_v2_slurm_job_under_a_multi_slurmd_scope() {
        let root = tempfile::tempdir().unwrap();
        let job = root
            .path()
            .join("system.slice/node7_slurmstepd.scope/job_77");
        touch(
            &job,
            &[
                ("memory.current", "4096\n"),
                ("memory.max", "max\n"),
                ("memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"),
            ],
        );
        touch(
            &job.join("step_0/user/task_0"),
            &[("cgroup.procs", "900\n")],
        );
        let cg = slurm_job(root.path(), 77).unwrap();
        assert_eq!(cg.version(), CgroupVersion::V2);
        assert_eq!(cg.read().limit, None);
        assert_eq!(member_pids(&cg), vec![900]);
        assert_eq!(oom_kills(&cg), Some(1));
    }

    #[test]
    fn a_job_not_on_this_node_says_where_it_looked() {
        let root = tempfile::tempdir().unwrap();
        touch(&root.path().join("memory/slurm/uid_0"), &[]);
        let e = slurm_job(root.path(), 5).unwrap_err();
        assert!(e.contains("job 5 has no cgroup on this node"), "{e}");
        assert!(e.contains("1 Slurm cgroup"), "{e}");
        let e = open_dir(&root.path().join("memory")).unwrap_err();
        assert!(e.contains("is not a memory cgroup"), "{e}");
    }
}
