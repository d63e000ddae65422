//! The memory of a whole process tree, sampled cheaply enough to run every
//! 100 ms beside a training job.
//!
//! RSS comes from `status` (kernel counters, O(1) per process) at every
//! sample. PSS and USS need `smaps_rollup`, which walks every page table
//! entry: about 20 ns per resident page here, so 17 processes mapping 280
//! MiB each cost ~90 ms per sweep, 90% of a core at 100 ms. [`TreeSampler`]
//! therefore re-reads `smaps_rollup` only while this whole process's own CPU
//! time (getrusage, every thread, the cheap reads included) stays under a
//! budget (a share of one core since the sampler started, plus a small burst
//! so the first processes are read at once), most-changed process first, and between reads carries each process's PSS/USS forward,
//! adjusted by its RSS change since the read (growth counted as private).
//! A process born since the last sweep counts only its growth since it was
//! first seen: a fork shares all its pages with a parent whose PSS still
//! counts them, so the tree's sum is conserved until the next sweep splits
//! them exactly.
//! Every reading says how many of its processes were carried or estimated.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::procfs::{ProcReader, ProcessMemory, SmapsTotals};
use super::statm_fds::StatmFds;

/// The last `smaps_rollup` of one process.
#[derive(Debug, Clone)]
struct Rollup {
    /// Shared pages inherited from processes that exited since the read.
    inherited: u64,
    rss_at_read: u64,
    totals: SmapsTotals,
    read_at: Instant,
}

/// One sample of a tree.
#[derive(Debug, Clone, Default)]
pub struct TreeReading {
    /// Every live process, parents first; PSS/USS possibly carried forward.
    pub processes: Vec<ProcessMemory>,
    /// Processes whose PSS/USS in this reading were not read at this sample.
    pub carried: u32,
    /// Age of the oldest PSS reading used, milliseconds.
    pub oldest_pss_ms: u64,
}

/// Samples a process tree's memory under a CPU budget for `smaps_rollup`.
pub struct TreeSampler {
    proc: ProcReader,
    budget_share: f64,
    burst: Duration,
    started: Instant,
    cpu_at_start: Duration,
    spent: Duration,
    cache: HashMap<u32, Rollup>,
    /// RSS when each process was first seen, for those not read yet.
    first_seen: HashMap<u32, u64>,
    /// Each process's last `status` row (name, parent, RssShmem).
    status: HashMap<u32, ProcessMemory>,
    /// Samples taken.
    samples: u64,
    /// Each process's (parent, PSS, USS) in the last reading.
    last: HashMap<u32, (u32, u64, u64)>,
    /// `statm` files kept open, re-read every sample.
    statm: StatmFds,
    /// The last tree's pids, parents first.
    order: Vec<u32>,
    /// Pids of the last tree that had children in it.
    parents: HashSet<u32>,
}

impl TreeSampler {
    /// A sampler that reads `smaps_rollup` only while this process has used
    /// less than `budget_share` of one core (0.008 = 0.8%) since it was made,
    /// plus a one-off `burst`.
    pub fn new(proc: ProcReader, budget_share: f64, burst: Duration) -> Self {
        TreeSampler {
            statm: StatmFds::new(proc.root().to_path_buf()),
            proc,
            budget_share,
            burst,
            started: Instant::now(),
            cpu_at_start: own_cpu(),
            spent: Duration::ZERO,
            cache: HashMap::new(),
            first_seen: HashMap::new(),
            status: HashMap::new(),
            samples: 0,
            last: HashMap::new(),
            order: Vec::new(),
            parents: HashSet::new(),
        }
    }

    /// Time spent in `smaps_rollup` reads so far.
    pub fn smaps_time(&self) -> Duration {
        self.spent
    }

    /// Reads the tree under `root` once.
    pub fn sample(&mut self, root: u32) -> TreeReading {
        // Every tenth sample re-reads what rarely changes: children forked by
        // other threads, names, parents and the shmem part of RSS (`status`).
        // Between, one `children` and one `statm` file per process.
        // Between full walks only processes that had children at the last
        // one (the main process, not its workers) are asked for new ones:
        // 100 workers would otherwise cost 100 more files a sample. A worker's
        // own child is found at the next full walk, within 10 samples.
        let pids = if self.samples.is_multiple_of(10) || self.order.is_empty() {
            self.proc.descendants(root)
        } else {
            let mut pids = self.order.clone();
            let mut known: HashSet<u32> = pids.iter().copied().collect();
            let parents: Vec<u32> = std::iter::once(root)
                .chain(self.parents.iter().copied())
                .collect();
            for parent in parents {
                for kid in self.proc.main_thread_children(parent) {
                    if known.insert(kid) {
                        pids.push(kid);
                    }
                }
            }
            pids
        };
        let reading = self.sample_pids(pids, root);
        self.order = reading.processes.iter().map(|p| p.pid).collect();
        let in_tree: HashSet<u32> = self.order.iter().copied().collect();
        self.parents = reading
            .processes
            .iter()
            .map(|p| p.ppid)
            .filter(|pp| in_tree.contains(pp))
            .collect();
        reading
    }

    /// Reads the processes `pids` once (a cgroup's members, parents need not
    /// come first); `root` inherits the shared pages of processes that exit.
    pub fn sample_pids(&mut self, pids: Vec<u32>, root: u32) -> TreeReading {
        let now = Instant::now();
        let full = self.samples.is_multiple_of(10);
        self.samples += 1;
        let mut procs: Vec<ProcessMemory> = Vec::with_capacity(pids.len());
        for pid in pids {
            let known = if full { None } else { self.status.get(&pid) };
            let row = match known {
                Some(k) => match self.statm.rss(pid) {
                    Some(rss) => Some(ProcessMemory {
                        rss: Some(rss),
                        ..k.clone()
                    }),
                    None => self.proc.status_memory(pid),
                },
                None => self.proc.status_memory(pid),
            };
            // A zombie (exited, not yet reaped) maps nothing: it is gone.
            if let Some(row) = row.filter(|r| r.rss != Some(0)) {
                self.status.insert(pid, row.clone());
                procs.push(row);
            }
        }
        // A set: these checks run for every process, every sample.
        let alive: std::collections::HashSet<u32> = procs.iter().map(|p| p.pid).collect();
        let live = |pid: &u32| alive.contains(pid);
        self.status.retain(|pid, _| live(pid));
        self.statm.retain(|pid| live(&pid));
        // A process that exits frees its private pages; its share of the
        // shared ones falls to the survivors. Until the next sweep, hand that
        // share to its parent (or the root), so the tree's sum stays right.
        let gone: Vec<(u32, u32, u64)> = self
            .last
            .iter()
            .filter(|(pid, _)| !live(pid))
            .map(|(pid, &(ppid, pss, uss))| (*pid, ppid, pss.saturating_sub(uss)))
            .collect();
        for (pid, ppid, shared) in gone {
            self.last.remove(&pid);
            let heir = if live(&ppid) { ppid } else { root };
            if let Some(r) = self.cache.get_mut(&heir) {
                r.inherited += shared;
            }
        }
        self.cache.retain(|pid, _| live(pid));
        self.first_seen.retain(|pid, _| live(pid));
        for p in &procs {
            self.first_seen.entry(p.pid).or_insert(p.rss.unwrap_or(0));
        }
        // A sweep reads every process at once, so shared pages are split
        // consistently; partial sweeps would count a parent's pages in full
        // beside children already charged their share.
        let allowance = self.burst + self.started.elapsed().mul_f64(self.budget_share);
        if own_cpu().saturating_sub(self.cpu_at_start) < allowance {
            let t = Instant::now();
            for p in &procs {
                if let Some(totals) = self.proc.smaps(p.pid) {
                    let rss_at_read = totals.rss.or(p.rss).unwrap_or(0);
                    let rollup = Rollup {
                        inherited: 0,
                        rss_at_read,
                        totals,
                        read_at: now,
                    };
                    self.cache.insert(p.pid, rollup);
                }
            }
            self.spent += t.elapsed();
        }
        let rss_of: HashMap<u32, u64> = procs.iter().map(|p| (p.pid, p.rss.unwrap_or(0))).collect();
        let mut reading = TreeReading::default();
        for p in &mut procs {
            let rss = p.rss.unwrap_or(0);
            match self.cache.get(&p.pid) {
                Some(r) => {
                    let grown = rss as i128 - r.rss_at_read as i128;
                    let carry = |v: Option<u64>| v.map(|v| (v as i128 + grown).max(0) as u64);
                    let inherited = r.inherited;
                    if r.read_at != now {
                        reading.carried += 1;
                        p.pss = carry(r.totals.pss).map(|v| v + inherited);
                        p.uss = carry(r.totals.uss());
                    } else {
                        p.pss = r.totals.pss;
                        p.uss = r.totals.uss();
                        p.rss = r.totals.rss.or(p.rss);
                    }
                    p.pss_shmem = r.totals.pss_shmem;
                    p.pss_file = r.totals.pss_file;
                    let age = now.saturating_duration_since(r.read_at).as_millis() as u64;
                    reading.oldest_pss_ms = reading.oldest_pss_ms.max(age);
                }
                None => {
                    // Born since the last sweep. A fork shares every page with
                    // its parent, whose PSS still counts them, so only what it
                    // has beyond its parent, or grew since first seen, is new.
                    reading.carried += 1;
                    let first = self.first_seen.get(&p.pid).copied().unwrap_or(rss);
                    let parent = rss_of.get(&p.ppid).copied().unwrap_or(0);
                    let new = rss.saturating_sub(first).max(rss.saturating_sub(parent));
                    p.pss = Some(new);
                    p.uss = Some(new);
                    p.pss_shmem = Some(0);
                    p.pss_file = Some(0);
                }
            }
        }
        self.last = procs
            .iter()
            .map(|p| (p.pid, (p.ppid, p.pss.unwrap_or(0), p.uss.unwrap_or(0))))
            .collect();
        reading.processes = procs;
        reading
    }
}

/// CPU time this process has used, all threads, user and system: the
/// utime + stime of /proc/self/stat, from getrusage at microsecond resolution.
pub fn own_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike;
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(ru) => {
            let us = ru.user_time().num_microseconds() + ru.system_time().num_microseconds();
            Duration::from_micros(us.max(0) as u64)
        }
        Err(_) => Duration::ZERO,
    }
}
