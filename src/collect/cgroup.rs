//! The memory cgroup a process lives in, v1 or v2, and what its counters say.
//!
//! [`locate`] turns `/proc/<pid>/cgroup` and `/proc/<pid>/mountinfo` into the
//! directory of the process's memory cgroup; [`CgroupReader`] reads usage,
//! peak, limit, the OOM-kill counter and the anon/file/shmem split from it.
//! v1 and v2 name the same things differently; [`CgroupMemory`] is the one
//! shape both are read into.

use std::path::{Path, PathBuf};

use super::{flat_field, read_optional};

/// Which cgroup interface a directory speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupVersion {
    /// The legacy `memory` controller hierarchy (`memory.limit_in_bytes`).
    V1,
    /// The unified hierarchy (`memory.max`).
    V2,
}

/// One reading of a memory cgroup, bytes and counts; `None` where the
/// version or kernel does not offer the file or field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupMemory {
    /// Charged memory now (v1 `memory.usage_in_bytes`, v2 `memory.current`).
    pub usage: Option<u64>,
    /// Highest charge so far (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`, 5.19+).
    pub peak: Option<u64>,
    /// The hard limit in force: the smallest along the cgroup's ancestry
    /// (see [`CgroupReader::effective_limit`]); `None` also when unlimited.
    pub limit: Option<u64>,
    /// Where that limit is set: a directory, or v1's memory.stat.
    pub limit_from: Option<String>,
    /// Processes killed by this cgroup's OOM killer (v1 `memory.oom_control`, v2 `memory.events`).
    pub oom_kill: Option<u64>,
    /// Anonymous memory (v1 `total_rss`, v2 `anon`).
    pub anon: Option<u64>,
    /// Page cache including shmem (v1 `total_cache`, v2 `file`).
    pub file: Option<u64>,
    /// tmpfs, /dev/shm and shared anonymous pages (v1 `total_shmem`, v2 `shmem`).
    pub shmem: Option<u64>,
}

/// Limits at or above this are the kernel's "unlimited" (v1 writes
/// 9223372036854771712, i.e. i64::MAX rounded down to a page).
const UNLIMITED: u64 = 1 << 62;

/// Reads the memory counters of one cgroup directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupReader {
    dir: PathBuf,
    version: CgroupVersion,
}

impl CgroupReader {
    /// A reader of the cgroup directory `dir` (real, or a fake tree in tests).
    pub fn with_root(dir: impl Into<PathBuf>, version: CgroupVersion) -> Self {
        CgroupReader {
            dir: dir.into(),
            version,
        }
    }

    /// The memory cgroup of process `pid` ("self" for this one) under the
    /// procfs at `proc_root`; `None` when it has none we can read.
    pub fn of_process(proc_root: &Path, pid: &str) -> Option<Self> {
        let cgroup = read_optional(&proc_root.join(pid).join("cgroup"))?;
        let mountinfo = read_optional(&proc_root.join(pid).join("mountinfo"))?;
        locate(&cgroup, &mountinfo)
            .into_iter()
            .find(|(dir, v)| {
                let probe = match v {
                    CgroupVersion::V1 => "memory.usage_in_bytes",
                    CgroupVersion::V2 => "memory.current",
                };
                dir.join(probe).exists()
            })
            .map(|(dir, v)| Self::with_root(dir, v))
    }

    /// This process's own memory cgroup on the real machine.
    pub fn own() -> Option<Self> {
        Self::of_process(Path::new("/proc"), "self")
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The interface the directory speaks.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    fn num(&self, name: &str) -> Option<u64> {
        read_optional(&self.dir.join(name))?.trim().parse().ok()
    }

    /// Reads every counter once.
    pub fn read(&self) -> CgroupMemory {
        match self.version {
            CgroupVersion::V1 => {
                let stat = read_optional(&self.dir.join("memory.stat")).unwrap_or_default();
                let oom = read_optional(&self.dir.join("memory.oom_control")).unwrap_or_default();
                let eff = self.effective_limit(&stat);
                CgroupMemory {
                    usage: self.num("memory.usage_in_bytes"),
                    peak: self.num("memory.max_usage_in_bytes"),
                    limit: eff.as_ref().map(|(l, _)| *l),
                    limit_from: eff.map(|(_, from)| from),
                    oom_kill: flat_field(&oom, "oom_kill"),
                    anon: flat_field(&stat, "total_rss"),
                    file: flat_field(&stat, "total_cache"),
                    shmem: flat_field(&stat, "total_shmem"),
                }
            }
            CgroupVersion::V2 => {
                let stat = read_optional(&self.dir.join("memory.stat")).unwrap_or_default();
                let events = read_optional(&self.dir.join("memory.events")).unwrap_or_default();
                let eff = self.effective_limit("");
                CgroupMemory {
                    usage: self.num("memory.current"),
                    peak: self.num("memory.peak"),
                    limit: eff.as_ref().map(|(l, _)| *l),
                    limit_from: eff.map(|(_, from)| from),
                    oom_kill: flat_field(&events, "oom_kill"),
                    anon: flat_field(&stat, "anon"),
                    file: flat_field(&stat, "file"),
                    shmem: flat_field(&stat, "shmem"),
                }
            }
        }
    }

    /// The hard limit in force and where it is set. The kernel charges a
    /// page to every ancestor, so the smallest limit along the ancestry
    /// kills first: Slurm sets `--mem` on `job_N` (and `step_*`), not on
    /// `task_N` where the processes are. The walk goes up while the parent
    /// has the limit file (v2's root has no memory.max; above a mount there
    /// is none). v1's memory.stat also gives the kernel's own minimum,
    /// `hierarchical_memory_limit`, which sees ancestors above a bind mount
    /// or namespace; `v1_stat` is that text ("" for v2).
    pub fn effective_limit(&self, v1_stat: &str) -> Option<(u64, String)> {
        let file = match self.version {
            CgroupVersion::V1 => "memory.limit_in_bytes",
            CgroupVersion::V2 => "memory.max",
        };
        let mut best: Option<(u64, String)> = None;
        let mut dir = Some(self.dir.as_path());
        while let Some(d) = dir {
            let Some(text) = read_optional(&d.join(file)) else {
                break;
            };
            // v2's "max" does not parse: unlimited.
            if let Ok(limit) = text.trim().parse::<u64>()
                && limit < UNLIMITED
                && best.as_ref().is_none_or(|(b, _)| limit < *b)
            {
                best = Some((limit, d.join(file).display().to_string()));
            }
            dir = d.parent();
        }
        if let Some(h) = flat_field(v1_stat, "hierarchical_memory_limit")
            && h < UNLIMITED
            && best.as_ref().is_none_or(|(b, _)| h < *b)
        {
            best = Some((
                h,
                format!(
                    "{} hierarchical_memory_limit (an ancestor above the mount)",
                    self.dir.join("memory.stat").display()
                ),
            ));
        }
        best
    }

    /// Only the kernel's own peak counter (v1 `memory.max_usage_in_bytes`,
    /// v2 `memory.peak`, kernel 5.19+): one small file, read at every
    /// sample of an attached job so that its last value survives Slurm
    /// removing the directory.
    pub fn read_peak(&self) -> Option<u64> {
        match self.version {
            CgroupVersion::V1 => self.num("memory.max_usage_in_bytes"),
            CgroupVersion::V2 => self.num("memory.peak"),
        }
    }

    /// The peak counter's file name, for saying which reading a figure is.
    pub fn peak_file(&self) -> &'static str {
        match self.version {
            CgroupVersion::V1 => "memory.max_usage_in_bytes",
            CgroupVersion::V2 => "memory.peak",
        }
    }

    /// Only the usage (one small file; the rest `None`), for frequent sampling.
    pub fn read_usage(&self) -> CgroupMemory {
        let usage = match self.version {
            CgroupVersion::V1 => self.num("memory.usage_in_bytes"),
            CgroupVersion::V2 => self.num("memory.current"),
        };
        CgroupMemory {
            usage,
            ..CgroupMemory::default()
        }
    }

    /// Only the OOM-kill counter (cheaper than [`Self::read`]).
    pub fn oom_kill(&self) -> Option<u64> {
        let (file, key) = match self.version {
            CgroupVersion::V1 => ("memory.oom_control", "oom_kill"),
            CgroupVersion::V2 => ("memory.events", "oom_kill"),
        };
        flat_field(&read_optional(&self.dir.join(file))?, key)
    }
}

/// Candidate memory-cgroup directories from a `/proc/<pid>/cgroup` and a
/// `/proc/<pid>/mountinfo` text, v1 first (on a hybrid machine the memory
/// controller is on v1 and the unified hierarchy has none).
pub fn locate(cgroup: &str, mountinfo: &str) -> Vec<(PathBuf, CgroupVersion)> {
    let mut found = Vec::new();
    let mounts: Vec<Vec<&str>> = mountinfo
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    // mountinfo: id parent dev root mountpoint opts [tags] - fstype source superopts
    let mount_of = |want_v2: bool| {
        mounts.iter().find_map(|f| {
            let dash = f.iter().position(|&x| x == "-")?;
            let fstype = *f.get(dash + 1)?;
            let superopts = f.get(dash + 3).copied().unwrap_or("");
            let ok = if want_v2 {
                fstype == "cgroup2"
            } else {
                fstype == "cgroup" && superopts.split(',').any(|o| o == "memory")
            };
            ok.then(|| (f.get(3).copied().unwrap_or("/"), f.get(4).copied()))
        })
    };
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let v2 = ctrls.is_empty();
        if !v2 && !ctrls.split(',').any(|c| c == "memory") {
            continue;
        }
        let Some((root, Some(mountpoint))) = mount_of(v2) else {
            continue;
        };
        // A cgroup namespace or bind mount shows the path relative to `root`.
        let rel = path
            .strip_prefix(root)
            .unwrap_or(path)
            .trim_start_matches('/');
        let version = if v2 {
            CgroupVersion::V2
        } else {
            CgroupVersion::V1
        };
        found.push((Path::new(mountpoint).join(rel), version));
    }
    found.sort_by_key(|(_, v)| *v == CgroupVersion::V2);
    found
}
