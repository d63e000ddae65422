//! The allocator's size rules: constants, request rounding, segment sizes and
//! PyTorch's `format_size`. Each function names the C++ function it mirrors
//! in c10/cuda/CUDACachingAllocator.cpp.

use super::conf::AllocConf;

/// One mebibyte.
pub const MB: u64 = 1 << 20;
/// All sizes are rounded to at least 512 bytes (`kMinBlockSize`).
pub const K_MIN_BLOCK_SIZE: u64 = 512;
/// Largest "small" allocation (`kSmallSize`).
pub const K_SMALL_SIZE: u64 = MB;
/// Small allocations are packed in 2 MiB segments (`kSmallBuffer`).
pub const K_SMALL_BUFFER: u64 = 2 * MB;
/// Requests between 1 and 10 MiB use a 20 MiB segment (`kMinLargeAlloc`).
pub const K_MIN_LARGE_ALLOC: u64 = 10 * MB;
/// Larger requests are rounded to 2 MiB (`kRoundLarge`).
pub const K_ROUND_LARGE: u64 = 2 * MB;
/// "Large" allocations may be packed in 20 MiB blocks (`kLargeBuffer`).
pub const K_LARGE_BUFFER: u64 = 20 * MB;

/// `roundup_power2_next_division`: the next of `divisions` equal steps
/// between the powers of two around `size`.
pub fn roundup_power2_next_division(size: u64, divisions: u64) -> u64 {
    if size.is_power_of_two() {
        return size;
    }
    let power2_floor = 1u64 << (63 - size.leading_zeros());
    let step = power2_floor >> (63 - divisions.leading_zeros());
    if step == 0 {
        return power2_floor << 1;
    }
    let floor = size & !(step - 1);
    if floor == size { size } else { floor + step }
}

/// `DeviceCachingAllocator::round_size`: what a request really costs.
pub fn round_size(size: u64, conf: &AllocConf) -> u64 {
    if size < K_MIN_BLOCK_SIZE {
        return K_MIN_BLOCK_SIZE;
    }
    let divisions = conf.divisions_for(size);
    if divisions > 1 && size > K_MIN_BLOCK_SIZE * divisions {
        roundup_power2_next_division(size, divisions)
    } else {
        K_MIN_BLOCK_SIZE * size.div_ceil(K_MIN_BLOCK_SIZE)
    }
}

/// `get_allocation_size`: the size of the segment cudaMalloc'd for a rounded request.
pub fn allocation_size(size: u64) -> u64 {
    if size <= K_SMALL_SIZE {
        K_SMALL_BUFFER
    } else if size < K_MIN_LARGE_ALLOC {
        K_LARGE_BUFFER
    } else {
        K_ROUND_LARGE * size.div_ceil(K_ROUND_LARGE)
    }
}

/// `format_size` (c10/cuda/CUDACachingAllocator.cpp): two decimals, binary
/// units, with the boundaries inclusive as PyTorch has them.
pub fn format_size(size: u64) -> String {
    if size <= 1024 {
        format!("{size} bytes")
    } else if size <= MB {
        format!("{:.2} KiB", size as f64 / 1024.0)
    } else if size <= 1 << 30 {
        format!("{:.2} MiB", size as f64 / MB as f64)
    } else {
        format!("{:.2} GiB", size as f64 / (1u64 << 30) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_size_uses_512_byte_steps() {
        let c = AllocConf::default();
        assert_eq!(round_size(1, &c), 512); // below kMinBlockSize
        assert_eq!(round_size(512, &c), 512);
        assert_eq!(round_size(513, &c), 1024); // ceil(513/512)=2 -> 1024
        assert_eq!(round_size(1_000_000, &c), 1_000_448); // ceil(1e6/512)=1954 -> 1954*512
    }

    #[test]
    fn round_size_with_power2_divisions() {
        let c = AllocConf::parse("roundup_power2_divisions:4").unwrap();
        // The comment in round_size's helper: 1200 with 4 divisions between 1024
        // and 2048 gives 1280 -- but 1200 <= 512*4, so round_size keeps 512 steps: 1536.
        assert_eq!(roundup_power2_next_division(1200, 4), 1280);
        assert_eq!(round_size(1200, &c), 1536);
        // 5 MiB + 1: floor 4 MiB, step 1 MiB -> 6 MiB.
        assert_eq!(round_size(5 * MB + 1, &c), 6 * MB);
        // 600 MiB: floor 512 MiB, step 128 MiB -> 640 MiB.
        assert_eq!(round_size(600 * MB, &c), 640 * MB);
        // A power of two stays.
        assert_eq!(round_size(256 * MB, &c), 256 * MB);
    }

    #[test]
    fn segment_sizes_follow_get_allocation_size() {
        assert_eq!(allocation_size(512), 2 * MB);
        assert_eq!(allocation_size(MB), 2 * MB); // kSmallSize is still small
        assert_eq!(allocation_size(MB + 512), 20 * MB);
        assert_eq!(allocation_size(10 * MB - 512), 20 * MB);
        assert_eq!(allocation_size(10 * MB), 10 * MB); // not < kMinLargeAlloc
        assert_eq!(allocation_size(11 * MB), 12 * MB); // 2 MiB multiple
    }

    #[test]
    fn format_size_matches_pytorch() {
        assert_eq!(format_size(1024), "1024 bytes");
        assert_eq!(format_size(1536), "1.50 KiB");
        assert_eq!(format_size(MB), "1024.00 KiB");
        assert_eq!(format_size(20 * MB), "20.00 MiB");
        assert_eq!(format_size(1 << 30), "1024.00 MiB");
        // 4.15 GiB as in seeds/004: 4456448000 / 2^30 = 4.1504 -> "4.15 GiB"
        assert_eq!(format_size(4_456_448_000), "4.15 GiB");
    }
}
