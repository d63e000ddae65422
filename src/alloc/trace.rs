//! Workload traces (allocate id size / free id) and running one through the
//! simulator until it ends or PyTorch would raise an OOM.

use std::collections::HashMap;

use super::conf::AllocConf;
use super::oom::OomState;
use super::state::{Allocator, DeviceMemory};

/// One event of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceEvent {
    /// A tensor of `size` bytes is created; `id` names it until freed.
    Alloc {
        /// Caller's name for the allocation (a counter, or a snapshot address).
        id: u64,
        /// Requested bytes.
        size: u64,
    },
    /// The tensor `id` is freed.
    Free {
        /// The id given at allocation.
        id: u64,
    },
    /// A training step (batch) ends; counts steps for reporting.
    StepEnd,
}

/// Where a run hit a CUDA OOM.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OomAt {
    /// Index of the failing event in the trace.
    pub event_index: usize,
    /// Steps completed before the failing one (0-based index of the failing step).
    pub step: usize,
    /// The allocator's numbers at the failure.
    pub state: OomState,
    /// The message PyTorch would print.
    pub message: String,
}

/// The outcome of one run of a trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunOutcome {
    /// Highest bytes allocated to tensors.
    pub peak_allocated_bytes: u64,
    /// Highest bytes reserved by the allocator (what nvidia-smi sees, less the context).
    pub peak_reserved_bytes: u64,
    /// Reserved but unallocated at the end (or at the OOM).
    pub reserved_unallocated_bytes: u64,
    /// Largest free cached block at the end (or at the OOM).
    pub largest_free_block_bytes: u64,
    /// Steps that completed.
    pub steps_completed: usize,
    /// Frees of ids never allocated in the trace (allocated before recording began).
    pub unmatched_frees: usize,
    /// The OOM, if the run hit one; the run stops there.
    pub oom: Option<OomAt>,
    /// Events run (up to and including a failing one).
    pub events_run: usize,
    /// Peak of `inactive_split_bytes`; None when nothing ran.
    pub inactive_split_peak: Option<u64>,
    /// Bytes reserved at the end of each completed step.
    pub reserved_after_step: Vec<u64>,
    /// Bytes allocated at the end of each completed step.
    pub allocated_after_step: Vec<u64>,
    /// Free bytes inside partly used segments (`inactive_split_bytes`, which
    /// no cache release can return) at the end of each completed step.
    pub inactive_split_after_step: Vec<u64>,
}

/// Runs `events` through a fresh allocator with `conf` on `device`.
pub fn run_trace(
    events: impl IntoIterator<Item = TraceEvent>,
    conf: &AllocConf,
    device: &DeviceMemory,
) -> RunOutcome {
    let mut a = Allocator::new(conf.clone(), *device);
    let mut live = HashMap::new();
    let (mut steps, mut unmatched, mut oom, mut events_run) = (0, 0, None, 0);
    let mut reserved_after_step = Vec::new();
    let mut allocated_after_step = Vec::new();
    let mut inactive_split_after_step = Vec::new();
    for (i, ev) in events.into_iter().enumerate() {
        events_run = i + 1;
        match ev {
            TraceEvent::Alloc { id, size } => match a.malloc(size) {
                Ok(b) => {
                    if let Some(old) = live.insert(id, b) {
                        a.free(old); // an id reused without a free: the old tensor is gone
                    }
                }
                Err(state) => {
                    let message = state.message();
                    oom = Some(OomAt {
                        event_index: i,
                        step: steps,
                        state: *state,
                        message,
                    });
                    break;
                }
            },
            TraceEvent::Free { id } => match live.remove(&id) {
                Some(b) => a.free(b),
                None => unmatched += 1,
            },
            TraceEvent::StepEnd => {
                steps += 1;
                reserved_after_step.push(a.stats().reserved.current);
                allocated_after_step.push(a.stats().allocated.current);
                inactive_split_after_step.push(a.stats().inactive_split.current);
            }
        }
    }
    let s = a.stats();
    RunOutcome {
        peak_allocated_bytes: s.allocated.peak,
        peak_reserved_bytes: s.reserved.peak,
        reserved_unallocated_bytes: s.reserved.current - s.allocated.current,
        largest_free_block_bytes: a.largest_free_block(),
        steps_completed: steps,
        events_run,
        inactive_split_peak: (events_run > 0).then_some(s.inactive_split.peak),
        unmatched_frees: unmatched,
        oom,
        reserved_after_step,
        allocated_after_step,
        inactive_split_after_step,
    }
}
