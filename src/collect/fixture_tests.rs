//! Collector tests against kernel text copied from this machine into
//! tests/fixtures/watch (see the README there for the hand-written v2 files),
//! and against the real /proc and memory cgroup.

use std::path::{Path, PathBuf};

use super::cgroup::{CgroupReader, CgroupVersion, locate};
use super::cgroup_limit::LimitCgroup;
use super::procfs::{ProcReader, parse_stat};
use super::tree::TreeSampler;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/watch")
        .join(rel)
}

const KIB: u64 = 1024;

#[test]
fn stat_names_with_spaces_and_parentheses_parse() {
    let s =
        parse_stat("42 (my (odd) name) S 7 42 42 0 -1 0 0 0 0 0 13 4 0 0 20 0 1 0 1 0 0").unwrap();
    assert_eq!(s.comm, "my (odd) name");
    assert_eq!(
        (s.state, s.ppid, s.utime_ticks, s.stime_ticks),
        ('S', 7, 13, 4)
    );
}

#[test]
fn rollup_of_a_real_python_gives_rss_pss_uss() {
    let r = ProcReader::with_root(fixture("proc"));
    let m = r.process_memory(14857).unwrap();
    assert_eq!((m.ppid, m.comm.as_str()), (14811, "python3"));
    // smaps_rollup: Rss 21672 kB, Pss 11078 kB, Private_Clean 2400 + Private_Dirty 704 kB.
    assert_eq!(m.rss, Some(21672 * KIB));
    assert_eq!(m.pss, Some(11078 * KIB));
    assert_eq!(m.uss, Some((2400 + 704) * KIB));
    assert_eq!((m.pss_shmem, m.rss_shmem), (Some(0), Some(0)));
    // Its forked child shares the 8 MiB bytearray: Pss 8485 kB of Rss 18088 kB.
    let c = r.process_memory(14859).unwrap();
    assert_eq!(
        (c.rss, c.pss, c.uss),
        (Some(18088 * KIB), Some(8485 * KIB), Some(704 * KIB))
    );
}

#[test]
fn without_rollup_smaps_is_summed_over_mappings() {
    // `sleep` has no smaps_rollup copied; its smaps sums (awk over the file) to
    // Rss 1832 kB, Pss 287 kB, Private_Clean 36 kB, Private_Dirty 112 kB.
    let t = ProcReader::with_root(fixture("proc")).smaps(14906).unwrap();
    assert_eq!((t.rss, t.pss), (Some(1832 * KIB), Some(287 * KIB)));
    assert_eq!(t.uss(), Some((36 + 112) * KIB));
    assert_eq!(t.pss_shmem, None, "per-mapping smaps has no Pss_Shmem");
}

#[test]
fn descendants_follow_children_files_and_fall_back_to_a_scan() {
    let r = ProcReader::with_root(fixture("proc"));
    assert_eq!(r.descendants(14857), vec![14857, 14859]);
    assert_eq!(r.descendants_of_main_threads(14857), vec![14857, 14859]);
    assert_eq!(
        r.descendants(14811),
        vec![14811],
        "a vanished process has no children"
    );
    assert_eq!(r.process_memory(99999), None, "a vanished process is None");
    // A kernel without CONFIG_PROC_CHILDREN: the same tree with the task
    // directories removed is found by scanning every stat for its parent.
    let tmp = tempfile::tempdir().unwrap();
    for pid in ["14857", "14859", "14906"] {
        let to = tmp.path().join(pid);
        std::fs::create_dir(&to).unwrap();
        for f in ["stat", "status"] {
            std::fs::copy(fixture("proc").join(pid).join(f), to.join(f)).unwrap();
        }
    }
    let scan = ProcReader::with_root(tmp.path());
    assert_eq!(scan.descendants(14857), vec![14857, 14859]);
    assert_eq!(scan.descendants_of_main_threads(14857), vec![14857, 14859]);
}

#[test]
fn status_alone_gives_the_cheap_row() {
    let m = ProcReader::with_root(fixture("proc"))
        .status_memory(14859)
        .unwrap();
    // status: Name python3, PPid 14857, VmRSS 18088 kB, RssShmem 0 kB.
    assert_eq!((m.comm.as_str(), m.ppid), ("python3", 14857));
    assert_eq!(
        (m.rss, m.rss_shmem, m.pss),
        (Some(18088 * KIB), Some(0), None)
    );
}

#[test]
fn real_proc_sees_a_spawned_child() {
    let mut kid = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let r = ProcReader::new();
    let me = std::process::id();
    let tree = r.descendants(me);
    let _ = kid.kill();
    let _ = kid.wait();
    assert!(tree.contains(&kid.id()), "{tree:?} lacks {}", kid.id());
    let m = r.process_memory(me).unwrap();
    let (rss, pss, uss) = (m.rss.unwrap(), m.pss.unwrap(), m.uss.unwrap());
    assert!(
        uss <= pss && pss <= rss && uss > 0,
        "uss {uss} pss {pss} rss {rss}"
    );
}

#[test]
fn v1_counters_after_a_real_cgroup_oom() {
    let m = CgroupReader::with_root(fixture("cgroup-v1-oom"), CgroupVersion::V1).read();
    // A 64 MiB cgroup whose python was OOM-killed: peak = limit = 64 << 20.
    assert_eq!(m.limit, Some(64 << 20));
    assert_eq!(m.peak, Some(67_108_864));
    assert_eq!(m.usage, Some(278_528));
    assert_eq!(m.oom_kill, Some(1));
    assert_eq!((m.anon, m.file, m.shmem), (Some(0), Some(0), Some(0)));
}

#[test]
fn v1_unlimited_reads_as_no_limit() {
    let m = CgroupReader::with_root(fixture("cgroup-v1-live"), CgroupVersion::V1).read();
    assert_eq!(
        m.limit, None,
        "9223372036854771712 is the kernel's 'unlimited'"
    );
    assert_eq!(
        (m.usage, m.peak, m.oom_kill),
        (Some(854_212_608), Some(1_273_700_352), Some(0))
    );
    assert_eq!((m.anon, m.file), (Some(17_448_960), Some(809_594_880)));
}

#[test]
fn v2_counters_and_max_as_no_limit() {
    let cg = CgroupReader::with_root(fixture("cgroup-v2"), CgroupVersion::V2);
    let m = cg.read();
    assert_eq!(
        (m.usage, m.peak, m.limit),
        (Some(150 << 20), Some(256 << 20), None)
    );
    assert_eq!((m.oom_kill, cg.oom_kill()), (Some(2), Some(2)));
    assert_eq!(
        (m.anon, m.file, m.shmem),
        (Some(100 << 20), Some(40 << 20), Some(32 << 20))
    );
}

#[test]
fn locate_prefers_the_v1_memory_controller_on_a_hybrid_machine() {
    let read = |f| std::fs::read_to_string(fixture(f)).unwrap();
    let found = locate(&read("self-cgroup-hybrid"), &read("mountinfo-hybrid"));
    assert_eq!(
        found[0].0,
        Path::new("/sys/fs/cgroup/memory/process_api/132f30aab9bb184edd14358742b5f7ed")
    );
    assert_eq!(found[0].1, CgroupVersion::V1);
    assert_eq!(
        found[1],
        (PathBuf::from("/sys/fs/cgroup/unified"), CgroupVersion::V2)
    );
    let v2 = locate(&read("self-cgroup-v2"), &read("mountinfo-v2"));
    let want = PathBuf::from("/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope");
    assert_eq!(v2, vec![(want, CgroupVersion::V2)]);
}

#[test]
fn a_real_limit_cgroup_is_created_limited_and_removed() {
    let Some(own) = CgroupReader::own() else {
        eprintln!("SKIPPED: no readable memory cgroup on this machine");
        return;
    };
    let name = format!("headroom-unit-{}", std::process::id());
    let mut cg = match LimitCgroup::create(&own, &name, 32 << 20) {
        Ok(cg) => cg,
        Err(e) => {
            eprintln!("SKIPPED: cannot create a memory cgroup here: {e}");
            return;
        }
    };
    let dir = cg.reader().dir().to_path_buf();
    assert_eq!(cg.reader().read().limit, Some(32 << 20));
    assert_eq!(cg.reader().oom_kill(), Some(0));
    cg.remove().unwrap();
    assert!(!dir.exists());
}

#[test]
fn a_sweep_within_budget_reads_every_process_exactly() {
    let mut t = TreeSampler::new(
        ProcReader::with_root(fixture("proc")),
        0.0,
        std::time::Duration::from_secs(60),
    );
    let r = t.sample(14857);
    assert_eq!((r.processes.len(), r.carried), (2, 0));
    let pss: u64 = r.processes.iter().filter_map(|p| p.pss).sum();
    assert_eq!(pss, (11078 + 8485) * KIB, "the two smaps_rollup Pss lines");
    // The next sample (statm is not in the fixture, so status again) sweeps too.
    assert_eq!(t.sample(14857).carried, 0);
}

#[test]
fn without_budget_a_fork_adds_only_what_it_has_beyond_its_parent() {
    let mut t = TreeSampler::new(
        ProcReader::with_root(fixture("proc")),
        0.0,
        std::time::Duration::ZERO,
    );
    let r = t.sample(14857);
    assert_eq!(r.carried, 2, "nothing read: both estimated");
    // 14857's parent is outside the tree, so all its 21672 kB RSS counts;
    // its child 14859 (18088 kB) has less than its parent: it adds nothing.
    let pss: Vec<Option<u64>> = r.processes.iter().map(|p| p.pss).collect();
    assert_eq!(pss, vec![Some(21672 * KIB), Some(0)]);
}

#[test]
fn a_v2_limit_cgroup_asks_for_the_memory_controller_and_sets_memory_max() {
    // No v2 memory controller on this machine: a plain directory stands in for
    // the parent cgroup, to check which files are written with what.
    let parent_dir = tempfile::tempdir().unwrap();
    std::fs::write(parent_dir.path().join("cgroup.subtree_control"), "cpu io\n").unwrap();
    let parent = CgroupReader::with_root(parent_dir.path(), CgroupVersion::V2);
    let mut cg = LimitCgroup::create(&parent, "headroom-watch-7", 96 << 20).unwrap();
    let dir = parent_dir.path().join("headroom-watch-7");
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
    assert_eq!(
        read(parent_dir.path().join("cgroup.subtree_control")),
        "+memory"
    );
    assert_eq!(read(dir.join("memory.max")), (96u64 << 20).to_string());
    assert_eq!(cg.procs_path(), dir.join("cgroup.procs"));
    assert_eq!(cg.reader().read().limit, Some(96 << 20));
    // A real cgroup directory is empty to rmdir; the stand-in must be emptied.
    std::fs::remove_file(dir.join("memory.max")).unwrap();
    cg.remove().unwrap();
    assert!(!dir.exists());
}

#[test]
fn a_limit_cgroup_that_cannot_be_made_says_why() {
    let parent = CgroupReader::with_root("/nonexistent/cgroup", CgroupVersion::V1);
    let err = LimitCgroup::create(&parent, "x", 1 << 30).unwrap_err();
    assert!(
        err.contains("cannot create cgroup /nonexistent/cgroup/x"),
        "{err}"
    );
}
