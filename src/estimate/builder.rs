//! Building one phase's estimate: components added in order (zero ones
//! dropped, host ones multiplied by the ranks per node), the /dev/shm share
//! tracked, and only totals kept on the planner's fast path.

use super::dataset::DatasetBytes;
use super::host::InFlight;
use super::phase::{Component, Phase, PhaseEstimate};

/// A phase under construction: components in order, zero ones dropped.
/// With `detail` off (the planner's search) only totals are kept.
pub(super) struct Builder {
    host: Vec<Component>,
    total: u64,
    shm: f64,
    kernel: f64,
    ranks: f64,
    detail: bool,
}

impl Builder {
    pub(super) fn new(ranks: u32, detail: bool) -> Builder {
        Builder {
            host: Vec::with_capacity(if detail { 12 } else { 0 }),
            total: 0,
            shm: 0.0,
            kernel: 0.0,
            ranks: ranks as f64,
            detail,
        }
    }
    pub(super) fn add(&mut self, name: &'static str, bytes: f64) {
        if bytes >= 1.0 {
            let bytes = (bytes * self.ranks) as u64;
            self.total += bytes;
            if self.detail {
                self.host.push(Component { name, bytes });
            }
        }
    }
    pub(super) fn add_shm(&mut self, name: &'static str, bytes: f64) {
        self.shm += bytes * self.ranks;
        self.add(name, bytes);
    }
    /// Kernel memory the cgroup charges (page_tables.rs).
    pub(super) fn add_kernel(&mut self, name: &'static str, bytes: f64) {
        self.kernel += bytes * self.ranks;
        self.add(name, bytes);
    }
    pub(super) fn in_flight(&mut self, f: &InFlight, eval: bool) {
        let (main, shm, work) = if eval {
            (
                "eval batches (main process)",
                "eval batches in /dev/shm",
                "eval batches being built in workers",
            )
        } else {
            (
                "batches in flight (main process)",
                "batches in flight in /dev/shm",
                "batches being built in workers",
            )
        };
        self.add(main, f.private);
        self.add_shm(shm, f.shm);
        self.add(work, f.in_workers);
        self.add(
            if eval {
                "pinned eval batches"
            } else {
                "pinned batches"
            },
            f.pinned,
        );
    }
    pub(super) fn finish(
        self,
        phase: Phase,
        moment: &'static str,
        gpu: &[Component],
    ) -> PhaseEstimate {
        let gpu_bytes = gpu.iter().map(|c| c.bytes).sum();
        let gpu = if self.detail {
            gpu.to_vec()
        } else {
            Vec::new()
        };
        PhaseEstimate {
            phase,
            moment,
            host: self.host,
            host_bytes: self.total,
            shm_bytes: self.shm as u64,
            kernel_bytes: self.kernel as u64,
            gpu,
            gpu_bytes,
        }
    }
}

/// The dataset's resident tensors; `loaders_built` once the loaders exist
/// (a sorted edge_index then lives in /dev/shm when workers share it).
pub(super) fn base_dataset(b: &mut Builder, ds: &DatasetBytes, loaders_built: bool) {
    b.add("features", ds.features as f64);
    if ds.features_replaced > 0 {
        b.add(
            "features replaced by the script (the dataset keeps the original)",
            ds.features_replaced as f64,
        );
    }
    b.add("labels", ds.labels as f64);
    if loaders_built && ds.edge_index_shared {
        b.add_shm("edge_index (in /dev/shm)", ds.edge_index as f64);
    } else {
        b.add("edge_index", ds.edge_index as f64);
    }
    b.add("split indices", ds.splits as f64);
}

/// CSC copies, in /dev/shm when workers share them.
pub(super) fn add_csc(b: &mut Builder, name: &'static str, in_shm: bool, bytes: f64) {
    if in_shm {
        b.add_shm(name, bytes)
    } else {
        b.add(name, bytes)
    }
}
