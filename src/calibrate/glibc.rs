//! glibc's malloc thresholds as the running C library has them, found by
//! allocating rather than recalled: the smallest request it maps on its own
//! (M_MMAP_THRESHOLD's start, 128 KiB in glibc's source) and how far freeing
//! a mapped chunk raises that threshold (DEFAULT_MMAP_THRESHOLD_MAX, 32 MiB
//! on 64-bit). The model's heap terms rest on both: a tensor under the
//! threshold comes from the heap, which keeps and fragments it. It must run
//! in a fresh process (`headroom __malloc-probe`): the threshold only rises,
//! and every free of a mapped chunk in this one has moved it already.

use serde::{Deserialize, Serialize};

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MallocThresholds {
    /// `gnu_get_libc_version()`.
    pub version: String,
    /// Chunk size from which a fresh process's malloc maps a request on its own, bytes.
    pub mmap_threshold: u64,
    /// The largest mapped chunk whose free still raised the threshold, bytes.
    pub mmap_threshold_max: u64,
}

/// Environment variables that change these thresholds for the jobs run
/// from this environment (a set threshold also stops it rising).
pub fn overrides() -> Vec<String> {
    std::env::vars()
        .filter(|(k, v)| {
            (k.starts_with("MALLOC_") && k.ends_with('_'))
                || (k == "GLIBC_TUNABLES" && v.contains("glibc.malloc"))
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

/// Runs the probe in this process (meant to be a fresh one).
///
/// malloc maps a request on its own only when neither its free lists nor
/// the top of the heap can serve it, so each request is made with the top
/// used up first (its size is mallinfo's `keepcost`), and no mapped chunk
/// is freed until the second half, where freeing one is the point.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn probe() -> Option<MallocThresholds> {
    // SAFETY: a NUL-terminated static string from glibc.
    let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) }
        .to_string_lossy()
        .into_owned();
    let keepcost = keepcost()?;
    let (tiny, huge) = (
        Chunk::past_top(64, keepcost)?,
        Chunk::past_top(64 << 20, keepcost)?,
    );
    // The size field's IS_MMAPPED bit must read as glibc's layout says.
    if tiny.mapped() || !huge.mapped() {
        return None;
    }
    drop(tiny);
    let mut kept = vec![huge];
    let (mut lo, mut hi) = (64usize, 64 << 20);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let c = Chunk::past_top(mid, keepcost)?;
        if c.mapped() {
            hi = mid;
            kept.push(c);
        } else {
            lo = mid;
        }
    }
    let threshold = request_to_chunk(hi);
    // A mapped chunk is whole pages: the request with its 8-byte size field
    // to 16 bytes, plus 8, to the page; k pages for a request of k pages
    // less 32. Free one of k pages, then ask for a little less: from the
    // heap, the free raised the threshold to k pages.
    let page = 4096usize;
    let (mut lo, mut hi) = (threshold as usize / page, (1usize << 30) / page);
    let mut raised = false;
    while hi - lo > 1 {
        let k = lo + (hi - lo) / 2;
        let c = Chunk::past_top(k * page - 32, keepcost)?;
        if !c.mapped() {
            return None;
        }
        drop(c);
        let below = Chunk::past_top(k * page - 96, keepcost)?;
        if below.mapped() {
            hi = k;
            kept.push(below);
        } else {
            lo = k;
            raised = true;
        }
    }
    drop(kept);
    Some(MallocThresholds {
        version,
        mmap_threshold: threshold,
        mmap_threshold_max: if raised {
            (lo * page) as u64
        } else {
            threshold
        },
    })
}

/// glibc's mallinfo2 (2.33+), else mallinfo, looked up at run time so that
/// headroom still starts on an older glibc; returns its `keepcost` reader.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keepcost() -> Option<fn() -> usize> {
    // Both structs are ten counters (size_t in mallinfo2, int in mallinfo);
    // the tenth is keepcost.
    #[repr(C)]
    struct Info2([usize; 10]);
    #[repr(C)]
    struct Info1([libc::c_int; 10]);
    fn two() -> usize {
        type F = unsafe extern "C" fn() -> Info2;
        // SAFETY: looked up by name below; the signature is glibc's.
        let f: F = unsafe { std::mem::transmute(lookup(c"mallinfo2")) };
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let info = unsafe { f() };
        info.0[9]
    }
    fn one() -> usize {
        type F = unsafe extern "C" fn() -> Info1;
        // SAFETY: as above, for the older mallinfo.
        let f: F = unsafe { std::mem::transmute(lookup(c"mallinfo")) };
        // SAFETY: mallinfo only reads the allocator's counters.
        let info = unsafe { f() };
        info.0[9] as u32 as usize
    }
    if !lookup(c"mallinfo2").is_null() {
        Some(two)
    } else if !lookup(c"mallinfo").is_null() {
        Some(one)
    } else {
        None
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn lookup(name: &std::ffi::CStr) -> *mut libc::c_void {
    // SAFETY: dlsym on the default namespace with a NUL-terminated name.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// Not glibc: nothing to probe.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn probe() -> Option<MallocThresholds> {
    None
}

/// glibc's request2size: the request plus the size field, to 16 bytes.
fn request_to_chunk(n: usize) -> u64 {
    (n as u64 + 8).div_ceil(16) * 16
}

/// malloc and free called through pointers the optimiser cannot see
/// through: it knows malloc by name and removes an allocation nobody
/// reads (the filler), which is the whole point here.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn malloc(n: usize) -> *mut libc::c_void {
    let f: unsafe extern "C" fn(usize) -> *mut libc::c_void = std::hint::black_box(libc::malloc);
    // SAFETY: the caller frees what it gets.
    unsafe { f(n) }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn free(p: *mut libc::c_void) {
    let f: unsafe extern "C" fn(*mut libc::c_void) = std::hint::black_box(libc::free);
    // SAFETY: `p` came from `malloc` and is freed once.
    unsafe { f(p) }
}

/// One malloc'd block, freed on drop.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
struct Chunk(*mut libc::c_void);

#[cfg(all(target_os = "linux", target_env = "gnu"))]
impl Chunk {
    /// malloc(n) once the top of the heap is used up by a filler (freed
    /// again), so that only the threshold decides whether n is mapped.
    fn past_top(n: usize, keepcost: fn() -> usize) -> Option<Chunk> {
        let top = keepcost();
        // SAFETY: plain allocations, checked for NULL, freed once (Drop).
        let filler = (top > 64).then(|| unsafe { malloc(top - 48) });
        let p = unsafe { malloc(n) };
        if let Some(f) = filler {
            // SAFETY: from malloc above (free(NULL) is allowed).
            unsafe { free(f) };
        }
        (!p.is_null()).then_some(Chunk(p))
    }

    /// glibc keeps the chunk's size in the word before the pointer; bit 1
    /// (IS_MMAPPED) says the chunk was mapped on its own.
    fn mapped(&self) -> bool {
        // SAFETY: glibc's chunk header precedes every pointer malloc returns.
        let size = unsafe { *(self.0 as *const usize).sub(1) };
        size & 2 != 0
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: the pointer came from malloc and is freed once.
        unsafe { free(self.0) }
    }
}
