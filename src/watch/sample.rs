//! One timeline row: the whole process tree, its cgroup and the GPU at one
//! instant, and the sampler that takes it from the collectors.

use std::collections::HashSet;

use serde::Serialize;

use crate::collect::cgroup::{CgroupMemory, CgroupReader};
use crate::collect::gpu::GpuReader;
use crate::collect::procfs::{ProcReader, ProcessMemory};
use crate::collect::tree::TreeSampler;

use super::roles::{NewProcess, Role, RoleBook};

/// One row of the timeline. Bytes everywhere; empty (None) where the source
/// gave no reading (no cgroup, no GPU driver).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Sample {
    /// Seconds since the job started.
    pub t_s: f64,
    /// Live processes in the job's tree (main process + workers).
    pub processes: u32,
    /// RSS summed over the tree: what RSS-summing accounting (Slurm without UsePss) sees.
    pub rss_sum_bytes: u64,
    /// PSS summed over the tree: each page counted once.
    pub pss_sum_bytes: u64,
    /// USS summed over the tree: pages private to one process.
    pub uss_sum_bytes: u64,
    /// The shmem (/dev/shm, shared anonymous) part of the PSS sum.
    pub pss_shmem_sum_bytes: u64,
    /// The shmem part of the RSS sum.
    pub rss_shmem_sum_bytes: u64,
    /// The file-backed part of the PSS sum: what is left without it is the
    /// tree's anonymous and shared memory, each page once, as a cgroup
    /// charges it (and the OOM killer weighs it).
    pub pss_file_sum_bytes: u64,
    /// Processes whose PSS/USS were carried from an earlier smaps_rollup read
    /// (adjusted by their RSS change) to keep sampling under its CPU budget.
    pub pss_carried: u32,
    /// Age of the oldest smaps_rollup read in this row, milliseconds.
    pub pss_age_ms: u64,
    /// The process with the largest PSS.
    pub top_pid: Option<u32>,
    /// That process's command name.
    pub top_comm: Option<String>,
    /// That process's PSS.
    pub top_pss_bytes: Option<u64>,
    /// The watched cgroup's usage (page cache and kernel memory included).
    pub cgroup_usage_bytes: Option<u64>,
    /// The watched cgroup's limit.
    pub cgroup_limit_bytes: Option<u64>,
    /// The cgroup's anonymous memory.
    pub cgroup_anon_bytes: Option<u64>,
    /// The cgroup's page cache (shmem included).
    pub cgroup_file_bytes: Option<u64>,
    /// The cgroup's shmem.
    pub cgroup_shmem_bytes: Option<u64>,
    /// The cgroup's OOM kills so far.
    pub cgroup_oom_kill: Option<u64>,
    /// GPU memory in use on all devices (NVML, CUDA contexts included).
    pub gpu_used_bytes: Option<u64>,
    /// GPU memory NVML charges to processes of the tree.
    pub gpu_process_bytes: Option<u64>,
    /// RSS of the main process(es) (see `roles`).
    pub main_rss_bytes: u64,
    /// PSS of the main process(es).
    pub main_pss_bytes: u64,
    /// USS of the main process(es).
    pub main_uss_bytes: u64,
    /// RSS summed over the training loader workers.
    pub train_workers_rss_bytes: u64,
    /// PSS summed over the training loader workers.
    pub train_workers_pss_bytes: u64,
    /// USS summed over the training loader workers.
    pub train_workers_uss_bytes: u64,
    /// RSS summed over the evaluation loader workers.
    pub eval_workers_rss_bytes: u64,
    /// PSS summed over the evaluation loader workers.
    pub eval_workers_pss_bytes: u64,
    /// USS summed over the evaluation loader workers.
    pub eval_workers_uss_bytes: u64,
    /// RSS summed over other children.
    pub other_rss_bytes: u64,
    /// PSS summed over other children.
    pub other_pss_bytes: u64,
    /// USS summed over other children.
    pub other_uss_bytes: u64,
    /// /dev/shm files the loader workers hold open (each file once), read
    /// every [`SHM_EVERY`]th sample and carried between.
    pub workers_dev_shm_bytes: Option<u64>,
    /// 0 for one sample; for a row that stands for an interval of a long
    /// run, its length in seconds (every figure is then the interval's peak).
    pub span_s: f64,
}

/// The loader workers' /dev/shm files are read every this many samples
/// (a readlink per open fd: too costly for every sample of 100 processes).
pub const SHM_EVERY: u64 = 50;

/// Takes samples of one job: its tree under `root_pid`, a cgroup, the GPUs.
pub struct Sampler {
    /// The process-tree sampler.
    pub tree: TreeSampler,
    /// The cgroup to read, if any.
    pub cgroup: Option<CgroupReader>,
    /// NVML, if a driver is there.
    pub gpu: Option<GpuReader>,
    /// The job's main process.
    pub root_pid: u32,
    /// Samples taken so far.
    pub taken: u64,
    /// The cgroup's last full reading (every 10th sample).
    pub last_cgroup: CgroupMemory,
    /// Read the cgroup's memory.stat every this many samples (usage every sample).
    pub stat_every: u64,
    /// When attached to a cgroup: its processes are the job, not a tree.
    pub members: Option<CgroupReader>,
    /// Reads command lines and fds for the roles.
    pub proc: ProcReader,
    /// Each process's role.
    pub roles: RoleBook,
    /// The workers' /dev/shm bytes at the last read.
    pub last_shm: Option<u64>,
    /// The pids of the last sample.
    pub last_pids: Vec<u32>,
}

impl Sampler {
    /// Reads everything once. `t_s` is the time to stamp on the row.
    pub fn take(&mut self, t_s: f64) -> Sample {
        let reading = match &self.members {
            Some(cg) => {
                let pids = crate::collect::job_cgroup::member_pids(cg);
                let root = pids.first().copied().unwrap_or(self.root_pid);
                self.tree.sample_pids(pids, root)
            }
            None => self.tree.sample(self.root_pid),
        };
        let procs = &reading.processes;
        self.last_pids = procs.iter().map(|p| p.pid).collect();
        let mut s = Sample {
            t_s,
            processes: procs.len() as u32,
            pss_carried: reading.carried,
            pss_age_ms: reading.oldest_pss_ms,
            ..Sample::default()
        };
        for p in procs {
            s.rss_sum_bytes += p.rss.unwrap_or(0);
            s.pss_sum_bytes += p.pss.unwrap_or(0);
            s.uss_sum_bytes += p.uss.unwrap_or(0);
            s.pss_shmem_sum_bytes += p.pss_shmem.unwrap_or(0);
            s.rss_shmem_sum_bytes += p.rss_shmem.unwrap_or(0);
            s.pss_file_sum_bytes += p.pss_file.unwrap_or(0);
        }
        self.add_roles(t_s, procs, &mut s);
        if let Some(top) = procs.iter().max_by_key(|p| p.pss.or(p.rss).unwrap_or(0)) {
            s.top_pid = Some(top.pid);
            s.top_comm = Some(top.comm.clone());
            s.top_pss_bytes = top.pss;
        }
        if let Some(cg) = &self.cgroup {
            // Usage every sample; the rest (memory.stat is costly: v1 sums the
            // hierarchy) every `stat_every`th (default 10th), carried between.
            let full = self.taken.is_multiple_of(self.stat_every.max(1));
            let mut m = if full { cg.read() } else { cg.read_usage() };
            if full {
                self.last_cgroup = m.clone();
            }
            let usage = m.usage;
            m = CgroupMemory {
                usage,
                ..self.last_cgroup.clone()
            };
            s.cgroup_usage_bytes = m.usage;
            s.cgroup_limit_bytes = m.limit;
            s.cgroup_anon_bytes = m.anon;
            s.cgroup_file_bytes = m.file;
            s.cgroup_shmem_bytes = m.shmem;
            s.cgroup_oom_kill = m.oom_kill;
        }
        if let Some(gpu) = &self.gpu {
            let pids: HashSet<u32> = procs.iter().map(|p| p.pid).collect();
            let g = gpu.read(&pids);
            s.gpu_used_bytes = Some(g.device_used);
            s.gpu_process_bytes = g.process_used;
        }
        self.taken += 1;
        s
    }
}

impl Sampler {
    /// A sampler of the tree under `root_pid` (or of the cgroup `members`).
    pub fn new(tree: TreeSampler, root_pid: u32, members: Option<CgroupReader>) -> Self {
        Sampler {
            tree,
            cgroup: None,
            gpu: None,
            root_pid,
            taken: 0,
            last_cgroup: CgroupMemory::default(),
            stat_every: 10,
            members,
            proc: ProcReader::new(),
            roles: RoleBook::default(),
            last_shm: None,
            last_pids: Vec::new(),
        }
    }

    /// Gives new processes their role and sums RSS/PSS/USS per role.
    fn add_roles(&mut self, t_s: f64, procs: &[ProcessMemory], s: &mut Sample) {
        let pids: std::collections::HashSet<u32> = procs.iter().map(|p| p.pid).collect();
        let in_set = |pid: u32| pids.contains(&pid);
        let new: Vec<NewProcess> = procs
            .iter()
            .filter(|p| self.roles.is_new(p.pid))
            .map(|p| NewProcess {
                pid: p.pid,
                ppid: p.ppid,
                comm: p.comm.clone(),
                cmdline: self.proc.cmdline(p.pid).unwrap_or_default(),
            })
            .collect();
        if !new.is_empty() {
            let root = self.root_pid;
            let attached_cgroup = self.members.is_some();
            // In a cgroup, the job starts at processes whose parent is outside it.
            let is_root = |pid: u32| {
                let ppid = procs.iter().find(|p| p.pid == pid).map_or(0, |p| p.ppid);
                pid == root || (attached_cgroup && !in_set(ppid))
            };
            self.roles.assign(t_s, new, is_root);
            self.roles.retain(in_set);
        }
        let read_shm = self.taken.is_multiple_of(SHM_EVERY);
        let mut shm_files = std::collections::HashMap::new();
        for p in procs {
            let role = self.roles.role(p.pid).unwrap_or(Role::Other);
            let (rss, pss, uss) = match role {
                Role::Main => (
                    &mut s.main_rss_bytes,
                    &mut s.main_pss_bytes,
                    &mut s.main_uss_bytes,
                ),
                Role::TrainWorkers => (
                    &mut s.train_workers_rss_bytes,
                    &mut s.train_workers_pss_bytes,
                    &mut s.train_workers_uss_bytes,
                ),
                Role::EvalWorkers => (
                    &mut s.eval_workers_rss_bytes,
                    &mut s.eval_workers_pss_bytes,
                    &mut s.eval_workers_uss_bytes,
                ),
                Role::Other => (
                    &mut s.other_rss_bytes,
                    &mut s.other_pss_bytes,
                    &mut s.other_uss_bytes,
                ),
            };
            *rss += p.rss.unwrap_or(0);
            *pss += p.pss.unwrap_or(0);
            *uss += p.uss.unwrap_or(0);
            let worker = matches!(role, Role::TrainWorkers | Role::EvalWorkers);
            if read_shm && worker {
                for (dev, ino, size) in self.proc.shm_files(p.pid) {
                    shm_files.insert((dev, ino), size);
                }
            }
        }
        if read_shm {
            self.last_shm = Some(shm_files.values().sum());
        }
        s.workers_dev_shm_bytes = self.last_shm;
    }
}
