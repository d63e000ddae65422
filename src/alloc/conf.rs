//! `PYTORCH_CUDA_ALLOC_CONF` as PyTorch parses it: the same tokens, the same
//! defaults and, for bad input, PyTorch's own error sentences.
//!
//! Rules from c10/core/AllocatorConfig.cpp (`AllocatorConfig::parseArgs`,
//! `lexArgs`, `parseMaxSplitSize`, `parseRoundUpPower2Divisions`, ...); the
//! CUDA-only keys from c10/cuda/CUDAAllocatorConfig.cpp.

use super::rules::{K_LARGE_BUFFER, MB};

/// Number of power-of-two intervals `roundup_power2_divisions` distinguishes:
/// [1 MiB, 2 MiB), [2 MiB, 4 MiB), ... up to 64 GiB (`kRoundUpPowerOfTwoIntervals`).
pub const ROUNDUP_INTERVALS: usize = 16;

/// The allocator backend (`backend:native` or `backend:cudaMallocAsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The caching allocator this module simulates.
    Native,
    /// CUDA's own stream-ordered allocator; not simulated.
    CudaMallocAsync,
}

/// Parsed allocator settings; `Default` is PyTorch's behaviour with the variable unset.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AllocConf {
    /// Blocks of at least this size are never split (`max_split_size_mb`; u64::MAX = unlimited).
    pub max_split_size: u64,
    /// How much larger than the request an unsplittable cached block may be (`max_non_split_rounding_mb`).
    pub max_non_split_rounding: u64,
    /// Divisions per power-of-two interval, index 0 = [1 MiB, 2 MiB) (`roundup_power2_divisions`).
    pub roundup_power2_divisions: [u64; ROUNDUP_INTERVALS],
    /// Fraction of the allowed memory above which cached blocks are reclaimed (0 = off).
    pub garbage_collection_threshold: f64,
    /// Grow one segment per pool by mapping pages instead of one cudaMalloc per segment.
    pub expandable_segments: bool,
    /// Which allocator PyTorch would use.
    pub backend: Backend,
    /// `release_lock_on_cudamalloc` (no effect on memory).
    pub release_lock_on_cudamalloc: bool,
    /// `pinned_use_cuda_host_register` (host memory; no effect on the GPU simulation).
    pub pinned_use_cuda_host_register: bool,
    /// `pinned_num_register_threads` (host memory; no effect on the GPU simulation).
    pub pinned_num_register_threads: u64,
    /// `pinned_use_background_threads` (host memory; no effect on the GPU simulation).
    pub pinned_use_background_threads: bool,
}

impl Default for AllocConf {
    // AllocatorConfig::AllocatorConfig: every option off.
    fn default() -> Self {
        AllocConf {
            max_split_size: u64::MAX,
            max_non_split_rounding: K_LARGE_BUFFER,
            roundup_power2_divisions: [0; ROUNDUP_INTERVALS],
            garbage_collection_threshold: 0.0,
            expandable_segments: false,
            backend: Backend::Native,
            release_lock_on_cudamalloc: false,
            pinned_use_cuda_host_register: false,
            pinned_num_register_threads: 1,
            pinned_use_background_threads: false,
        }
    }
}

impl AllocConf {
    /// The same settings with `expandable_segments` switched.
    pub fn with_expandable(&self, on: bool) -> AllocConf {
        AllocConf {
            expandable_segments: on,
            ..self.clone()
        }
    }

    /// Divisions that apply to a request of `size` bytes
    /// (`AllocatorConfig::roundup_power2_divisions(size)`).
    pub fn divisions_for(&self, size: u64) -> u64 {
        let log_size = 63 - size.max(1).leading_zeros() as i64;
        let index = (log_size - 20).clamp(0, ROUNDUP_INTERVALS as i64 - 1);
        self.roundup_power2_divisions[index as usize]
    }

    /// Parses a `PYTORCH_CUDA_ALLOC_CONF` value (`AllocatorConfig::parseArgs`).
    /// Errors carry PyTorch's own sentence.
    pub fn parse(text: &str) -> Result<AllocConf, String> {
        let tokens = lex(text);
        let mut conf = AllocConf::default();
        let mut i = 0;
        while i < tokens.len() {
            let key = tokens[i].as_str();
            i = match key {
                "max_split_size_mb" => {
                    let (v, j) = parse_mb(&tokens, i, "max_split_size_mb")?;
                    conf.max_split_size = v;
                    j
                }
                "max_non_split_rounding_mb" => {
                    let (v, j) = parse_mb(&tokens, i, "max_non_split_rounding_mb")?;
                    conf.max_non_split_rounding = v;
                    j
                }
                "garbage_collection_threshold" => {
                    let j = value_index(&tokens, i, "garbage_collection_threshold")?;
                    let v: f64 = tokens[j].parse().map_err(|_| {
                        format!(
                            "invalid garbage_collection_threshold '{}' (stod)",
                            tokens[j]
                        )
                    })?;
                    if !(v > 0.0 && v < 1.0) {
                        return Err(
                            "garbage_collect_threshold is invalid, set it in (0.0, 1.0)".into()
                        );
                    }
                    conf.garbage_collection_threshold = v;
                    j
                }
                "roundup_power2_divisions" => {
                    parse_roundup(&tokens, i, &mut conf.roundup_power2_divisions)?
                }
                "backend" => {
                    let j = value_index(&tokens, i, "allocator backend")?;
                    conf.backend =
                        match tokens[j].as_str() {
                            "native" => Backend::Native,
                            "cudaMallocAsync" => Backend::CudaMallocAsync,
                            _ => return Err(
                                "Unknown allocator backend, options are native and cudaMallocAsync"
                                    .into(),
                            ),
                        };
                    j
                }
                "expandable_segments" => {
                    let (v, j) = parse_bool(&tokens, i, "expandable_segments")?;
                    conf.expandable_segments = v;
                    j
                }
                "release_lock_on_cudamalloc" | "release_lock_on_hipmalloc" => {
                    let (v, j) = parse_bool(&tokens, i, "release_lock_on_cudamalloc")?;
                    conf.release_lock_on_cudamalloc = v;
                    j
                }
                "pinned_use_cuda_host_register" | "pinned_use_hip_host_register" => {
                    let (v, j) = parse_bool(&tokens, i, "pinned_use_cuda_host_register")?;
                    conf.pinned_use_cuda_host_register = v;
                    j
                }
                "pinned_use_background_threads" => {
                    let (v, j) = parse_bool(&tokens, i, "pinned_use_background_threads")?;
                    conf.pinned_use_background_threads = v;
                    j
                }
                "pinned_num_register_threads" => {
                    let j = value_index(&tokens, i, "pinned_num_register_threads")?;
                    let v = stoi(&tokens[j], "pinned_num_register_threads")?;
                    if !v.is_power_of_two() {
                        return Err("Number of register threads has to be power of 2 ".into());
                    }
                    conf.pinned_num_register_threads = v;
                    j
                }
                // parseArgs' last branch.
                other => return Err(format!("Unrecognized CachingAllocator option: {other}")),
            };
            if i + 1 < tokens.len() {
                consume(&tokens, i + 1, ',')?;
                i += 1;
            }
            i += 1;
        }
        Ok(conf)
    }
}

/// `AllocatorConfig::lexArgs`: `,` `:` `[` `]` are tokens of their own; spaces vanish.
fn lex(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = String::new();
    for c in text.chars() {
        if matches!(c, ',' | ':' | '[' | ']') {
            if !buf.is_empty() {
                out.push(std::mem::take(&mut buf));
            }
            out.push(c.to_string());
        } else if c != ' ' {
            buf.push(c);
        }
    }
    if !buf.is_empty() {
        out.push(buf);
    }
    out
}

/// `AllocatorConfig::consumeToken`.
fn consume(tokens: &[String], i: usize, c: char) -> Result<(), String> {
    if tokens.get(i).map(|t| t.as_str()) == Some(c.encode_utf8(&mut [0; 4])) {
        Ok(())
    } else {
        Err(format!(
            "Error parsing CachingAllocator::AllocatorConfig settings, expected {c}"
        ))
    }
}

/// Checks `key : value` and returns the index of the value.
fn value_index(tokens: &[String], i: usize, what: &str) -> Result<usize, String> {
    consume(tokens, i + 1, ':')?;
    if i + 2 < tokens.len() {
        Ok(i + 2)
    } else {
        Err(format!("Error, expecting {what} value"))
    }
}

/// C++ `stoi` accepts a leading integer; anything else is an error.
fn stoi(text: &str, what: &str) -> Result<u64, String> {
    let digits: String = text.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits
        .parse()
        .map_err(|_| format!("invalid value '{text}' for {what} (stoi)"))
}

fn parse_bool(tokens: &[String], i: usize, key: &str) -> Result<(bool, usize), String> {
    consume(tokens, i + 1, ':')?;
    match tokens.get(i + 2).map(|s| s.as_str()) {
        Some("True") => Ok((true, i + 2)),
        Some("False") => Ok((false, i + 2)),
        _ => Err(format!("Expected a single True/False argument for {key}")),
    }
}

/// `parseMaxSplitSize` / `parseMaxNonSplitRoundingSize`: MiB, at least kLargeBuffer.
fn parse_mb(tokens: &[String], i: usize, key: &str) -> Result<(u64, usize), String> {
    let j = value_index(tokens, i, key)?;
    let v = stoi(&tokens[j], key)?;
    let min = K_LARGE_BUFFER / MB;
    if v < min {
        return Err(format!(
            "CachingAllocator option {key} too small, must be >= {min}"
        ));
    }
    Ok((v.min(u64::MAX / MB) * MB, j))
}

/// `parseRoundUpPower2Divisions`: a single value for every interval, or the
/// list form `[256:1,512:2,>:8]` keyed by the interval's lower bound in MiB.
fn parse_roundup(
    tokens: &[String],
    i: usize,
    table: &mut [u64; ROUNDUP_INTERVALS],
) -> Result<usize, String> {
    let mut i = value_index(tokens, i, "roundup_power2_divisions")?;
    if tokens[i] != "[" {
        let v = stoi(&tokens[i], "roundup_power2_divisions")?;
        if !v.is_power_of_two() {
            return Err("For roundups, the divisons has to be power of 2 ".into());
        }
        table.fill(v);
        return Ok(i);
    }
    let mut first = true;
    let mut last_index = 0usize;
    loop {
        i += 1;
        match tokens.get(i).map(|s| s.as_str()) {
            None => return Err("Error parsing roundup_power2_divisions value".into()),
            Some("]") => return Ok(i),
            Some(_) => {}
        }
        let key = tokens[i].clone();
        consume(tokens, i + 1, ':')?;
        i += 2;
        let val = match tokens.get(i) {
            Some(t) => stoi(t, "roundup_power2_divisions")?,
            None => return Err("Error parsing roundup_power2_divisions value".into()),
        };
        if val != 0 && !val.is_power_of_two() {
            return Err(
                "For roundups, the divisons has to be power of 2 or 0 to disable roundup ".into(),
            );
        }
        if key == ">" {
            table[last_index..].fill(val);
        } else {
            let bound = stoi(&key, "roundup_power2_divisions")?;
            if !bound.is_power_of_two() {
                return Err("For roundups, the intervals have to be power of 2 ".into());
            }
            let index = (63 - bound.leading_zeros() as usize).min(ROUNDUP_INTERVALS - 1);
            if first {
                table[..index].fill(val);
                first = false;
            }
            table[index] = val;
            last_index = index;
        }
        if tokens.get(i + 1).map(|s| s.as_str()) != Some("]") {
            consume(tokens, i + 1, ',')?;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_an_unset_variable() {
        let c = AllocConf::parse("").unwrap();
        assert_eq!(c, AllocConf::default());
        assert_eq!(c.max_split_size, u64::MAX);
        assert_eq!(c.max_non_split_rounding, 20 << 20);
    }

    #[test]
    fn keys_values_and_spaces() {
        let c = AllocConf::parse(
            "expandable_segments:True, max_split_size_mb:128,garbage_collection_threshold:0.6",
        )
        .unwrap();
        assert!(c.expandable_segments);
        // 128 MiB = 128 * 1048576 = 134217728
        assert_eq!(c.max_split_size, 134_217_728);
        assert_eq!(c.garbage_collection_threshold, 0.6);
    }

    #[test]
    fn single_roundup_value_fills_every_interval() {
        let c = AllocConf::parse("roundup_power2_divisions:4").unwrap();
        assert_eq!(c.roundup_power2_divisions, [4; 16]);
    }

    #[test]
    fn list_roundup_follows_parse_round_up_power2_divisions() {
        // [256:1,512:2,1024:4,>:8]: 256 -> index log2(256)=8; the first entry
        // also fills 0..8 with 1; 512 -> index 9 = 2; 1024 -> index 10 = 4;
        // '>' fills index 10 (the last one set) .. 15 with 8.
        let c = AllocConf::parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]").unwrap();
        let mut want = [1u64; 16];
        want[9] = 2;
        for w in want.iter_mut().skip(10) {
            *w = 8;
        }
        assert_eq!(c.roundup_power2_divisions, want);
        // A 300 MiB request: log2(300 MiB) = 28 -> index 28 - 20 = 8 -> 1 division.
        assert_eq!(c.divisions_for(300 << 20), 1);
        // 5 GiB: log2 = 32 -> index 12 -> 8.
        assert_eq!(c.divisions_for(5 << 30), 8);
    }

    #[test]
    fn pytorch_error_sentences() {
        assert_eq!(
            AllocConf::parse("expandable_segment:True").unwrap_err(),
            "Unrecognized CachingAllocator option: expandable_segment"
        );
        assert_eq!(
            AllocConf::parse("max_split_size_mb:10").unwrap_err(),
            "CachingAllocator option max_split_size_mb too small, must be >= 20"
        );
        assert_eq!(
            AllocConf::parse("expandable_segments:true").unwrap_err(),
            "Expected a single True/False argument for expandable_segments"
        );
        assert_eq!(
            AllocConf::parse("garbage_collection_threshold:1.5").unwrap_err(),
            "garbage_collect_threshold is invalid, set it in (0.0, 1.0)"
        );
        assert!(
            AllocConf::parse("roundup_power2_divisions:3")
                .unwrap_err()
                .contains("power of 2")
        );
        assert!(
            AllocConf::parse("max_split_size_mb,64")
                .unwrap_err()
                .contains("expected :")
        );
        assert!(
            AllocConf::parse("max_split_size_mb:64;x").is_ok(),
            "stoi reads the leading digits"
        );
    }
}
