//! The mutator: a seed input changed by a few random edits — bit flips,
//! byte runs inserted, deleted or duplicated, a token of the target's
//! dictionary or a number at the edges spliced in, a piece of another seed
//! spliced — with a small xorshift generator so runs are reproducible.

/// xorshift64*: fast, seedable, good enough to pick edits.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced: xorshift has a zero fixpoint).
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.bits() % n as u64) as usize
        }
    }
}

/// Inputs grow no larger than this: big enough for every structure the
/// parsers know, small enough for millions of runs.
pub const MAX_INPUT: usize = 1 << 16;

/// Applies 1 to 8 random edits to `buf`.
pub fn mutate(buf: &mut Vec<u8>, rng: &mut Rng, dict: &[&[u8]], seeds: &[Vec<u8>]) {
    for _ in 0..1 + rng.below(8) {
        let len = buf.len();
        let at = rng.below(len + 1);
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                buf[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                buf[i] = rng.bits() as u8;
            }
            2 => {
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.bits() as u8).collect();
                buf.splice(at..at, bytes);
            }
            3 if len > 0 => {
                let end = (at + 1 + rng.below(64)).min(len);
                buf.drain(at.min(end)..end);
            }
            4 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(256)).min(len);
                let piece = buf[start..end].to_vec();
                for _ in 0..1 + rng.below(4) {
                    buf.splice(at..at, piece.iter().copied());
                }
            }
            5 | 6 if !dict.is_empty() => {
                let t = dict[rng.below(dict.len())];
                buf.splice(at..at, t.iter().copied());
            }
            7 => {
                let nums = super::targets::numbers();
                buf.splice(at..at, nums[rng.below(nums.len())].iter().copied());
            }
            _ if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())];
                let start = rng.below(other.len());
                let end = (start + rng.below(512)).min(other.len());
                buf.splice(at..at, other[start..end].iter().copied());
            }
            _ => {}
        }
    }
    buf.truncate(MAX_INPUT);
}
