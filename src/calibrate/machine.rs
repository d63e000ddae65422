//! The machine's facts that the memory model depends on and that need no
//! torch: which cgroup interface charges the job and what it counts, the
//! size of /dev/shm (where workers' batches and shared CSCs live), the page
//! size, transparent huge pages, and glibc's malloc thresholds as the
//! running C library has them (`glibc`, in a fresh process).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::glibc::MallocThresholds;
use crate::collect::cgroup::{CgroupReader, CgroupVersion};

/// How memory is charged here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupFacts {
    /// `v1` or `v2`.
    pub version: String,
    /// This process's memory cgroup.
    pub path: String,
    /// Its limit, bytes (none: unlimited).
    pub limit_bytes: Option<u64>,
    /// Its memory.stat splits out shmem (what /dev/shm and shared tensors cost).
    pub counts_shmem: bool,
    /// Swap is charged beside memory (v1 memsw, v2 swap.max).
    pub swap_accounted: bool,
}

/// The machine's side of a calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// The memory cgroup, when this process is in one.
    pub cgroup: Option<CgroupFacts>,
    /// Size of /dev/shm, bytes.
    pub dev_shm_bytes: Option<u64>,
    /// `sysconf(_SC_PAGESIZE)`.
    pub page_size: u64,
    /// /sys/kernel/mm/transparent_hugepage/enabled, the chosen value.
    pub transparent_hugepages: Option<String>,
    /// glibc's malloc thresholds (none: not glibc, or the probe could not tell).
    pub glibc_malloc: Option<MallocThresholds>,
    /// MALLOC_*_ and GLIBC_TUNABLES settings the jobs would inherit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malloc_overrides: Vec<String>,
}

/// The bracketed choice of a sysfs setting (`always [madvise] never`).
pub fn chosen(text: &str) -> Option<String> {
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(text[start..end].to_string())
}

fn cgroup() -> Option<CgroupFacts> {
    let r = CgroupReader::own()?;
    let dir = r.dir();
    let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default();
    let has = |k: &str| stat.lines().any(|l| l.split_whitespace().next() == Some(k));
    let (version, shmem, swap) = match r.version() {
        CgroupVersion::V1 => ("v1", has("total_shmem"), "memory.memsw.limit_in_bytes"),
        CgroupVersion::V2 => ("v2", has("shmem"), "memory.swap.max"),
    };
    Some(CgroupFacts {
        version: version.into(),
        path: dir.display().to_string(),
        limit_bytes: r.read().limit,
        counts_shmem: shmem,
        swap_accounted: dir.join(swap).exists(),
    })
}

/// Reads the machine; `malloc` is what `headroom __malloc-probe` printed.
pub fn read(malloc: Option<MallocThresholds>) -> Machine {
    // SAFETY: sysconf reads a constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Machine {
        cgroup: cgroup(),
        dev_shm_bytes: crate::plan::shm_check::fs_size(Path::new("/dev/shm")),
        page_size: u64::try_from(page).unwrap_or(4096),
        transparent_hugepages: std::fs::read_to_string(
            "/sys/kernel/mm/transparent_hugepage/enabled",
        )
        .ok()
        .and_then(|t| chosen(&t)),
        glibc_malloc: malloc,
        malloc_overrides: super::glibc::overrides(),
    }
}

/// Runs the malloc probe in a fresh headroom process and reads its answer.
pub fn probe_malloc() -> Option<MallocThresholds> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .arg("__malloc-probe")
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chosen_setting_is_the_bracketed_one() {
        assert_eq!(
            chosen("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(chosen("[always] madvise never").as_deref(), Some("always"));
        assert_eq!(chosen("always madvise never"), None);
        assert_eq!(chosen("[unterminated"), None);
    }

    #[test]
    fn this_machine_has_a_page_size_and_a_dev_shm_where_linux_has_one() {
        let m = read(None);
        assert!(
            m.page_size.is_power_of_two() && m.page_size >= 4096,
            "{m:?}"
        );
        if Path::new("/dev/shm").is_dir() {
            assert!(m.dev_shm_bytes.is_some_and(|b| b > 0), "{m:?}");
        } else {
            eprintln!("skipped: no /dev/shm here");
        }
    }
}
