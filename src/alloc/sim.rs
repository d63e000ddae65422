//! The simulated `DeviceCachingAllocator`: blocks, the two pools, `malloc`
//! and `free` with splitting and merging, and the statistics PyTorch keeps.
//!
//! One stream only (the default stream): PyTorch keys every pool by stream
//! first, so with one stream the order (stream, size, address) reduces to
//! (size, address). No CUDA events, graphs or private pools. Addresses of
//! cudaMalloc'd segments are handed out in increasing order (real cudaMalloc
//! addresses only matter for tie-breaks between free blocks of equal size).
//! The OOM path and expandable segments live in `release.rs` and
//! `expandable.rs` as further `impl Allocator` blocks.

use std::collections::BTreeSet;

use super::conf::AllocConf;
use super::rules::{K_MIN_BLOCK_SIZE, K_SMALL_SIZE, allocation_size, round_size};

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
        }
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

    /// `DeviceCachingAllocator::malloc`: Ok(block) or the OOM PyTorch would raise.
    pub fn malloc(&mut self, orig_size: u64) -> Result<BlockId, Box<super::oom::OomState>> {
        let size = round_size(orig_size, &self.conf);
        let kind = if size <= K_SMALL_SIZE {
            PoolKind::Small
        } else {
            PoolKind::Large
        }; // get_pool
        let alloc_size = allocation_size(size);
        let mut found = self.get_free_block(kind, size);
        if found.is_none() {
            if self.gc_enabled() {
                self.garbage_collect_cached_blocks();
            }
            found = self.alloc_block(kind, size, alloc_size, false);
            if found.is_none() && self.release_available_cached_blocks(kind, size) {
                found = self.alloc_block(kind, size, alloc_size, false);
            }
            if found.is_none() {
                self.release_cached_blocks();
                found = self.alloc_block(kind, size, alloc_size, true);
            }
        }
        let Some(id) = found else {
            self.stats.num_ooms += 1;
            return Err(Box::new(self.oom_state(orig_size, alloc_size)));
        };
        let split = self.should_split(id, size);
        Ok(self.alloc_found_block(id, size, orig_size, split))
    }

    /// `should_split`: small pool (or expandable segments) keeps any 512 B
    /// remainder; the large pool only a remainder over 1 MiB, below max_split_size.
    fn should_split(&self, id: BlockId, size: u64) -> bool {
        let b = &self.blocks[id];
        let remaining = b.size - size;
        if b.pool == PoolKind::Small || self.conf.expandable_segments {
            remaining >= K_MIN_BLOCK_SIZE
        } else {
            size < self.conf.max_split_size && remaining > K_SMALL_SIZE
        }
    }

    /// `get_free_block`: best fit by (size, address), with the expandable
    /// look-ahead and the max_split_size rules.
    fn get_free_block(&mut self, kind: PoolKind, size: u64) -> Option<BlockId> {
        if self.gc_enabled() {
            self.pool(kind).get_free_blocks_call_count += 1;
        }
        let pool = match kind {
            PoolKind::Small => &self.small,
            PoolKind::Large => &self.large,
        };
        let blocks = &self.blocks;
        let mut it = pool.blocks.range((size, 0, 0)..).map(|k| k.2).peekable();
        let mut cur = it.next()?;
        if blocks[cur].seg.is_some() {
            if self.conf.expandable_segments {
                // Best fit counts the unmapped space an expandable block can grow into.
                let expandable_size = |id: BlockId| {
                    let b = &blocks[id];
                    b.size
                        + b.next
                            .filter(|&n| !blocks[n].mapped)
                            .map_or(0, |n| blocks[n].size)
                };
                while blocks[cur].seg.is_some() {
                    match it.peek() {
                        Some(&n) if expandable_size(n) < expandable_size(cur) => cur = n,
                        _ => break,
                    }
                    it.next();
                }
            } else {
                cur = it.find(|&n| blocks[n].seg.is_none())?;
            }
        }
        let found = blocks[cur].size;
        let max_split = self.conf.max_split_size;
        // Do not return an oversized block for a large request.
        if size < max_split && found >= max_split {
            return None;
        }
        // Allow oversized block size to be rounded up but within a limit.
        if size >= max_split && found >= size + self.conf.max_non_split_rounding {
            return None;
        }
        self.remove_free(cur);
        Some(cur)
    }

    /// `alloc_found_block`: split off the remainder if asked and mark the block allocated.
    fn alloc_found_block(&mut self, id: BlockId, size: u64, orig: u64, split: bool) -> BlockId {
        let already_split = self.blocks[id].is_split();
        let expandable = self.blocks[id].seg.is_some();
        let mut block = id;
        if split {
            let rem = id;
            let r = self.blocks[rem].clone();
            block = self.new_block(Block {
                size,
                requested: 0,
                allocated: false,
                next: Some(rem),
                ..r
            });
            if let Some(p) = r.prev {
                self.blocks[p].next = Some(block);
            }
            let rb = &mut self.blocks[rem];
            rb.prev = Some(block);
            rb.addr += size;
            rb.size -= size;
            let rem_size = rb.size;
            self.insert_free(rem);
            if already_split && !expandable {
                self.stats.inactive_split.dec(size);
            } else if !expandable {
                self.stats.inactive_split.inc(rem_size);
            }
        } else if already_split && !expandable {
            self.stats.inactive_split.dec(self.blocks[id].size);
        }
        let b = &mut self.blocks[block];
        b.allocated = true;
        b.requested = orig;
        let sz = b.size;
        self.stats.allocated.inc(sz);
        self.stats.active.inc(sz);
        block
    }

    /// `free` + `free_block`: return the block to its pool, merging free
    /// neighbours, and keep `inactive_split` as PyTorch does (not for
    /// expandable segments, whose free pages can always be unmapped).
    pub fn free(&mut self, id: BlockId) {
        let original = self.blocks[id].size;
        self.blocks[id].allocated = false;
        self.stats.allocated.dec(original);
        let mut net_size: i64 = 0;
        for cand in [self.blocks[id].prev, self.blocks[id].next] {
            net_size -= self.try_merge_blocks(id, cand) as i64;
        }
        self.insert_free(id);
        if self.blocks[id].is_split() {
            net_size += self.blocks[id].size as i64;
        }
        if self.blocks[id].seg.is_none() {
            if net_size > 0 {
                self.stats.inactive_split.inc(net_size as u64);
            } else {
                self.stats.inactive_split.dec((-net_size) as u64);
            }
        }
        self.stats.active.dec(original);
    }

    /// `try_merge_blocks`: absorb `src` into `dst` when both are free and
    /// equally mapped; returns the bytes subsumed.
    pub(super) fn try_merge_blocks(&mut self, dst: BlockId, src: Option<BlockId>) -> u64 {
        let Some(src) = src else { return 0 };
        let s = self.blocks[src].clone();
        if s.allocated || s.mapped != self.blocks[dst].mapped {
            return 0;
        }
        if s.mapped {
            self.remove_free(src);
        } else {
            self.pool(s.pool).unmapped.remove(&(s.addr, src));
        }
        if self.blocks[dst].prev == Some(src) {
            self.blocks[dst].addr = s.addr;
            self.blocks[dst].prev = s.prev;
            if let Some(p) = s.prev {
                self.blocks[p].next = Some(dst);
            }
        } else {
            self.blocks[dst].next = s.next;
            if let Some(n) = s.next {
                self.blocks[n].prev = Some(dst);
            }
        }
        self.blocks[dst].size += s.size;
        self.drop_block(src);
        s.size
    }
}
