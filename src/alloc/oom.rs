//! CUDA out-of-memory: the state the simulator was in when a request failed,
//! the message PyTorch 2.x prints for it, and the what-if that `diagnose`
//! uses on a real message: would expandable_segments have avoided it?

use super::rules::{K_LARGE_BUFFER, format_size};
use super::state::Allocator;

/// The numbers behind one simulated OOM, as PyTorch gathers them in `malloc`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OomState {
    /// Bytes the caller asked for.
    pub requested_bytes: u64,
    /// The segment size cudaMalloc was asked for ("Tried to allocate").
    pub alloc_size_bytes: u64,
    /// Total capacity of the card.
    pub total_bytes: u64,
    /// What cudaMemGetInfo reports free.
    pub free_bytes: u64,
    /// This process's use including the CUDA context.
    pub process_bytes: u64,
    /// The per-process fraction limit, if one is set.
    pub allowed_bytes: Option<u64>,
    /// Bytes allocated to tensors.
    pub allocated_bytes: u64,
    /// Bytes reserved by the allocator.
    pub reserved_bytes: u64,
    /// The largest free cached block (no request above it can be served from the cache).
    pub largest_free_block_bytes: u64,
}

impl OomState {
    /// The text of `torch.OutOfMemoryError` (c10/cuda/CUDACachingAllocator.cpp,
    /// `DeviceCachingAllocator::malloc`, PyTorch >= 2.1). The per-process part
    /// names this process only: other processes' PIDs are not simulated.
    pub fn message(&self) -> String {
        let allowed = self
            .allowed_bytes
            .map(|a| format!("{} allowed; ", format_size(a)))
            .unwrap_or_default();
        format!(
            "CUDA out of memory. Tried to allocate {}. GPU 0 has a total capacity of {} of which {} is free. \
             Including non-PyTorch memory, this process has {} memory in use. {}Of the allocated memory {} is \
             allocated by PyTorch, and {} is reserved by PyTorch but unallocated. If reserved but unallocated \
             memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  \
             See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
            format_size(self.alloc_size_bytes),
            format_size(self.total_bytes),
            format_size(self.free_bytes),
            format_size(self.process_bytes),
            allowed,
            format_size(self.allocated_bytes),
            format_size(self.reserved_bytes - self.allocated_bytes),
        )
    }
}

impl OomState {
    /// The message of older releases (seen from 1.10 up to 2.0 in real logs):
    /// "Tried to allocate X (GPU 0; T total capacity; A already allocated;
    /// F free; R reserved in total by PyTorch) If reserved memory is >> ...".
    pub fn legacy_message(&self) -> String {
        let allowed = self
            .allowed_bytes
            .map(|a| format!("{} allowed; ", format_size(a)))
            .unwrap_or_default();
        format!(
            "CUDA out of memory. Tried to allocate {} (GPU 0; {} total capacity; {} already allocated; {} free; \
             {}{} reserved in total by PyTorch) If reserved memory is >> allocated memory try setting \
             max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
            format_size(self.alloc_size_bytes),
            format_size(self.total_bytes),
            format_size(self.allocated_bytes),
            format_size(self.free_bytes),
            allowed,
            format_size(self.reserved_bytes),
        )
    }
}

impl Allocator {
    pub(super) fn oom_state(&self, requested: u64, alloc_size: u64) -> OomState {
        let d = &self.device;
        OomState {
            requested_bytes: requested,
            alloc_size_bytes: alloc_size,
            total_bytes: d.total,
            free_bytes: d.limit().saturating_sub(self.total_allocated_memory),
            process_bytes: self.total_allocated_memory + d.context,
            allowed_bytes: d.memory_fraction.map(|f| (f * d.total as f64) as u64),
            allocated_bytes: self.stats.allocated.current,
            reserved_bytes: self.stats.reserved.current,
            largest_free_block_bytes: self.largest_free_block(),
        }
    }
}

/// The numbers a real CUDA OOM message prints (bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OomNumbers {
    /// "Tried to allocate X".
    pub requested: u64,
    /// "total capacity of X".
    pub total: u64,
    /// "of which X is free".
    pub free: u64,
    /// "X is allocated by PyTorch".
    pub allocated: u64,
    /// "X is reserved by PyTorch but unallocated".
    pub reserved_unallocated: u64,
    /// "this process has X memory in use", when printed.
    pub process_in_use: Option<u64>,
}

/// What expandable segments would have changed for one OOM.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ExpandableWhatIf {
    /// The request would most likely have succeeded.
    pub would_fit: bool,
    /// Memory the request could have used: free plus the reserved-but-unallocated
    /// fragments, less one 20 MiB page of slack at each end of the new range.
    pub usable_bytes: u64,
    /// usable minus the request rounded up to 20 MiB pages: positive = room to
    /// spare, negative = still short by this much.
    pub margin_bytes: i64,
    /// Memory outside PyTorch (CUDA context, libraries), when the message says.
    pub non_pytorch_bytes: Option<u64>,
}

/// Estimates from a printed OOM whether `expandable_segments:True` would have
/// avoided it. When PyTorch raises, it has already freed every unsplit cached
/// segment, so the reserved-but-unallocated memory is free space inside
/// segments that are partly in use: with a segment mode request it is useless
/// unless one piece is big enough; with expandable segments its free pages are
/// unmapped and remapped where the request needs them. Page granularity (20 MiB
/// in the large pool) costs at most a partial page on each side.
pub fn expandable_what_if(n: &OomNumbers) -> ExpandableWhatIf {
    let slack = 2 * K_LARGE_BUFFER;
    let usable = (n.free + n.reserved_unallocated).saturating_sub(slack);
    let need = n.requested.div_ceil(K_LARGE_BUFFER) * K_LARGE_BUFFER;
    let margin = usable as i64 - need as i64;
    ExpandableWhatIf {
        would_fit: margin >= 0,
        usable_bytes: usable,
        margin_bytes: margin,
        non_pytorch_bytes: n
            .process_in_use
            .map(|p| p.saturating_sub(n.allocated + n.reserved_unallocated)),
    }
}
