//! A script that computes new features while the dataset object it took
//! them from keeps the old ones: two copies of the features from then on.
//! PyG's `InMemoryDataset.__getitem__` of a one-graph dataset returns a
//! shallow copy of its stored graph, so after
//!
//! ```python
//! dataset = DGraphFin(root=...); data = dataset[0]
//! x = data.x; x = (x - x.mean(0)) / x.std(0); data.x = x
//! ```
//!
//! `dataset` still holds the original `x`. Measured on DGraphFin's
//! end-to-end run (3.7M nodes, 17 float32 features): the main process's
//! anonymous memory grew by 240 MiB at that line, the features' size
//! (benches/script_corpus/SCORES.md, "End-to-end runs"). A transform on
//! access that computes features (`transform=T.NormalizeFeatures()`) gives
//! each `dataset[0]` its own copy the same way. Moving the tensor
//! (`.to(device)`, `.cpu()`) makes no host copy and is not counted.

use tree_sitter::Node;

use super::eval::Eval;
use super::py::callee_name;

/// Methods that move or view a tensor without a new host copy.
const MOVES: &[&str] = &[
    "to",
    "cuda",
    "cpu",
    "pin_memory",
    "contiguous",
    "share_memory_",
    "view",
    "reshape",
];

/// Where the script replaces the features of the dataset built by `call`
/// (`dataset = Cls(...)`) with a computed tensor while `dataset` keeps the
/// original, or where its transform computes them on access.
pub fn replaced<'t>(ev: &Eval<'t>, call: Node<'t>) -> Option<String> {
    let src = ev.src(call);
    let args = super::py::call_args(src, call);
    if let Some((_, t)) = args.keywords.iter().find(|(k, _)| k == "transform")
        && src.text_of(*t).contains("NormalizeFeatures")
    {
        return Some(ev.at(*t));
    }
    let assignment = ev.parent(call).filter(|p| p.kind() == "assignment")?;
    let left = assignment.child_by_field_name("left")?;
    if left.kind() != "identifier" {
        return None;
    }
    let dataset = src.text_of(left);
    let index = ev.index_of(call);
    // The names bound to `dataset[...]` after it, in source order (the
    // index is a map: its order would make the answer vary run to run).
    let subscript = format!("{dataset}[");
    let mut graphs: Vec<(usize, &String)> = index
        .assigns
        .iter()
        .filter_map(|(name, all)| {
            all.iter()
                .filter(|a| a.start >= assignment.end_byte())
                .find(|a| {
                    src.text_of(a.value)
                        .replace(' ', "")
                        .starts_with(&subscript)
                })
                .map(|a| (a.start, name))
        })
        .collect();
    graphs.sort();
    for (_, graph) in graphs {
        let Some(all) = index.assigns.get(&format!("{graph}.x")) else {
            continue;
        };
        if let Some(a) = all.iter().find(|a| computed(ev, a.value)) {
            return Some(src.at(a.value));
        }
    }
    None
}

/// Whether `value` makes a new tensor: arithmetic, or a call that is not a
/// move; a name is followed to its assignment in force there.
fn computed<'t>(ev: &Eval<'t>, value: Node<'t>) -> bool {
    match value.kind() {
        "binary_operator" | "unary_operator" => true,
        "parenthesized_expression" => value.named_child(0).is_some_and(|v| computed(ev, v)),
        "call" => !MOVES.contains(&callee_name(ev.src(value), value)),
        "identifier" => ev
            .index_of(value)
            .assignment_at(ev.text(value), value)
            .is_some_and(|a| a.value.kind() != "identifier" && computed(ev, a.value)),
        _ => false,
    }
}
