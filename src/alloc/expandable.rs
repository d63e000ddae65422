//! Expandable segments (`expandable_segments:True`): one virtual range per
//! pool that grows by mapping physical pages (2 MiB for the small pool,
//! 20 MiB for the large one) and gives fully free pages back at release.
//!
//! Mirrors `ExpandableSegment::map/unmap`, `find_expandable_block`,
//! `map_block`, `try_allocate_expandable_block`, `unmap_block` and
//! `release_expandable_segment` of c10/cuda/CUDACachingAllocator.cpp.

use super::rules::{K_LARGE_BUFFER, K_SMALL_BUFFER};
use super::state::{Allocator, Block, BlockId, PoolKind};

/// One reserved virtual range and which of its pages are backed.
#[derive(Debug, Clone)]
pub struct ExpandableSegment {
    base: u64,
    page: u64,
    max_pages: u64,
    mapped: Vec<bool>,
}

impl ExpandableSegment {
    fn size(&self) -> u64 {
        self.page * self.max_pages
    }
}

impl Allocator {
    /// `find_expandable_block`: the lowest address in an existing segment with
    /// room for `size` (free then unmapped space), or a new segment spanning
    /// 1 1/8 of the card's memory.
    fn find_expandable_block(&mut self, kind: PoolKind, size: u64) -> BlockId {
        let allocatable =
            |a: &Allocator, b: Option<BlockId>| b.is_some_and(|b| !a.blocks[b].allocated);
        let unmapped: Vec<BlockId> = self.pool(kind).unmapped.iter().map(|k| k.1).collect();
        for c in unmapped {
            let mut c = c;
            if allocatable(self, self.blocks[c].prev) {
                c = self.blocks[c].prev.unwrap_or(c);
            }
            // has_available_address_space
            let (mut bytes, mut b) = (0, Some(c));
            while bytes < size && allocatable(self, b) {
                let id = b.unwrap_or(c);
                bytes += self.blocks[id].size;
                b = self.blocks[id].next;
            }
            if bytes >= size {
                return c;
            }
        }
        let page = if kind == PoolKind::Small {
            K_SMALL_BUFFER
        } else {
            K_LARGE_BUFFER
        };
        let total = self.device.total;
        let max_pages = (total + total / 8).div_ceil(page);
        let base = self.reserve_address(page * max_pages);
        self.segs.push(Some(ExpandableSegment {
            base,
            page,
            max_pages,
            mapped: Vec::new(),
        }));
        let seg = self.segs.len() - 1;
        let id = self.new_block(Block {
            addr: base,
            size: page * max_pages,
            requested: 0,
            pool: kind,
            allocated: false,
            mapped: false,
            prev: None,
            next: None,
            seg: Some(seg),
            gc_count_base: 0,
        });
        self.pool(kind).unmapped.insert((base, id));
        id
    }

    /// `ExpandableSegment::map`: back the pages covering [ptr, ptr+size);
    /// 0 when the driver is out of physical memory (`cuMemCreate` fails).
    fn map_pages(&mut self, seg: usize, ptr: u64, size: u64) -> u64 {
        let limit = self.device.limit();
        let used = self.total_allocated_memory;
        let Some(s) = self.segs[seg].as_mut() else {
            return 0;
        };
        let begin = (ptr - s.base) / s.page;
        let end = (ptr + size - s.base).div_ceil(s.page);
        let bytes = (end - begin) * s.page;
        // (More than 2^26 pages, over 1 PiB, is no GPU: refuse like the driver.)
        if begin == end || used + bytes > limit || end > 1 << 26 {
            return 0;
        }
        if s.mapped.len() < end as usize {
            s.mapped.resize(end as usize, false);
        }
        s.mapped[begin as usize..end as usize].fill(true);
        bytes
    }

    /// `map_block`: map `size` bytes at the start of the unmapped block `id`,
    /// split off the rest, merge with free neighbours and count it reserved.
    fn map_block(&mut self, id: BlockId, size: u64) -> bool {
        let Some(seg) = self.blocks[id].seg else {
            return false;
        };
        let addr = self.blocks[id].addr;
        let mapped = self.map_pages(seg, addr, size);
        if mapped == 0 {
            return false;
        }
        let kind = self.blocks[id].pool;
        self.pool(kind).unmapped.remove(&(addr, id));
        self.blocks[id].mapped = true;
        if mapped < self.blocks[id].size {
            let b = self.blocks[id].clone();
            let rest = self.new_block(Block {
                addr: addr + mapped,
                size: b.size - mapped,
                mapped: false,
                prev: Some(id),
                ..b
            });
            if let Some(n) = b.next {
                self.blocks[n].prev = Some(rest);
            }
            self.blocks[id].next = Some(rest);
            self.blocks[id].size = mapped;
            self.pool(kind).unmapped.insert((addr + mapped, rest));
        }
        let (p, n) = (self.blocks[id].prev, self.blocks[id].next);
        self.try_merge_blocks(id, p);
        self.try_merge_blocks(id, n);
        self.insert_free(id);
        self.total_allocated_memory += mapped;
        self.stats.reserved.inc(mapped);
        true
    }

    /// `try_allocate_expandable_block`: map pages until a free run of `size` exists.
    pub(super) fn try_allocate_expandable_block(
        &mut self,
        kind: PoolKind,
        size: u64,
    ) -> Option<BlockId> {
        let mut c = self.find_expandable_block(kind, size);
        if !self.blocks[c].mapped && !self.map_block(c, self.blocks[c].size.min(size)) {
            return None;
        }
        while self.blocks[c].size < size {
            let remaining = size - self.blocks[c].size;
            let next = self.blocks[c].next?;
            if !self.map_block(next, remaining.min(self.blocks[next].size)) {
                return None;
            }
            c = next;
        }
        self.remove_free(c);
        Some(c)
    }

    /// `unmap_block`: give back the fully free pages inside free block `id`.
    pub(super) fn unmap_block(&mut self, id: BlockId) {
        let b = self.blocks[id].clone();
        let Some(seg) = b.seg else { return };
        let Some(s) = self.segs[seg].as_mut() else {
            return;
        };
        let begin = (b.addr - s.base).div_ceil(s.page);
        let end = (b.addr + b.size - s.base) / s.page;
        if begin >= end {
            return;
        }
        s.mapped[begin as usize..end as usize].fill(false);
        while s.mapped.last() == Some(&false) {
            s.mapped.pop(); // trimHandles
        }
        let (uptr, usize_) = (s.base + begin * s.page, (end - begin) * s.page);
        self.remove_free(id);
        let before = uptr - b.addr;
        if before > 0 {
            let bf = self.new_block(Block {
                size: before,
                next: Some(id),
                ..b.clone()
            });
            if let Some(p) = b.prev {
                self.blocks[p].next = Some(bf);
            }
            self.blocks[id].prev = Some(bf);
            self.insert_free(bf);
        }
        let after = b.size - before - usize_;
        if after > 0 {
            let af = self.new_block(Block {
                addr: uptr + usize_,
                size: after,
                prev: Some(id),
                ..b.clone()
            });
            if let Some(n) = b.next {
                self.blocks[n].prev = Some(af);
            }
            self.blocks[id].next = Some(af);
            self.insert_free(af);
        }
        let blk = &mut self.blocks[id];
        blk.addr = uptr;
        blk.size = usize_;
        blk.mapped = false;
        let (p, n) = (blk.prev, blk.next);
        self.try_merge_blocks(id, p);
        self.try_merge_blocks(id, n);
        let addr = self.blocks[id].addr;
        self.pool(b.pool).unmapped.insert((addr, id));
        self.total_allocated_memory -= usize_;
        self.stats.reserved.dec(usize_);
    }

    /// `release_expandable_segment`: drop a segment that is entirely unmapped.
    pub(super) fn release_expandable_segment(&mut self, id: BlockId) {
        let b = &self.blocks[id];
        let (Some(seg), addr, kind) = (b.seg, b.addr, b.pool) else {
            return;
        };
        if self.segs[seg]
            .as_ref()
            .is_some_and(|s| s.size() == b.size && !b.mapped)
        {
            self.segs[seg] = None;
            self.pool(kind).unmapped.remove(&(addr, id));
            self.drop_block(id);
        }
    }
}
