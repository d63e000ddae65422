//! The /dev/shm a recommendation needs, said out loud. With workers,
//! PyG's loaders move their CSC copies and in-flight batches into shared
//! memory (torch.multiprocessing's file-descriptor sharing), so turning on
//! workers can move tens of GiB there; a /dev/shm smaller than that kills the
//! workers with SIGBUS (exit 135). Against `--shm` the search already kept
//! the recommendation within it; without it, the size of this machine's
//! /dev/shm (statvfs) is compared when it can be read, and the user is told
//! the compute node's may differ.

use std::path::Path;

use super::PlanReport;
use crate::units::fmt_bytes;

/// Moves below this into /dev/shm are not worth a line.
const WORTH_SAYING: u64 = 1 << 30;

/// Size of the file system at `path` (its blocks × fragment size), if it can
/// be read: `statvfs` through rustix, as `df` reports it.
pub fn fs_size(path: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(path).ok()?;
    st.f_blocks.checked_mul(st.f_frsize)
}

/// Sets the recommendation's `shm_check` when it moves a GiB or more into
/// /dev/shm; `machine` is this machine's /dev/shm size, if known.
pub fn check(report: &mut PlanReport, machine: Option<u64>) {
    let yours = report
        .components
        .iter()
        .map(|p| p.shm_bytes)
        .max()
        .unwrap_or(0);
    let given = report.limits.shm;
    let Some(r) = report.recommended.as_mut() else {
        return;
    };
    let moved = r.peak_shm_bytes.saturating_sub(yours);
    if moved < WORTH_SAYING {
        return;
    }
    let what = format!(
        "the recommendation moves {} more into /dev/shm ({} at its peak: the workers' shared CSC and batches)",
        fmt_bytes(moved),
        fmt_bytes(r.peak_shm_bytes)
    );
    r.shm_check = Some(match (given, machine) {
        (Some(s), _) => format!("{what}; it fits the {} of --shm", fmt_bytes(s)),
        (None, Some(m)) if m < r.peak_shm_bytes => format!(
            "{what}, but /dev/shm on this machine is {} (statvfs): workers would die of SIGBUS \
             (exit 135) here; give the compute node's size (`df -h /dev/shm` in a job) as --shm",
            fmt_bytes(m)
        ),
        (None, Some(m)) => format!(
            "{what}; /dev/shm on this machine is {} (statvfs), enough here; the compute node's may \
             differ: give it as --shm",
            fmt_bytes(m)
        ),
        (None, None) => format!("{what}; not checked: give the compute node's /dev/shm as --shm"),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_of_a_real_file_system_is_read() {
        // The temporary directory's file system has some size; a missing path none.
        let dir = tempfile::tempdir().unwrap();
        assert!(fs_size(dir.path()).is_some_and(|b| b > 0));
        assert_eq!(fs_size(&dir.path().join("absent")), None);
    }
}
