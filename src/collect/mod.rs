//! Collectors of live memory readings, shared by `watch` and `calibrate`:
//! the process tree from procfs ([`procfs::ProcReader`]), the memory cgroup
//! in v1 or v2 ([`cgroup::CgroupReader`], [`cgroup_limit::LimitCgroup`]) and
//! GPU memory through NVML loaded at run time ([`gpu::GpuReader`]).
//!
//! Every reader takes an injectable root so tests hand it a fake tree pasted
//! from real kernel files. Raw fields are `Option`: a file or a field the
//! kernel does not offer (an old kernel, a vanished process, another cgroup
//! version) is `None`, never an error, and it becomes `None` in exactly one
//! place, [`read_optional`].
//!
//! The `procfs` and `sysinfo` crates were declared and are not used (issue
//! 16 decided it). `procfs` (procfs-core 0.18) could read these files from
//! any path through its `FromRead` constructors, so the injectable root is no
//! reason; the sampling cost is: its `Status` parser builds a HashMap of all
//! ~55 fields (src/process/status.rs) and its smaps rollup a
//! `HashMap<String, u64>` per mapping, for every process at every sample,
//! where the sampler needs four fields of `status` and one number of
//! `statm` (10 Hz over 100 processes, under 1% of a core). `sysinfo`
//! refreshes whole-system views (every process, every disk) and has no root
//! to inject, so fake trees could not stand in for the kernel in tests.
//! Signals, process groups and getrusage go through `nix`.

pub mod cgroup;
pub mod cgroup_limit;
pub mod gpu;
pub mod job_cgroup;
pub mod kmsg;
pub mod proc_text;
pub mod procfs;
pub mod slurm_cgroup;
pub mod statm_fds;
pub mod tree;

use std::path::Path;

/// Reads a whole small kernel file, or `None` when it cannot be read.
///
/// This is the one place where "missing" is decided: a process that exited
/// between listing and reading, a file an older kernel lacks, a permission
/// the caller does not have all read as `None`, because for a sampler they
/// all mean the same thing: no reading this time.
pub fn read_optional(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Finds `key` in `Key:   123 kB` lines (status, smaps_rollup) and returns bytes.
pub(crate) fn kb_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        let kb: u64 = rest.split_whitespace().next()?.parse().ok()?;
        Some(kb * 1024)
    })
}

/// Finds `key` in `key value` lines (cgroup memory.stat, memory.events,
/// memory.oom_control) and returns the value.
pub(crate) fn flat_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut parts = line.split_whitespace();
        if parts.next()? != key {
            return None;
        }
        parts.next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kb_fields_are_bytes_and_exact_keys() {
        let text = "Rss:                1708 kB\nPss:                 352 kB\nPss_Dirty:           112 kB\n";
        assert_eq!(kb_field(text, "Pss"), Some(352 * 1024));
        assert_eq!(kb_field(text, "Rss"), Some(1708 * 1024));
        assert_eq!(kb_field(text, "Pss_Anon"), None);
    }

    #[test]
    fn flat_fields_need_the_whole_key() {
        let text = "total_rss 1667072\nrss 3\noom_kill 0\n";
        assert_eq!(flat_field(text, "rss"), Some(3));
        assert_eq!(flat_field(text, "total_rss"), Some(1_667_072));
        assert_eq!(flat_field(text, "swap"), None);
    }

    #[test]
    fn a_missing_file_reads_as_none() {
        assert_eq!(read_optional(Path::new("/proc/0/no-such-file")), None);
    }
}

#[cfg(test)]
mod fixture_tests;
