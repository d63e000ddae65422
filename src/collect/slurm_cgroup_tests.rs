//! Finding a Slurm job's cgroup, its limit and its peak, on the real files of
//! a Slurm 22.05 job (tests/fixtures/watch/slurm-v1, see its README) copied
//! into a temp tree; v2 in the kernel's format (the cgroup-v2 fixture's
//! README says why it is hand-written).

use std::path::{Path, PathBuf};

use super::*;
use crate::collect::cgroup::CgroupVersion;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/watch/slurm-v1")
        .join(rel)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

const OWN: &str = "process_api/d75d24c9fa2b028089fdd8bd4600db52";
const JOB: &str = "slurm_vm/uid_0/job_1";

/// The real hierarchy as the node shows it: /sys/fs/cgroup/memory is the
/// root, the test's own cgroup under it, Slurm's tree in that.
fn node() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let own = tmp.path().join("sys-memory").join(OWN);
    copy_tree(&fixture("memory"), &own);
    (tmp, own)
}

#[test]
fn listpids_and_cgroup_conf_are_read_from_slurms_own_text() {
    let listpids = std::fs::read_to_string(fixture("scontrol-listpids.txt")).unwrap();
    assert_eq!(parse_listpids(&listpids), vec![18432]);
    // While a step starts, listpids also gives a row whose PID is -1 (seen
    // as the first pid of a real job under load; the other fields here are
    // illustrative): no pid.
    let starting = format!("{listpids}\n-1       1        batch    -       -\n");
    assert_eq!(parse_listpids(&starting), vec![18432]);
    let conf = std::fs::read_to_string(fixture("cgroup.conf")).unwrap();
    assert_eq!(
        parse_cgroup_mountpoint(&conf),
        Some(PathBuf::from("/tmp/hr-probe/cgroup"))
    );
    let commented = "# CgroupMountpoint=/nope\ncgroupmountpoint = /sys/fs/cgroup/slurm # site\n";
    assert_eq!(
        parse_cgroup_mountpoint(commented),
        Some(PathBuf::from("/sys/fs/cgroup/slurm"))
    );
    assert_eq!(parse_cgroup_mountpoint("CgroupPlugin=cgroup/v1\n"), None);
}

#[test]
fn a_jobs_process_leads_to_its_job_cgroup_under_any_prefix() {
    let (tmp, own) = node();
    let proc = tmp.path().join("proc/18432");
    std::fs::create_dir_all(&proc).unwrap();
    std::fs::copy(fixture("proc-pid-cgroup"), proc.join("cgroup")).unwrap();
    let mounts = std::fs::read_to_string(fixture("mountinfo-cgroup-lines")).unwrap();
    let sys = tmp.path().join("sys-memory");
    std::fs::write(
        proc.join("mountinfo"),
        mounts.replace("/sys/fs/cgroup/memory", &sys.display().to_string()),
    )
    .unwrap();
    let cg = from_pids(&tmp.path().join("proc"), &[18432], 1).unwrap();
    assert_eq!(cg.dir(), own.join(JOB));
    assert_eq!(cg.version(), CgroupVersion::V1);
    let e = from_pids(&tmp.path().join("proc"), &[18432], 2).unwrap_err();
    assert!(e.contains("job_2"), "{e}");
}

#[test]
fn cgroup_conf_mountpoint_finds_debians_slurm_node_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // CgroupMountpoint names the directory holding the `memory` hierarchy.
    copy_tree(&fixture("memory"), &tmp.path().join("memory"));
    let cg = crate::collect::job_cgroup::slurm_job(tmp.path(), 1).unwrap();
    assert_eq!(cg.dir(), tmp.path().join("memory").join(JOB));
}

#[test]
fn the_limit_is_the_smallest_along_the_ancestry_and_says_where() {
    let (_tmp, own) = node();
    let task = CgroupReader::with_root(own.join(JOB).join("step_batch/task_0"), CgroupVersion::V1);
    // task_0 itself is unlimited (9223372036854771712); --mem=300M is on
    // step_batch and job_1.
    let m = task.read();
    assert_eq!(m.limit, Some(300 << 20));
    assert!(
        m.limit_from
            .as_deref()
            .unwrap()
            .contains("step_batch/memory.limit_in_bytes")
    );
    // A tighter limit higher up (uid_0 at 200 MiB) is the one in force.
    std::fs::write(
        own.join("slurm_vm/uid_0/memory.limit_in_bytes"),
        "209715200\n",
    )
    .unwrap();
    let m = task.read();
    assert_eq!(m.limit, Some(200 << 20));
    assert!(
        m.limit_from
            .as_deref()
            .unwrap()
            .contains("uid_0/memory.limit_in_bytes")
    );
    // One above the mount shows only in the kernel's hierarchical minimum.
    let stat_path = own.join(JOB).join("step_batch/task_0/memory.stat");
    let stat = std::fs::read_to_string(&stat_path).unwrap();
    let lowered = stat.replace(
        "hierarchical_memory_limit 314572800",
        "hierarchical_memory_limit 104857600",
    );
    assert_ne!(lowered, stat);
    std::fs::write(&stat_path, lowered).unwrap();
    let m = task.read();
    assert_eq!(m.limit, Some(100 << 20));
    assert!(
        m.limit_from
            .as_deref()
            .unwrap()
            .contains("hierarchical_memory_limit")
    );
}

#[test]
fn the_peak_is_the_kernels_counter_not_the_usage() {
    let (_tmp, own) = node();
    let job = CgroupReader::with_root(own.join(JOB), CgroupVersion::V1);
    let file = |f: &str| -> u64 {
        std::fs::read_to_string(own.join(JOB).join(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    assert_eq!(job.read_peak(), Some(file("memory.max_usage_in_bytes")));
    assert_ne!(job.read_peak(), Some(file("memory.usage_in_bytes")));
    assert_eq!(job.peak_file(), "memory.max_usage_in_bytes");
}

#[test]
fn v2_limit_and_peak_come_from_memory_max_and_memory_peak() {
    let tmp = tempfile::tempdir().unwrap();
    let scope = tmp.path().join("system.slice/slurmstepd.scope");
    let job = scope.join("job_9");
    let task = job.join("step_batch/user/task_0");
    std::fs::create_dir_all(&task).unwrap();
    // Every non-root v2 cgroup with the memory controller has memory.max
    // (the kernel creates it), the intermediate step_batch and user too.
    let step = job.join("step_batch");
    let user = step.join("user");
    for (dir, max) in [
        (&scope, "max\n"),
        (&job, "314572800\n"),
        (&step, "max\n"),
        (&user, "max\n"),
        (&task, "max\n"),
    ] {
        std::fs::write(dir.join("memory.max"), max).unwrap();
        std::fs::write(dir.join("memory.current"), "4096\n").unwrap();
    }
    std::fs::write(job.join("memory.peak"), "311427072\n").unwrap();
    let t = CgroupReader::with_root(&task, CgroupVersion::V2);
    assert_eq!(t.read().limit, Some(300 << 20));
    assert!(t.read().limit_from.unwrap().contains("job_9/memory.max"));
    let j = CgroupReader::with_root(&job, CgroupVersion::V2);
    assert_eq!(j.read_peak(), Some(311_427_072));
    assert_eq!(j.peak_file(), "memory.peak");
    assert_eq!(job_ancestor(&task, 9), Some(job.clone()));
    assert_eq!(job_ancestor(&task, 99), None);
}
