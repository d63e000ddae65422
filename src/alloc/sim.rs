//! The simulated `DeviceCachingAllocator`'s request path: `malloc` (round,
//! pick the pool, best-fit search, else a new segment through the OOM path,
//! then split) and `free` (merge with free neighbours), with the statistics
//! PyTorch keeps. The state it works on is in `state.rs`.

use super::rules::{K_MIN_BLOCK_SIZE, K_SMALL_SIZE, allocation_size, round_size};
use super::state::{Allocator, Block, BlockId, PoolKind};

impl Allocator {
    /// `DeviceCachingAllocator::malloc`: Ok(block) or the OOM PyTorch would raise.
    pub fn malloc(&mut self, orig_size: u64) -> Result<BlockId, Box<super::oom::OomState>> {
        // Nothing above 1 EiB exists; capping keeps the size arithmetic in range.
        let orig_size = orig_size.min(crate::units::MAX_BYTES);
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
        if !self.blocks.get(id).is_some_and(|b| b.allocated) {
            return; // not a live allocation: nothing to give back
        }
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
