//! One timeline row: the whole process tree, its cgroup and the GPU at one
//! instant, and the sampler that takes it from the collectors.

use std::collections::HashSet;

use serde::Serialize;

use crate::collect::cgroup::{CgroupMemory, CgroupReader};
use crate::collect::gpu::GpuReader;
use crate::collect::procfs::ProcReader;
use crate::collect::tree::TreeSampler;

use super::roles::RoleBook;

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
    /// every `sample_roles::SHM_EVERY`th sample and carried between.
    pub workers_dev_shm_bytes: Option<u64>,
    /// 0 for one sample; for a row that stands for an interval of a long
    /// run, its length in seconds (every figure is then the interval's peak).
    pub span_s: f64,
}

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
}
