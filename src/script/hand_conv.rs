//! A graph convolution written by hand: a plain `nn.Module` layer (not a
//! `MessagePassing` subclass) whose `forward` aggregates over neighbours
//! itself, with a product by the graph it is given (`A_r @ H`,
//! `torch.sparse.mm(adj, x)`) or a scatter over its edges
//! (`agg.scatter_add_(0, row, alpha * Wh[col])`, `index_add_`,
//! torch_scatter's `scatter`). Its weights are `nn.Linear`s, so without
//! this a model of such layers read as an MLP; its cost is none of the
//! spec's convs, so the model is planned as an assumption naming it.
//!
//! A `MessagePassing` subclass whose `forward` never propagates (MLPInit's
//! `SAGEConvMLP`, the "PeerMLP" of a conv: its Linears on each node's own
//! features) is no message passing either: its Linears are the layer.
//!
//! The other way round, a block named like attention whose `forward`
//! multiplies no two tensors (HAN's semantic attention: a softmax over a
//! Linear score of each relation's output, `(beta * z).sum(1)`) weighs
//! each node's own rows: a per-node cost beside the convs, not attention
//! between nodes.

use tree_sitter::Node;

use super::eval::{Eval, param_name};
use super::py::{callee_name, children};

/// Scatter-style aggregations (tensor methods, torch_scatter, PyG's utils).
const SCATTERS: &[&str] = &[
    "scatter_add_",
    "scatter_add",
    "scatter_reduce_",
    "scatter_reduce",
    "index_add_",
    "index_add",
    "scatter",
    "scatter_mean",
    "scatter_max",
    "segment_csr",
    "segment_coo",
    "spmm",
];

/// Whether the project's `class` is a layer that aggregates over the
/// graph in its `forward` (see the module's doc).
pub fn aggregates<'t>(ev: &Eval<'t>, class: Node<'t>) -> bool {
    let Some(forward) = ev.method(class, "forward") else {
        return false;
    };
    let Some(body) = forward.child_by_field_name("body") else {
        return false;
    };
    // The graph a layer is given: `forward(self, x, adj)`'s parameters
    // after the features, and names assigned from them (`A_r = A.get(r)`).
    let mut graph: Vec<String> = forward
        .child_by_field_name("parameters")
        .map(children)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| param_name(ev.src(forward), *p))
        .filter(|n| *n != "self")
        .skip(1)
        .map(str::to_string)
        .collect();
    let mut stack = vec![body];
    let mut products = Vec::new();
    while let Some(n) = stack.pop() {
        match n.kind() {
            "call" => {
                let name = callee_name(ev.src(n), n);
                if SCATTERS.contains(&name) {
                    return true;
                }
                if matches!(name, "mm" | "matmul" | "bmm") {
                    products.push(n);
                }
            }
            "binary_operator" if ev.text(n).contains('@') => products.push(n),
            "assignment" => {
                if let (Some(l), Some(r)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) && l.kind() == "identifier"
                    && graph.iter().any(|g| mentions(ev.text(r), g))
                {
                    graph.push(ev.text(l).to_string());
                }
            }
            _ => {}
        }
        // Source order, so a name is bound before the products that use it.
        stack.extend(children(n).into_iter().rev());
    }
    products.iter().any(|p| {
        let text = ev.text(*p);
        graph.iter().any(|g| mentions(text, g))
    })
}

/// Whether the project's `MessagePassing` subclass `class` passes
/// messages: its `forward` calls `propagate` (or aggregates by hand); a
/// class with no `forward` of its own is taken to.
pub fn propagates<'t>(ev: &Eval<'t>, class: Node<'t>) -> bool {
    let Some(forward) = ev.method(class, "forward") else {
        return true;
    };
    calls_in(ev, forward).iter().any(|c| {
        matches!(
            callee_name(ev.src(*c), *c),
            "propagate" | "message_and_aggregate" | "aggregate" | "edge_updater"
        )
    }) || aggregates(ev, class)
}

/// Whether the project's `class`, named like attention, attends within
/// each node only: it has a `forward`; it builds no block of the project
/// (only library layers: `Linear`, `Sequential`, activations); and neither
/// its methods nor the project functions `forward` calls multiply
/// matrices or build torch's attention.
pub fn per_node_attention<'t>(ev: &Eval<'t>, class: Node<'t>) -> bool {
    let Some(forward) = ev.method(class, "forward") else {
        return false;
    };
    let init = ev.method(class, "__init__");
    let builds_own = init.is_some_and(|i| {
        calls_in(ev, i)
            .iter()
            .any(|c| ev.class_of_call(*c).is_some_and(|k| k != class))
    });
    let called = calls_in(ev, forward)
        .into_iter()
        .filter_map(|c| ev.callee_def(c))
        .filter(|f| f.id() != forward.id());
    !builds_own
        && !std::iter::once(forward)
            .chain(init)
            .chain(called)
            .any(|f| calls_in(ev, f).iter().any(|c| product(ev, *c)) || has_at(ev, f))
}

/// Every call inside `f`.
fn calls_in<'t>(ev: &Eval<'t>, f: Node<'t>) -> Vec<Node<'t>> {
    ev.index_of(f)
        .calls
        .iter()
        .copied()
        .filter(|c| c.start_byte() >= f.start_byte() && c.end_byte() <= f.end_byte())
        .collect()
}

/// A matrix product or torch's attention.
fn product(ev: &Eval, call: Node) -> bool {
    matches!(
        callee_name(ev.src(call), call),
        "mm" | "matmul"
            | "bmm"
            | "einsum"
            | "scaled_dot_product_attention"
            | "MultiheadAttention"
            | "TransformerEncoderLayer"
            | "TransformerEncoder"
    )
}

/// Whether `f` multiplies with `@`.
fn has_at(ev: &Eval, f: Node) -> bool {
    let mut stack = vec![f];
    while let Some(n) = stack.pop() {
        if n.kind() == "binary_operator" && ev.text(n).contains('@') {
            return true;
        }
        stack.extend(children(n));
    }
    false
}

/// Whether `text` names `name` as a word.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == name)
}
