//! A first pass over a pickle's opcodes that bounds the object it would
//! build, before serde-pickle builds it. Three things serde-pickle cannot
//! survive are refused here: nesting (it recurses, so nested lists overflow
//! the stack), expansion (a memo reference is cloned at every use, so a few
//! KB of GETs of one string or list stand for gigabytes: every object and
//! every leaf's payload is counted at each place it is used) and a float
//! as a dict key or set element (serde-pickle orders keys with a comparison
//! that is not total for NaN or float/int mixes, and Rust's sort panics on
//! that). Opcodes and their arguments as listed in CPython's
//! Lib/pickletools.py (protocols 0-5).

use std::collections::HashMap;

use super::pickle_walk::{Item, Walker};
use crate::limits::{MAX_PICKLE_DEPTH, MAX_PICKLE_EXPANSION_BYTES, PICKLE_NODE_BYTES};

/// Checks that the pickle in `bytes` is well formed, nests no deeper than
/// [`MAX_PICKLE_DEPTH`] and decodes to at most [`MAX_PICKLE_EXPANSION_BYTES`].
pub fn check_pickle_shape(bytes: &[u8]) -> Result<(), String> {
    check_with(bytes, MAX_PICKLE_DEPTH, MAX_PICKLE_EXPANSION_BYTES)
}

/// [`check_pickle_shape`] with explicit limits (tests use small ones).
pub(super) fn check_with(bytes: &[u8], max_depth: usize, max_bytes: u64) -> Result<(), String> {
    let mut w = Walker {
        b: bytes,
        i: 0,
        nodes: Vec::new(),
        edges: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        max_objects: usize::try_from(max_bytes / PICKLE_NODE_BYTES)
            .unwrap_or(usize::MAX)
            .max(1024),
        max_bytes,
    };
    loop {
        let op = *w.b.get(w.i).ok_or("truncated: no STOP opcode")?;
        w.i += 1;
        if !w.step(op)? {
            break;
        }
    }
    let root = match w.top()? {
        Item::Leaf { bytes, .. } if bytes > max_bytes => return Err(too_big(max_bytes)),
        Item::Leaf { .. } => return Ok(()),
        Item::Node(n) => n,
    };
    let (depth, size) = super::pickle_measure::measure(&w.nodes_own(), w.edges, root)?;
    if depth > max_depth {
        return Err(format!(
            "nested {depth} levels deep, over the limit on the deepest nesting \
             ({max_depth}; a memory snapshot nests 5)"
        ));
    }
    if size > max_bytes {
        return Err(too_big(max_bytes));
    }
    Ok(())
}

pub(super) fn too_big(max: u64) -> String {
    format!(
        "expands past the limit on the largest expansion ({} once memo references are copied)",
        crate::units::fmt_bytes(max)
    )
}

impl Walker<'_> {
    fn nodes_own(&self) -> Vec<u64> {
        self.nodes.iter().map(|n| n.own).collect()
    }
}
