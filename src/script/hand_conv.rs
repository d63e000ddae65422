//! A graph convolution written by hand: a plain `nn.Module` layer (not a
//! `MessagePassing` subclass) whose `forward` aggregates over neighbours
//! itself, with a product by the graph it is given (`A_r @ H`,
//! `torch.sparse.mm(adj, x)`) or a scatter over its edges
//! (`agg.scatter_add_(0, row, alpha * Wh[col])`, `index_add_`,
//! torch_scatter's `scatter`). Its weights are `nn.Linear`s, so without
//! this a model of such layers read as an MLP; its cost is none of the
//! spec's convs, so the model is planned as an assumption naming it.

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

/// Whether `text` names `name` as a word.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == name)
}
