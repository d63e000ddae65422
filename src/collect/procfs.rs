//! The process tree and each process's memory, read from procfs.
//!
//! [`ProcReader`] finds a process's descendants (through
//! `/proc/<pid>/task/<tid>/children`, or by scanning every `/proc/<pid>/stat`
//! for its parent where that file is missing) and reads, per process, the
//! counters a memory budget needs: RSS, PSS and USS from `smaps_rollup` (or
//! summed over `smaps` on kernels older than 4.14), the shared-memory part of
//! RSS and PSS, and CPU time and parent from `stat`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

pub use super::proc_text::{ProcStat, SmapsTotals, page_size, parse_smaps, parse_stat};
use super::{kb_field, read_optional};

/// Reads processes below one procfs root (`/proc`, or a fake tree in tests).
#[derive(Debug, Clone)]
pub struct ProcReader {
    root: PathBuf,
}

/// One process's memory at one instant, the row a sampler keeps per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessMemory {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Command name.
    pub comm: String,
    /// RSS in bytes (smaps, else status VmRSS).
    pub rss: Option<u64>,
    /// PSS in bytes.
    pub pss: Option<u64>,
    /// USS in bytes (Private_Clean + Private_Dirty).
    pub uss: Option<u64>,
    /// The shmem part of PSS in bytes.
    pub pss_shmem: Option<u64>,
    /// File-backed part of the PSS (library and mapped-file pages).
    pub pss_file: Option<u64>,
    /// The shmem part of RSS in bytes (status RssShmem).
    pub rss_shmem: Option<u64>,
}

impl Default for ProcReader {
    fn default() -> Self {
        Self::with_root("/proc")
    }
}

impl ProcReader {
    /// A reader of the real `/proc`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader of a procfs tree mounted (or faked) at `root`.
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        ProcReader { root: root.into() }
    }

    fn file(&self, pid: u32, name: &str) -> PathBuf {
        self.root.join(pid.to_string()).join(name)
    }

    /// Parses `/proc/<pid>/stat`.
    pub fn stat(&self, pid: u32) -> Option<ProcStat> {
        parse_stat(&read_optional(&self.file(pid, "stat"))?)
    }

    /// Page counters from `smaps_rollup`, or summed over `smaps` where the
    /// rollup is missing (kernels before 4.14).
    pub fn smaps(&self, pid: u32) -> Option<SmapsTotals> {
        if let Some(text) = read_optional(&self.file(pid, "smaps_rollup")) {
            return Some(parse_smaps(&text));
        }
        read_optional(&self.file(pid, "smaps")).map(|t| parse_smaps(&t))
    }

    /// `(VmRSS, RssShmem)` from `/proc/<pid>/status`, in bytes.
    pub fn status_rss(&self, pid: u32) -> Option<(Option<u64>, Option<u64>)> {
        let text = read_optional(&self.file(pid, "status"))?;
        Some((kb_field(&text, "VmRSS"), kb_field(&text, "RssShmem")))
    }

    /// Resident set from `/proc/<pid>/statm`, the cheapest file that has it.
    pub fn statm_rss(&self, pid: u32) -> Option<u64> {
        let text = read_optional(&self.file(pid, "statm"))?;
        let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * page_size())
    }

    /// The cheap per-sample row from `status` alone (one file per process):
    /// name, parent, RSS and its shmem part; PSS/USS left `None`.
    pub fn status_memory(&self, pid: u32) -> Option<ProcessMemory> {
        let text = read_optional(&self.file(pid, "status"))?;
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::trim))
        };
        Some(ProcessMemory {
            pid,
            ppid: field("PPid")?.parse().ok()?,
            comm: field("Name")?.to_string(),
            rss: kb_field(&text, "VmRSS"),
            pss: None,
            uss: None,
            pss_shmem: None,
            pss_file: None,
            rss_shmem: kb_field(&text, "RssShmem"),
        })
    }

    /// The memory row of one process; `None` once it has gone.
    pub fn process_memory(&self, pid: u32) -> Option<ProcessMemory> {
        let stat = self.stat(pid)?;
        let smaps = self.smaps(pid).unwrap_or_default();
        let (vm_rss, rss_shmem) = self.status_rss(pid).unwrap_or((None, None));
        Some(ProcessMemory {
            pid,
            ppid: stat.ppid,
            comm: stat.comm,
            rss: smaps.rss.or(vm_rss),
            pss: smaps.pss,
            uss: smaps.uss(),
            pss_shmem: smaps.pss_shmem,
            pss_file: smaps.pss_file,
            rss_shmem,
        })
    }

    /// Direct children of `pid` from the `children` files of all its threads,
    /// or of its main thread only (`all_threads` false: one file, the cheap
    /// per-sample walk; DataLoader workers are forked by the main thread).
    /// `Some(empty)` once the process is gone; `None` when the kernel lacks
    /// the files (CONFIG_PROC_CHILDREN off).
    fn children_files(&self, pid: u32, all_threads: bool) -> Option<Vec<u32>> {
        let parse = |text: String| {
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .collect::<Vec<u32>>()
        };
        let main = self.root.join(format!("{pid}/task/{pid}/children"));
        if !all_threads {
            if let Some(text) = read_optional(&main) {
                return Some(parse(text));
            }
        } else if let Ok(tasks) = std::fs::read_dir(self.file(pid, "task")) {
            let mut kids = Vec::new();
            for task in tasks.flatten() {
                kids.extend(parse(read_optional(&task.path().join("children"))?));
            }
            return Some(kids);
        }
        // No file: gone (no stat either), or a kernel without children files.
        self.stat(pid).is_none().then(Vec::new)
    }

    /// Direct children of `pid` forked by its main thread (one file); empty
    /// when it is gone or the kernel lacks the file.
    pub fn main_thread_children(&self, pid: u32) -> Vec<u32> {
        self.children_files(pid, false).unwrap_or_default()
    }

    /// Every live pid under the root with its parent (the slow, always-there way).
    fn parent_map(&self) -> HashMap<u32, Vec<u32>> {
        let mut by_parent: HashMap<u32, Vec<u32>> = HashMap::new();
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return by_parent;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            if let Some(stat) = self.stat(pid) {
                by_parent.entry(stat.ppid).or_default().push(pid);
            }
        }
        by_parent
    }

    /// `pid` and all its live descendants, parents before children.
    pub fn descendants(&self, pid: u32) -> Vec<u32> {
        self.walk(pid, true)
    }

    /// Like [`Self::descendants`], following only children forked by each
    /// process's main thread: one file per process, for frequent sampling.
    pub fn descendants_of_main_threads(&self, pid: u32) -> Vec<u32> {
        self.walk(pid, false)
    }

    fn walk(&self, pid: u32, all_threads: bool) -> Vec<u32> {
        let mut scanned: Option<HashMap<u32, Vec<u32>>> = None;
        let mut seen = HashSet::from([pid]);
        let mut order = vec![pid];
        let mut queue = VecDeque::from([pid]);
        while let Some(p) = queue.pop_front() {
            let kids = match self.children_files(p, all_threads) {
                Some(k) => k,
                None => scanned
                    .get_or_insert_with(|| self.parent_map())
                    .get(&p)
                    .cloned()
                    .unwrap_or_default(),
            };
            for k in kids {
                if seen.insert(k) {
                    order.push(k);
                    queue.push_back(k);
                }
            }
        }
        order
    }

    /// The command line, arguments joined by spaces; `None` once gone.
    pub fn cmdline(&self, pid: u32) -> Option<String> {
        let raw = std::fs::read(self.file(pid, "cmdline")).ok()?;
        let text = String::from_utf8_lossy(&raw);
        Some(text.trim_end_matches('\0').replace('\0', " "))
    }

    /// Files in /dev/shm the process holds open, as (device, inode, size):
    /// PyTorch's `file_descriptor` sharing strategy (the default on Linux)
    /// creates each shared tensor as `/dev/shm/torch_<pid>_<n>`, unlinks it
    /// at once and keeps the fd (torch/csrc/StorageSharing.cpp with aten/src/ATen/MapAllocator.cpp:
    /// ALLOCATOR_MAPPED_KEEPFD | ALLOCATOR_MAPPED_UNLINK), so the fd table is
    /// where those bytes are visible (`/dev/shm/torch_... (deleted)`).
    pub fn shm_files(&self, pid: u32) -> Vec<(u64, u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let Ok(fds) = std::fs::read_dir(self.file(pid, "fd")) else {
            return Vec::new();
        };
        fds.flatten()
            .filter(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|t| t.to_string_lossy().starts_with("/dev/shm/"))
            })
            // metadata() follows the magic link to the open file, deleted or not.
            .filter_map(|fd| std::fs::metadata(fd.path()).ok())
            .map(|m| (m.dev(), m.ino(), m.size()))
            .collect()
    }

    /// The procfs root this reader reads.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// One field of `meminfo` (`MemTotal`, `MemAvailable`), bytes.
    pub fn meminfo(&self, field: &str) -> Option<u64> {
        let text = super::read_optional(&self.root.join("meminfo"))?;
        super::kb_field(&text, field)
    }
}
