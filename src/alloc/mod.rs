//! A simulator of PyTorch's CUDA caching allocator (CUDACachingAllocator,
//! current main with the 1.x/2.0 differences noted where they matter), the
//! workloads fed to it (GNN training steps, replayed memory snapshots) and
//! `headroom simulate-alloc`. Everything but `cli` and the snapshot file
//! reading is pure: no I/O, no clock.

pub mod cli;
pub mod conf;
mod expandable;
pub mod oom;
mod oom_parse;
mod pickle_guard;
mod pickle_measure;
#[cfg(test)]
mod pickle_tests;
mod pickle_walk;
mod release;
pub mod replay;
pub mod rules;
mod sim;
pub mod snapshot;
pub mod state;
mod step_events;
pub mod trace;
pub mod workload;

pub use conf::AllocConf;
pub use oom::{ExpandableWhatIf, OomNumbers, OomState, expandable_what_if};
pub use state::{Allocator, BlockId, DeviceMemory, SegmentEvent, Stats};

#[cfg(test)]
mod tests;
pub use trace::{OomAt, RunOutcome, TraceEvent, run_trace};
pub use workload::{GnnStepShape, SimResult, simulate_training, size_factors, training_trace_with};
#[cfg(test)]
mod props;
#[cfg(test)]
mod seed004;
