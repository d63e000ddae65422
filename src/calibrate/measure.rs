//! Measurement during the calibration run, through the collectors `watch`
//! uses: the process tree (the parent and its workers) by [`TreeSampler`]
//! with an unlimited `smaps_rollup` budget, so every probe is a full sweep
//! (exact PSS and USS), and the own memory cgroup's usage. The program's
//! file pages (binary, libraries) are counted in full as the parent mapped
//! them at the first probe (its file RSS): their PSS moves whenever another
//! process maps the same files (another headroom, a compiler), which says
//! nothing about this workload.
//! Probes are taken
//! at the moments the estimators name as each phase's worst; a phase's peak
//! is the largest of its probes.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::collect::cgroup::CgroupReader;
use crate::collect::procfs::ProcReader;
use crate::collect::tree::TreeSampler;

/// The largest readings of one phase.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PhasePeak {
    /// Largest sum of RSS over the tree, bytes.
    pub rss_sum: u64,
    /// Largest sum of PSS over the tree (each page once; file pages at their
    /// share when the run began; plus shared memory nobody maps), bytes.
    pub pss_sum: u64,
    /// Largest USS of each worker, bytes, by worker pid.
    pub worker_uss: BTreeMap<u32, u64>,
    /// Largest usage of the own memory cgroup (shared with anything else in it), bytes.
    pub cgroup_usage: Option<u64>,
    /// Shared memory no process mapped at the probe that counted most (batches
    /// queued in the ring), bytes: in the cgroup's charge, in nobody's PSS.
    pub unmapped_shm: u64,
    /// Probes taken.
    pub probes: u32,
}

/// One sweep of the tree.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    /// RSS summed.
    pub rss_sum: u64,
    /// PSS summed.
    pub pss_sum: u64,
    /// The root's own PSS (its file pages as at the first probe).
    pub root_pss: u64,
    /// (pid, USS) of every process but the root.
    pub children_uss: Vec<(u32, u64)>,
}

/// Probes the tree under `root` and keeps per-phase peaks.
pub struct Probe {
    sampler: TreeSampler,
    cgroup: Option<CgroupReader>,
    root: u32,
    proc: ProcReader,
    /// The root's file-backed RSS at the first probe.
    file_rss: Option<u64>,
    /// Peaks by phase name.
    pub peaks: BTreeMap<&'static str, PhasePeak>,
}

impl Probe {
    /// A probe of this process's tree.
    pub fn new() -> Probe {
        Probe {
            // Unlimited budget: every sample reads every smaps_rollup.
            sampler: TreeSampler::new(ProcReader::new(), 1e6, Duration::from_secs(3600)),
            cgroup: CgroupReader::own(),
            root: std::process::id(),
            proc: ProcReader::new(),
            file_rss: None,
            peaks: BTreeMap::new(),
        }
    }

    /// Sweeps the tree once, counting it toward `phase`; `unmapped_shm` is
    /// the shared memory that no process of the tree maps (added to PSS sum:
    /// the host figure is what a cgroup charges, every page once).
    pub fn probe(&mut self, phase: &'static str, unmapped_shm: u64) -> Sweep {
        let r = self.sampler.sample(self.root);
        let mut s = Sweep::default();
        let mut root_file_rss = 0;
        for p in &r.processes {
            let p_file = self.proc.smaps(p.pid).and_then(|t| t.pss_file).unwrap_or(0);
            let non_file = p.pss.unwrap_or(0).saturating_sub(p_file);
            s.rss_sum += p.rss.unwrap_or(0);
            s.pss_sum += non_file;
            if p.pid == self.root {
                // RSS = anonymous + shmem + file pages; before the workload
                // nothing is shared, so the non-file PSS is the rest of RSS.
                root_file_rss = p.rss.unwrap_or(0).saturating_sub(non_file);
                s.root_pss = non_file + *self.file_rss.get_or_insert(root_file_rss);
            } else {
                s.children_uss.push((p.pid, p.uss.unwrap_or(0)));
            }
        }
        let cg = self.cgroup.as_ref().and_then(|c| c.read_usage().usage);
        s.pss_sum += unmapped_shm + *self.file_rss.get_or_insert(root_file_rss);
        let peak = self.peaks.entry(phase).or_default();
        peak.rss_sum = peak.rss_sum.max(s.rss_sum);
        if s.pss_sum > peak.pss_sum {
            peak.pss_sum = s.pss_sum;
            peak.unmapped_shm = unmapped_shm;
        }
        peak.cgroup_usage = match (peak.cgroup_usage, cg) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        for &(pid, uss) in &s.children_uss {
            let e = peak.worker_uss.entry(pid).or_default();
            *e = (*e).max(uss);
        }
        peak.probes += 1;
        s
    }
}

impl Default for Probe {
    fn default() -> Self {
        Self::new()
    }
}
