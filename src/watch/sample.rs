//! One timeline row: the whole process tree, its cgroup and the GPU at one
//! instant, and the sampler that takes it from the collectors.

use std::collections::HashSet;

use serde::Serialize;

use crate::collect::cgroup::{CgroupMemory, CgroupReader};
use crate::collect::gpu::GpuReader;
use crate::collect::tree::TreeSampler;

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
}

impl Sampler {
    /// Reads everything once. `t_s` is the time to stamp on the row.
    pub fn take(&mut self, t_s: f64) -> Sample {
        let reading = self.tree.sample(self.root_pid);
        let procs = &reading.processes;
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

/// Most samples kept in memory for the plot (a few MiB); a three-day run at
/// 100 ms would otherwise keep 2.6 million. The timeline file keeps them all.
pub const PLOT_SAMPLES: usize = 20_000;

/// Halves `samples` once they reach [`PLOT_SAMPLES`], merging neighbours
/// into their larger readings so no peak disappears from the picture.
pub fn thin(samples: &mut Vec<Sample>) {
    if samples.len() < PLOT_SAMPLES {
        return;
    }
    let merged = samples
        .chunks(2)
        .map(|pair| match pair {
            [a, b] => merge_max(a, b),
            [a] => a.clone(),
            _ => Sample::default(),
        })
        .collect();
    *samples = merged;
}

fn merge_max(a: &Sample, b: &Sample) -> Sample {
    let mx = |x: Option<u64>, y: Option<u64>| x.max(y);
    let top = if b.top_pss_bytes > a.top_pss_bytes {
        b
    } else {
        a
    };
    Sample {
        t_s: a.t_s,
        processes: a.processes.max(b.processes),
        rss_sum_bytes: a.rss_sum_bytes.max(b.rss_sum_bytes),
        pss_sum_bytes: a.pss_sum_bytes.max(b.pss_sum_bytes),
        uss_sum_bytes: a.uss_sum_bytes.max(b.uss_sum_bytes),
        pss_shmem_sum_bytes: a.pss_shmem_sum_bytes.max(b.pss_shmem_sum_bytes),
        rss_shmem_sum_bytes: a.rss_shmem_sum_bytes.max(b.rss_shmem_sum_bytes),
        pss_file_sum_bytes: a.pss_file_sum_bytes.max(b.pss_file_sum_bytes),
        pss_carried: a.pss_carried.max(b.pss_carried),
        pss_age_ms: a.pss_age_ms.max(b.pss_age_ms),
        top_pid: top.top_pid,
        top_comm: top.top_comm.clone(),
        top_pss_bytes: top.top_pss_bytes,
        cgroup_usage_bytes: mx(a.cgroup_usage_bytes, b.cgroup_usage_bytes),
        cgroup_limit_bytes: mx(a.cgroup_limit_bytes, b.cgroup_limit_bytes),
        cgroup_anon_bytes: mx(a.cgroup_anon_bytes, b.cgroup_anon_bytes),
        cgroup_file_bytes: mx(a.cgroup_file_bytes, b.cgroup_file_bytes),
        cgroup_shmem_bytes: mx(a.cgroup_shmem_bytes, b.cgroup_shmem_bytes),
        cgroup_oom_kill: mx(a.cgroup_oom_kill, b.cgroup_oom_kill),
        gpu_used_bytes: mx(a.gpu_used_bytes, b.gpu_used_bytes),
        gpu_process_bytes: mx(a.gpu_process_bytes, b.gpu_process_bytes),
    }
}
