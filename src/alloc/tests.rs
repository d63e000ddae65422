//! Unit tests of the allocator rules. Every expected value is worked out by
//! hand from the C++ function named in the comment.

use super::rules::MB;
use super::*;

fn allocator(limit_mib: u64, conf: &str) -> Allocator {
    let conf = AllocConf::parse(conf).unwrap();
    Allocator::new(conf, DeviceMemory::new(limit_mib * MB, 0))
}

#[test]
fn small_request_packs_into_a_2mib_segment_and_splits() {
    let mut a = allocator(100, "");
    // round_size(1000) = 1024; get_pool: <= 1 MiB -> small;
    // get_allocation_size -> kSmallBuffer 2 MiB; should_split (small pool):
    // 2097152 - 1024 = 2096128 >= 512 -> split.
    let x = a.malloc(1000).unwrap();
    assert_eq!(a.stats().allocated.current, 1024);
    assert_eq!(a.stats().reserved.current, 2 * MB);
    assert_eq!(a.stats().inactive_split.current, 2_096_128);
    // A second small request is served from the remainder: no new segment.
    let y = a.malloc(4096).unwrap();
    assert_eq!(a.stats().reserved.current, 2 * MB);
    assert_eq!(a.stats().segments.current, 1);
    // free_block merges both back into one unsplit 2 MiB block.
    a.free(x);
    a.free(y);
    assert_eq!(a.stats().allocated.current, 0);
    assert_eq!(a.stats().inactive_split.current, 0);
    assert_eq!(a.largest_free_block(), 2 * MB);
}

#[test]
fn mid_sized_requests_share_a_20mib_segment() {
    let mut a = allocator(100, "");
    // 5 MiB: 1 MiB < size < kMinLargeAlloc -> kLargeBuffer 20 MiB segment;
    // remaining 15 MiB > kSmallSize -> split.
    a.malloc(5 * MB).unwrap();
    a.malloc(5 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 20 * MB);
    assert_eq!(a.stats().allocated.current, 10 * MB);
    assert_eq!(a.stats().inactive_split.current, 10 * MB);
}

#[test]
fn large_requests_round_to_2mib_and_small_remainders_stay_attached() {
    let mut a = allocator(100, "");
    // 13 MiB: segment = 2 MiB multiple = 14 MiB; remaining 1 MiB is not
    // > kSmallSize, so no split: the tensor holds the whole 14 MiB block.
    a.malloc(13 * MB).unwrap();
    assert_eq!(a.stats().allocated.current, 14 * MB);
    // 12 MiB + 1 B: round_size -> 12 MiB + 512; segment 14 MiB; remaining
    // 14 MiB - 12 MiB - 512 = 2096640 > 1 MiB -> split.
    a.malloc(12 * MB + 1).unwrap();
    assert_eq!(a.stats().allocated.current, 14 * MB + 12 * MB + 512);
    assert_eq!(a.stats().inactive_split.current, 2 * MB - 512);
    assert_eq!(a.stats().reserved.current, 28 * MB);
}

#[test]
fn max_split_size_rules_of_get_free_block() {
    let mut a = allocator(1000, "max_split_size_mb:64");
    let big = a.malloc(100 * MB).unwrap();
    a.free(big); // cached oversize block of 100 MiB
    // 50 MiB < max_split and the cached block >= max_split: refused -> new segment.
    let x = a.malloc(50 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 150 * MB);
    // 90 MiB >= max_split: 100 < 90 + 20 (kLargeBuffer margin) -> reused whole.
    let y = a.malloc(90 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 150 * MB);
    assert_eq!(a.block_size(y), 100 * MB);
    a.free(y);
    // 70 MiB: 100 >= 70 + 20 -> refused, new 70 MiB segment.
    a.malloc(70 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 220 * MB);
    a.free(x);
}

#[test]
fn oom_path_releases_cached_segments_and_retries() {
    let mut a = allocator(100, "");
    let x = a.malloc(60 * MB).unwrap();
    a.free(x);
    // 80 MiB: the 60 MiB cached block is too small; cudaMalloc of 80 fails
    // (60 + 80 > 100); max_split unset -> release_available_cached_blocks is
    // false; release_cached_blocks frees the 60 MiB; the retry succeeds.
    a.malloc(80 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 80 * MB);
    assert_eq!(a.stats().num_alloc_retries, 1);
    assert_eq!(a.stats().reserved.peak, 80 * MB);
}

#[test]
fn release_available_frees_one_oversize_block_first() {
    let mut a = allocator(220, "max_split_size_mb:64");
    let x = a.malloc(100 * MB).unwrap();
    let y = a.malloc(100 * MB).unwrap();
    a.free(x);
    a.free(y);
    // 30 MiB: cached 100s are oversize -> not used; cudaMalloc 200+30 > 220
    // fails; release_available_cached_blocks: key = max(30, 64) = 64 MiB,
    // lower_bound finds the first 100 MiB block, releases it; retry succeeds
    // without the full release (num_alloc_retries stays 0).
    a.malloc(30 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 130 * MB);
    assert_eq!(a.stats().num_alloc_retries, 0);
}

#[test]
fn split_fragment_cannot_be_released_and_the_request_fails() {
    let mut a = allocator(100, "");
    let r1 = a.malloc(60 * MB).unwrap();
    a.free(r1);
    // 20 MiB: best fit is the 60 MiB block, split: 40 MiB free remainder.
    let _r2 = a.malloc(20 * MB).unwrap();
    // 50 MiB: no cached block; cudaMalloc 60 + 50 > 100; the 40 MiB piece is
    // split so release_cached_blocks cannot free it -> OOM.
    let oom = a.malloc(50 * MB).unwrap_err();
    assert_eq!(oom.free_bytes, 40 * MB);
    assert_eq!(oom.allocated_bytes, 20 * MB);
    assert_eq!(oom.reserved_bytes, 60 * MB);
    assert_eq!(
        oom.message(),
        "CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total capacity of 100.00 MiB \
         of which 40.00 MiB is free. Including non-PyTorch memory, this process has 60.00 MiB memory \
         in use. Of the allocated memory 20.00 MiB is allocated by PyTorch, and 40.00 MiB is reserved \
         by PyTorch but unallocated. If reserved but unallocated memory is large try setting \
         PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation \
         for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    );
    assert_eq!(a.stats().num_ooms, 1);
}

#[test]
fn expandable_segments_grow_into_the_same_range() {
    let mut a = allocator(100, "expandable_segments:True");
    // Same sequence as above. 60 MiB maps three 20 MiB pages.
    let r1 = a.malloc(60 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 60 * MB);
    a.free(r1);
    let r2 = a.malloc(20 * MB).unwrap(); // splits: 40 MiB free, mapped
    // 50 MiB: find_expandable_block starts at the free 40 MiB block before
    // the unmapped tail; map_block maps 1 page (10 MiB needed -> 20 MiB page)
    // -> 60 + 20 = 80 MiB <= 100; merged 60 MiB block, split 50 + 10.
    let r3 = a.malloc(50 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 80 * MB);
    assert_eq!(a.stats().allocated.current, 70 * MB);
    assert_eq!(
        a.stats().inactive_split.current,
        0,
        "not counted for expandable"
    );
    // Free all and empty the cache: unmap_block gives back all 4 pages and
    // the then fully unmapped segment is released.
    a.free(r2);
    a.free(r3);
    a.empty_cache();
    assert_eq!(a.stats().reserved.current, 0);
}

#[test]
fn expandable_release_keeps_partly_used_pages() {
    let mut a = allocator(100, "expandable_segments:True");
    // 30 MiB: maps ceil(30/20) = 2 pages = 40 MiB; split 30 + 10 free.
    let r1 = a.malloc(30 * MB).unwrap();
    // 25 MiB: free 10 MiB + 1 more page (15 MiB needed) -> 60 MiB mapped;
    // block [30, 60) split into 25 allocated + 5 free.
    let _r2 = a.malloc(25 * MB).unwrap();
    assert_eq!(a.stats().reserved.current, 60 * MB);
    a.free(r1); // [0, 30) free
    a.empty_cache();
    // unmap_block([0,30)): pages ceil(0/20)=0 .. floor(30/20)=1 -> page 0 only;
    // [55, 60): ceil(55/20)=3 .. floor(60/20)=3 -> nothing. 60 - 20 = 40 MiB.
    assert_eq!(a.stats().reserved.current, 40 * MB);
}

#[test]
fn garbage_collection_frees_old_blocks_before_cudamalloc() {
    // 200 MiB card, per-process fraction 0.5 -> 100 MiB allowed; threshold
    // 0.5 -> collect above 50 MiB.
    let run = |conf: &str| {
        let mut dev = DeviceMemory::new(200 * MB, 0);
        dev.memory_fraction = Some(0.5);
        let mut a = Allocator::new(AllocConf::parse(conf).unwrap(), dev);
        let x = a.malloc(30 * MB).unwrap();
        let y = a.malloc(40 * MB).unwrap();
        a.free(x);
        a.free(y);
        a.malloc(50 * MB).unwrap();
        *a.stats()
    };
    // Without GC: 70 cached + 50 > 100 allowed -> release_cached_blocks and retry.
    let plain = run("");
    assert_eq!(plain.num_alloc_retries, 1);
    assert_eq!(plain.reserved.current, 50 * MB);
    // With GC: 70 > 50 MiB threshold; both unsplit cached blocks have age 1
    // (>= the average 1) and are freed before the cudaMalloc: no retry.
    let gc = run("garbage_collection_threshold:0.5");
    assert_eq!(gc.num_alloc_retries, 0);
    assert_eq!(gc.reserved.current, 50 * MB);
}

#[test]
fn what_if_on_seed_004_numbers() {
    const GIB: f64 = (1u64 << 30) as f64;
    let g = |x: f64| (x * GIB) as u64;
    let n = OomNumbers {
        requested: g(4.15),
        total: g(44.53),
        free: g(3.84),
        allocated: g(36.78),
        reserved_unallocated: g(3.56),
        process_in_use: Some(g(40.68)),
    };
    let w = expandable_what_if(&n);
    // usable = 3.84 + 3.56 - 0.039 (two 20 MiB pages) = 7.36 GiB; need = 4.15
    // GiB rounded up to 20 MiB pages (4.16 GiB) -> margin about 3.2 GiB.
    assert!(w.would_fit);
    let margin_gib = w.margin_bytes as f64 / GIB;
    assert!((3.15..3.25).contains(&margin_gib), "{margin_gib}");
    // Outside PyTorch: 40.68 - 36.78 - 3.56 = 0.34 GiB (the CUDA context).
    let ctx = w.non_pytorch_bytes.unwrap() as f64 / GIB;
    assert!((ctx - 0.34).abs() < 0.01, "{ctx}");
    // A request larger than everything free or cached does not fit.
    let w = expandable_what_if(&OomNumbers {
        requested: g(8.0),
        ..n
    });
    assert!(!w.would_fit);
}
