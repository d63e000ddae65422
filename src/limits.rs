//! Every bound headroom puts on what it reads, in one place. Input comes
//! from anywhere (a pasted snapshot, a log, a calibration file copied
//! between machines), so each reader checks the limit that applies before
//! it does work proportional to the input, and a file past a limit gets one
//! line naming that limit ([`exceeded`]) and exit status 2 — never a panic,
//! an abort or gigabytes of memory. The figures are generous: real inputs
//! stay one to three orders of magnitude below them.

use crate::error::Error;

/// The largest file read whole (snapshot pickle, job spec, sbatch script,
/// calibration file). Logs are streamed and have no size limit.
pub const MAX_FILE_BYTES: u64 = 128 << 20;

/// The largest text file (job spec, sbatch script, calibration file): real
/// ones are a few KiB.
pub const MAX_TEXT_FILE_BYTES: u64 = 16 << 20;

/// The largest object a snapshot pickle may build, after memo references
/// (one stored object referenced many times) are counted at every use.
/// Estimated as [`PICKLE_NODE_BYTES`] per object plus its payload.
pub const MAX_PICKLE_EXPANSION_BYTES: u64 = 512 << 20;

/// What one decoded pickle object costs before its payload (the value enum,
/// its slot in the parent, allocator overhead).
pub const PICKLE_NODE_BYTES: u64 = 64;

/// The deepest nesting of a pickle (a real snapshot nests 5 levels).
pub const MAX_PICKLE_DEPTH: usize = 64;

/// The most flow collections (`[`, `{`) a YAML file may open. Their
/// nesting is what costs (the YAML parser is quadratic in it: 100,000
/// levels take a minute); counting every opener bounds the nesting without
/// having to follow quoting, so no quoted `]` can hide a level. A job spec
/// or calibration file opens fewer than ten.
pub const MAX_YAML_FLOW_COLLECTIONS: usize = 1024;

/// The most events YAML aliases may replay in one file (the parser's
/// alias budget, src/yaml.rs). A job spec has no aliases; one that shares a
/// loader block between two places replays a few dozen events, while an
/// alias bomb replays millions.
pub const MAX_YAML_ALIAS_REPLAY_EVENTS: usize = 100_000;

/// The longest value an sbatch variable may take after substitution
/// (`A=$A$A` repeated doubles it each line).
pub const MAX_VARIABLE_BYTES: usize = 64 << 10;

/// The largest CUDA device index a snapshot may name (torch's device
/// indices are `int8`; no node has more than a few dozen GPUs).
pub const MAX_DEVICE_INDEX: u64 = 127;

/// The largest amount of memory any coefficient or size may stand for: no
/// machine has a pebibyte of RAM, and below it no sum or product of a
/// few of them can wrap a u64.
pub const MAX_MEMORY_BYTES: u64 = 1 << 50;

/// The longest value shown in a table or message; longer ones are cut
/// with an ellipsis.
pub const MAX_SHOWN_CHARS: usize = 120;

/// The error for input past a limit: one line naming what was read, the
/// limit and its value.
pub fn exceeded(what: &str, limit: &str, value: impl std::fmt::Display) -> Error {
    Error::bad(format!(
        "{what}: over headroom's limit on {limit} ({value}; see src/limits.rs)"
    ))
}
