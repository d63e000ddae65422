//! `headroom calibrate`: a real calibration workload (synthetic power-law
//! graph, PyG-style neighbor sampling in re-executed worker processes that
//! share the graph and hand batches back through shared memory, a SAGE
//! training step) whose measurements fit the estimators' machine-dependent
//! coefficients and check every estimator against this machine.

pub mod cli;
pub mod corpus;
pub mod epoch;
pub mod fit;
pub mod fit_gpu;
pub mod from_run;
pub mod gpu;
pub mod graph;
pub mod layout;
pub mod measure;
pub mod report;
pub mod ridge;
pub mod rng;
pub mod sampler;
pub mod shm;
pub mod train;
pub mod worker;
pub mod workload;

/// Fixes glibc's mmap threshold at 128 KiB: large arrays are then mapped and
/// given back to the kernel when freed (the dynamic threshold would move them
/// onto the heap, where freed pages stay resident), so resident memory
/// follows the live arrays as PyTorch's allocations do.
pub fn fix_malloc_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
