//! Getting memory from the driver and giving it back: `alloc_block` (one
//! cudaMalloc, or mapping pages of an expandable segment), the OOM path's
//! `release_available_cached_blocks` and `release_cached_blocks`, and
//! `garbage_collect_cached_blocks` (garbage_collection_threshold).

use super::state::{Allocator, Block, BlockId, PoolKind};

impl Allocator {
    /// `alloc_block`: a new segment of `alloc_size` (or, with expandable
    /// segments, `size` bytes of newly mapped pages). None = cudaMalloc failed.
    pub(super) fn alloc_block(
        &mut self,
        kind: PoolKind,
        size: u64,
        alloc_size: u64,
        is_retry: bool,
    ) -> Option<BlockId> {
        if is_retry {
            self.stats.num_alloc_retries += 1;
        }
        if let Some(f) = self.device.memory_fraction {
            let allowed = (f * self.device.total as f64) as u64;
            if self.total_allocated_memory + alloc_size > allowed {
                return None;
            }
        }
        if self.conf.expandable_segments {
            return self.try_allocate_expandable_block(kind, size);
        }
        // cudaMalloc fails when the card has no room left.
        if self.total_allocated_memory + alloc_size > self.device.limit() {
            return None;
        }
        let addr = self.reserve_address(alloc_size);
        if let Some(log) = &mut self.segment_log {
            log.push(super::state::SegmentEvent::Malloc {
                addr,
                size: alloc_size,
            });
        }
        self.total_allocated_memory += alloc_size;
        self.stats.segments.inc(1);
        self.stats.reserved.inc(alloc_size);
        Some(self.new_block(Block {
            addr,
            size: alloc_size,
            requested: 0,
            pool: kind,
            allocated: false,
            mapped: true,
            prev: None,
            next: None,
            seg: None,
            gc_count_base: 0,
        }))
    }

    /// `release_block`: cudaFree one whole cached segment.
    fn release_block(&mut self, id: BlockId) {
        self.remove_free(id);
        let size = self.blocks[id].size;
        let addr = self.blocks[id].addr;
        if let Some(log) = &mut self.segment_log {
            log.push(super::state::SegmentEvent::Free { addr });
        }
        self.total_allocated_memory -= size;
        self.stats.segments.dec(1);
        self.stats.reserved.dec(size);
        self.drop_block(id);
    }

    /// Whether `release_block` may take this free block: a whole cudaMalloc
    /// segment. (PyTorch asserts this; an expandable or split block never
    /// reaches it in practice, and the simulator skips rather than corrupts.)
    fn releasable(&self, id: BlockId) -> bool {
        let b = &self.blocks[id];
        b.seg.is_none() && !b.is_split()
    }

    /// `release_available_cached_blocks`: with max_split_size set, free the
    /// smallest oversize cached block that covers the request, or else the
    /// largest ones until together they do.
    pub(super) fn release_available_cached_blocks(&mut self, kind: PoolKind, size: u64) -> bool {
        let max_split = self.conf.max_split_size;
        if max_split == u64::MAX {
            return false;
        }
        let key = size.max(max_split);
        let first = self
            .pool(kind)
            .blocks
            .range((key, 0, 0)..)
            .next()
            .map(|k| k.2);
        if let Some(id) = first {
            if !self.releasable(id) {
                return false;
            }
            self.release_block(id);
            return true;
        }
        let descending: Vec<BlockId> = self.pool(kind).blocks.iter().rev().map(|k| k.2).collect();
        let mut released = 0;
        for id in descending {
            if released >= key || self.blocks[id].size < max_split || !self.releasable(id) {
                break;
            }
            released += self.blocks[id].size;
            self.release_block(id);
        }
        released >= key
    }

    /// `release_cached_blocks` / `release_blocks`: free every unsplit cached
    /// segment and unmap every fully free page of expandable segments.
    pub(super) fn release_cached_blocks(&mut self) {
        for kind in [PoolKind::Large, PoolKind::Small] {
            let ids: Vec<BlockId> = self.pool(kind).blocks.iter().map(|k| k.2).collect();
            let mut to_unmap = Vec::new();
            for id in ids {
                if self.blocks[id].seg.is_some() {
                    to_unmap.push(id);
                } else if !self.blocks[id].is_split() {
                    self.release_block(id);
                }
            }
            for id in to_unmap {
                self.unmap_block(id);
                if !self.blocks[id].is_split() {
                    self.release_expandable_segment(id);
                }
            }
        }
    }

    /// `emptyCache` (`torch.cuda.empty_cache()`).
    pub fn empty_cache(&mut self) {
        self.release_cached_blocks();
    }

    /// `garbage_collect_cached_blocks`: above threshold x allowed memory,
    /// free unsplit large cached blocks older than the average, repeatedly,
    /// until the excess is reclaimed. Only active with a memory fraction set,
    /// as in PyTorch.
    pub(super) fn garbage_collect_cached_blocks(&mut self) {
        let Some(f) = self.device.memory_fraction else {
            return;
        };
        let allowed = (f * self.device.total as f64) as u64;
        let threshold = (self.conf.garbage_collection_threshold * allowed as f64) as u64;
        if self.total_allocated_memory <= threshold {
            return;
        }
        let target = self.total_allocated_memory - threshold;
        let now = self.large.get_free_blocks_call_count;
        let candidates = |a: &Allocator| -> Vec<(BlockId, u64)> {
            a.large
                .blocks
                .iter()
                .map(|k| k.2)
                .filter(|&id| a.releasable(id))
                .map(|id| (id, now - a.blocks[id].gc_count_base))
                .collect()
        };
        let first = candidates(self);
        let mut total_age: u64 = first.iter().map(|c| c.1).sum();
        let mut count = first.len() as u64;
        let mut reclaimed = 0;
        let mut freed = true;
        while reclaimed < target && freed && count > 0 {
            let age_threshold = total_age as f64 / count as f64;
            freed = false;
            for (id, age) in candidates(self) {
                if age as f64 >= age_threshold {
                    freed = true;
                    reclaimed += self.blocks[id].size;
                    total_age -= age;
                    count -= 1;
                    self.release_block(id);
                }
            }
        }
    }
}
