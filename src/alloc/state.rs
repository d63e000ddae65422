//! The allocator's state: the device it runs on, blocks in an arena, the
//! small and large pools (free blocks ordered by size then address, as
//! `BlockComparatorSize` orders them), the statistics, and the bookkeeping
//! helpers the rules in `sim.rs`, `release.rs` and `expandable.rs` share.
//!
//! One stream only (the default stream): PyTorch keys every pool by stream
//! first, so with one stream the order (stream, size, address) reduces to
//! (size, address). No CUDA events, graphs or private pools. Addresses of
//! cudaMalloc'd segments are handed out in increasing order (real cudaMalloc
//! addresses only matter for tie-breaks between free blocks of equal size).

use std::collections::BTreeSet;

use super::conf::AllocConf;

/// Index of a block in the allocator's arena (stable while the block lives).
pub type BlockId = usize;

/// The device the allocator runs on: what cudaMemGetInfo would report.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DeviceMemory {
    /// Total memory of the card (`cudaDeviceProp.totalGlobalMem`).
    pub total: u64,
    /// The CUDA context and libraries of this process (invisible to PyTorch).
    pub context: u64,
    /// Memory other processes hold on the card.
    pub other_processes: u64,
    /// `torch.cuda.set_per_process_memory_fraction`, if set.
    pub memory_fraction: Option<f64>,
}

impl DeviceMemory {
    /// A card of `total` bytes of which `context` go to the CUDA context.
    pub fn new(total: u64, context: u64) -> Self {
        DeviceMemory {
            total,
            context,
            other_processes: 0,
            memory_fraction: None,
        }
    }

    /// Bytes the allocator can reserve before cudaMalloc fails.
    pub fn limit(&self) -> u64 {
        self.total
            .saturating_sub(self.context + self.other_processes)
    }
}

/// Which pool a block belongs to (`small_blocks` / `large_blocks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    /// Requests of at most 1 MiB.
    Small,
    /// Everything larger.
    Large,
}

#[derive(Debug, Clone)]
pub(super) struct Block {
    pub addr: u64,
    pub size: u64,
    pub requested: u64,
    pub pool: PoolKind,
    pub allocated: bool,
    pub mapped: bool,
    pub prev: Option<BlockId>,
    pub next: Option<BlockId>,
    /// Index of the expandable segment this block lives in.
    pub seg: Option<usize>,
    pub gc_count_base: u64,
}

impl Block {
    pub fn is_split(&self) -> bool {
        self.prev.is_some() || self.next.is_some()
    }
}

#[derive(Debug, Default)]
pub(super) struct Pool {
    /// Free mapped blocks by (size, address): `BlockComparatorSize`.
    pub blocks: BTreeSet<(u64, u64, BlockId)>,
    /// Unmapped expandable ranges by address: `BlockComparatorAddress`.
    pub unmapped: BTreeSet<(u64, BlockId)>,
    pub get_free_blocks_call_count: u64,
}

/// A current value and its high-water mark (`Stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stat {
    /// Value now.
    pub current: u64,
    /// Highest value seen.
    pub peak: u64,
}

impl Stat {
    pub(super) fn inc(&mut self, n: u64) {
        self.current += n;
        self.peak = self.peak.max(self.current);
    }
    pub(super) fn dec(&mut self, n: u64) {
        self.current -= n;
    }
}

/// The aggregate statistics of `torch.cuda.memory_stats()` that matter here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// `allocated_bytes.all`: bytes in blocks handed to tensors.
    pub allocated: Stat,
    /// `reserved_bytes.all`: bytes cudaMalloc'd or mapped.
    pub reserved: Stat,
    /// `active_bytes.all`.
    pub active: Stat,
    /// `inactive_split_bytes.all`: free pieces of partly used segments.
    pub inactive_split: Stat,
    /// `segment.all`: live cudaMalloc segments.
    pub segments: Stat,
    /// `num_alloc_retries`: allocations that needed release_cached_blocks.
    pub num_alloc_retries: u64,
    /// `num_ooms`.
    pub num_ooms: u64,
}

/// The simulated allocator of one device.
#[derive(Debug)]
pub struct Allocator {
    pub(super) conf: AllocConf,
    pub(super) device: DeviceMemory,
    pub(super) blocks: Vec<Block>,
    free_ids: Vec<BlockId>,
    pub(super) small: Pool,
    pub(super) large: Pool,
    pub(super) segs: Vec<Option<super::expandable::ExpandableSegment>>,
    next_addr: u64,
    /// Bytes held from the driver (`total_allocated_memory`).
    pub(super) total_allocated_memory: u64,
    pub(super) stats: Stats,
    /// cudaMalloc/cudaFree calls made, when a caller backs segments with real memory.
    pub(super) segment_log: Option<Vec<SegmentEvent>>,
}

/// A call the allocator made to the driver in segment mode, for callers that
/// back the simulated segments with real device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentEvent {
    /// cudaMalloc of a new segment at this simulated address.
    Malloc {
        /// Simulated base address of the segment.
        addr: u64,
        /// Bytes.
        size: u64,
    },
    /// cudaFree of the segment at this simulated address.
    Free {
        /// Simulated base address of the segment.
        addr: u64,
    },
}

impl Allocator {
    /// An empty allocator with these settings on this device.
    pub fn new(conf: AllocConf, device: DeviceMemory) -> Self {
        Allocator {
            conf,
            device,
            blocks: Vec::new(),
            free_ids: Vec::new(),
            small: Pool::default(),
            large: Pool::default(),
            segs: Vec::new(),
            next_addr: 1 << 40,
            total_allocated_memory: 0,
            stats: Stats::default(),
            segment_log: None,
        }
    }

    /// From now on, keep every cudaMalloc and cudaFree for [`Allocator::take_segment_events`].
    pub fn record_segments(&mut self) {
        self.segment_log.get_or_insert_with(Vec::new);
    }

    /// The driver calls made since the last take, in order.
    pub fn take_segment_events(&mut self) -> Vec<SegmentEvent> {
        self.segment_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Simulated address of the block behind an allocation.
    pub fn block_addr(&self, id: BlockId) -> u64 {
        self.blocks[id].addr
    }

    /// The statistics so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The settings in force.
    pub fn conf(&self) -> &AllocConf {
        &self.conf
    }

    /// The device simulated.
    pub fn device(&self) -> &DeviceMemory {
        &self.device
    }

    /// Size of the block behind an allocation.
    pub fn block_size(&self, id: BlockId) -> u64 {
        self.blocks[id].size
    }

    /// Largest cached free block (`cacheInfo`): the biggest request that needs no cudaMalloc.
    pub fn largest_free_block(&self) -> u64 {
        let last = |p: &Pool| p.blocks.iter().next_back().map_or(0, |k| k.0);
        last(&self.small).max(last(&self.large))
    }

    /// `resetPeakStats`.
    pub fn reset_peak_stats(&mut self) {
        for s in [
            &mut self.stats.allocated,
            &mut self.stats.reserved,
            &mut self.stats.active,
            &mut self.stats.inactive_split,
            &mut self.stats.segments,
        ] {
            s.peak = s.current;
        }
    }

    pub(super) fn pool(&mut self, k: PoolKind) -> &mut Pool {
        match k {
            PoolKind::Small => &mut self.small,
            PoolKind::Large => &mut self.large,
        }
    }

    pub(super) fn new_block(&mut self, b: Block) -> BlockId {
        if let Some(id) = self.free_ids.pop() {
            self.blocks[id] = b;
            id
        } else {
            self.blocks.push(b);
            self.blocks.len() - 1
        }
    }

    pub(super) fn drop_block(&mut self, id: BlockId) {
        self.free_ids.push(id);
    }

    /// Virtual addresses for a new segment; 2 MiB aligned like cudaMalloc's.
    pub(super) fn reserve_address(&mut self, size: u64) -> u64 {
        let a = self.next_addr;
        self.next_addr += size.div_ceil(2 << 20) * (2 << 20) + (2 << 20);
        a
    }

    pub(super) fn insert_free(&mut self, id: BlockId) {
        let (k, size, addr) = (
            self.blocks[id].pool,
            self.blocks[id].size,
            self.blocks[id].addr,
        );
        let count = self.pool(k).get_free_blocks_call_count;
        self.blocks[id].gc_count_base = count; // BlockPool::insert_into_blocks
        self.pool(k).blocks.insert((size, addr, id));
    }

    pub(super) fn remove_free(&mut self, id: BlockId) {
        let b = &self.blocks[id];
        let key = (b.size, b.addr, id);
        let k = b.pool;
        self.pool(k).blocks.remove(&key);
    }

    pub(super) fn gc_enabled(&self) -> bool {
        self.device.memory_fraction.is_some() && self.conf.garbage_collection_threshold > 0.0
    }
}
