//! The caching allocator on real device memory: `src/alloc`'s implementation
//! of PyTorch's rules decides every block, and each segment it cudaMallocs
//! or cudaFrees is a real driver call here, so NVML sees exactly the reserve
//! the rules produce. A block's device pointer is its segment's real base
//! plus its offset in the simulated segment. Segment mode only: expandable
//! segments would need virtual-memory mapping calls this does not make.

use std::collections::BTreeMap;

use crate::alloc::{AllocConf, Allocator, BlockId, DeviceMemory, SegmentEvent, Stats};

/// Where segments come from: cuMemAlloc/cuMemFree on a GPU, a fake in tests.
pub trait SegmentDriver {
    /// Allocates `size` bytes of device memory; the device pointer.
    fn malloc(&mut self, size: u64) -> Result<u64, String>;
    /// Frees what `malloc` returned.
    fn free(&mut self, ptr: u64) -> Result<(), String>;
}

/// A live allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevBuf {
    id: BlockId,
    /// Device pointer.
    pub ptr: u64,
    /// Bytes requested.
    pub bytes: u64,
}

/// The caching allocator with real segments.
pub struct BackedAllocator<D: SegmentDriver> {
    sim: Allocator,
    driver: D,
    /// Simulated segment base → (device pointer, size).
    segments: BTreeMap<u64, (u64, u64)>,
}

impl<D: SegmentDriver> BackedAllocator<D> {
    /// An allocator with `conf` on `device`, backed by `driver`.
    pub fn new(conf: AllocConf, device: DeviceMemory, driver: D) -> Result<Self, String> {
        if conf.expandable_segments {
            return Err("the device-backed allocator runs in segment mode only".into());
        }
        let mut sim = Allocator::new(conf, device);
        sim.record_segments();
        Ok(BackedAllocator {
            sim,
            driver,
            segments: BTreeMap::new(),
        })
    }

    /// Makes the driver calls the rules just made.
    fn sync(&mut self) -> Result<(), String> {
        for ev in self.sim.take_segment_events() {
            match ev {
                SegmentEvent::Malloc { addr, size } => {
                    let ptr = self.driver.malloc(size).map_err(|e| {
                        format!(
                            "the driver refused a {} segment the allocator's rules granted ({} reserved): {e}",
                            crate::units::fmt_bytes(size),
                            crate::units::fmt_bytes(self.sim.stats().reserved.current)
                        )
                    })?;
                    self.segments.insert(addr, (ptr, size));
                }
                SegmentEvent::Free { addr } => {
                    let (ptr, _) = self
                        .segments
                        .remove(&addr)
                        .ok_or_else(|| format!("no segment at simulated address {addr:#x}"))?;
                    self.driver.free(ptr)?;
                }
            }
        }
        Ok(())
    }

    /// `malloc` as PyTorch's allocator would serve it; the OOM message is PyTorch's.
    pub fn alloc(&mut self, bytes: u64) -> Result<DevBuf, String> {
        let id = self.sim.malloc(bytes).map_err(|oom| oom.message())?;
        self.sync()?;
        let addr = self.sim.block_addr(id);
        let (&base, &(ptr, size)) = self
            .segments
            .range(..=addr)
            .next_back()
            .ok_or_else(|| format!("block at {addr:#x} lies in no segment"))?;
        if addr - base + self.sim.block_size(id) > size {
            return Err(format!("block at {addr:#x} runs past its segment"));
        }
        Ok(DevBuf {
            id,
            ptr: ptr + (addr - base),
            bytes,
        })
    }

    /// Gives a block back to the cache.
    pub fn free(&mut self, buf: DevBuf) -> Result<(), String> {
        self.sim.free(buf.id);
        self.sync()
    }

    /// `empty_cache()`: every whole free segment back to the driver.
    pub fn empty_cache(&mut self) -> Result<(), String> {
        self.sim.empty_cache();
        self.sync()
    }

    /// The allocator's statistics (reserved = bytes held from the driver).
    pub fn stats(&self) -> &Stats {
        self.sim.stats()
    }

    /// Bytes of live segments, as the driver handed them out.
    pub fn segment_bytes(&self) -> u64 {
        self.segments.values().map(|&(_, s)| s).sum()
    }

    /// The driver, e.g. to launch work on the memory.
    pub fn driver_mut(&mut self) -> &mut D {
        &mut self.driver
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out addresses from a counter and checks every free.
    #[derive(Default)]
    struct Fake {
        next: u64,
        live: BTreeMap<u64, u64>,
        calls: u32,
    }

    impl SegmentDriver for Fake {
        fn malloc(&mut self, size: u64) -> Result<u64, String> {
            self.calls += 1;
            let p = 0x7000_0000_0000 + self.next;
            self.next += size + 4096;
            self.live.insert(p, size);
            Ok(p)
        }
        fn free(&mut self, ptr: u64) -> Result<(), String> {
            self.live
                .remove(&ptr)
                .map(|_| ())
                .ok_or("double free".into())
        }
    }

    fn backed() -> BackedAllocator<Fake> {
        let dev = DeviceMemory::new(1 << 30, 0);
        BackedAllocator::new(AllocConf::default(), dev, Fake::default()).unwrap()
    }

    #[test]
    fn blocks_of_one_segment_get_pointers_inside_it() {
        // Two 3 MiB requests: the first cudaMallocs a 20 MiB segment (requests
        // under 10 MiB), the second is split from its remainder, 3 MiB further.
        let mut a = backed();
        let x = a.alloc(3 << 20).unwrap();
        let y = a.alloc(3 << 20).unwrap();
        assert_eq!(a.driver_mut().calls, 1);
        assert_eq!(y.ptr - x.ptr, 3 << 20);
        assert_eq!(a.segment_bytes(), 20 << 20);
        assert_eq!(a.stats().reserved.current, 20 << 20);
    }

    #[test]
    fn the_driver_holds_what_the_rules_reserve_through_empty_cache() {
        let mut a = backed();
        let big = a.alloc(30 << 20).unwrap(); // its own 30 MiB segment
        let small = a.alloc(1000).unwrap(); // a 2 MiB small-pool segment
        assert_eq!(a.driver_mut().live.len(), 2);
        a.free(big).unwrap();
        // Cached, not returned: the driver still holds both segments.
        assert_eq!(
            a.driver_mut().live.values().sum::<u64>(),
            (30 << 20) + (2 << 20)
        );
        a.empty_cache().unwrap();
        assert_eq!(a.driver_mut().live.values().sum::<u64>(), 2 << 20);
        assert_eq!(a.segment_bytes(), a.stats().reserved.current);
        a.free(small).unwrap();
        a.empty_cache().unwrap();
        assert!(a.driver_mut().live.is_empty());
    }

    #[test]
    fn a_driver_refusal_is_an_error_not_a_pointer() {
        struct Full;
        impl SegmentDriver for Full {
            fn malloc(&mut self, _: u64) -> Result<u64, String> {
                Err("CUDA_ERROR_OUT_OF_MEMORY".into())
            }
            fn free(&mut self, _: u64) -> Result<(), String> {
                Ok(())
            }
        }
        let dev = DeviceMemory::new(1 << 30, 0);
        let mut a = BackedAllocator::new(AllocConf::default(), dev, Full).unwrap();
        let e = a.alloc(1 << 20).unwrap_err();
        assert!(e.contains("driver refused a 2.00 MiB segment"), "{e}");
        let conf = AllocConf::parse("expandable_segments:True").unwrap();
        assert!(BackedAllocator::new(conf, dev, Full).is_err());
    }
}
