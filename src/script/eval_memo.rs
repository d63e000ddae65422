//! Memos of one reading: what the evaluator asks again and again of a
//! project that does not change while it is read (the call sites of a
//! function, the function a call calls, a parameter's value at its first
//! call site). Without them, following parameters through a project of
//! forty files took minutes.

use std::cell::RefCell;
use std::collections::HashMap;

use tree_sitter::Node;

use super::py::Found;

/// The memos, keyed by node id.
#[derive(Default)]
pub struct Memo<'t> {
    /// Function → its call sites (with the spawn flag).
    pub sites: RefCell<HashMap<usize, Vec<(Node<'t>, usize)>>>,
    /// Call → the project function it calls.
    pub callees: RefCell<HashMap<usize, Option<Node<'t>>>>,
    /// (function, parameter) → its value at the first call site.
    pub params: RefCell<HashMap<(usize, String), Option<Found>>>,
}
