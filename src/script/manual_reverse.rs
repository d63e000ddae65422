//! Edges made undirected by hand, the ways PyG users write it without
//! `to_undirected` or `T.ToUndirected()`:
//!
//! - each direction stacked as its own pair and both kept
//!   (`parts.append(torch.stack([ei[0], n + ei[1]]))` then
//!   `parts.append(torch.stack([n + ei[1], ei[0]]))`);
//! - an edge index concatenated with itself reversed
//!   (`torch.cat([edge_index, edge_index.flip(0)], dim=1)`,
//!   `edge_index[[1, 0]]`);
//! - a heterogeneous graph given each relation's reverse type
//!   (`data[(src, rel, dst)].edge_index = ei` and `data[(dst, rel + "_rev",
//!   src)].edge_index = rev`), as `T.ToUndirected()` adds them.
//!
//! Each is read within one function (or the module's top level), in code
//! that runs; the first found is named.

use std::collections::HashMap;

use tree_sitter::Node;

use super::eval::Eval;
use super::py::{call_args, callee_name, children};

/// Where the script reverses its edges by hand, if it does.
pub fn find(ev: &Eval) -> Option<String> {
    // (function id, module) → the pairs seen there, each with its node.
    let mut stacked: HashMap<(usize, usize), Vec<(String, String)>> = HashMap::new();
    for call in ev.calls() {
        if !super::reachable(ev, call) {
            continue;
        }
        let scope = scope_of(ev, call);
        match callee_name(ev.src(call), call) {
            "stack" => {
                let Some((a, b)) = pair(ev, call) else {
                    continue;
                };
                let seen = stacked.entry(scope).or_default();
                if seen.iter().any(|(x, y)| *x == b && *y == a) && a != b {
                    return Some(ev.at(call));
                }
                seen.push((a, b));
            }
            "cat" | "concat" if self_and_reverse(ev, call) => return Some(ev.at(call)),
            _ => {}
        }
    }
    reverse_types(ev)
}

/// The function `node` is in (0 for the module's top level) and its module.
fn scope_of<'t>(ev: &Eval<'t>, node: Node<'t>) -> (usize, usize) {
    (
        ev.enclosing_function(node).map_or(0, |f| f.id()),
        ev.project.module_of(node),
    )
}

/// `stack([a, b])`: the two rows' texts, spaces removed.
fn pair(ev: &Eval, call: Node) -> Option<(String, String)> {
    let list = *call_args(ev.src(call), call).positional.first()?;
    if !matches!(list.kind(), "list" | "tuple") {
        return None;
    }
    let rows = children(list);
    let [a, b] = rows.as_slice() else {
        return None;
    };
    Some((squeeze(ev.text(*a)), squeeze(ev.text(*b))))
}

/// `cat([e, e.flip(0)])` / `cat([e, e[[1, 0]]])`: an edge index beside its
/// own reverse.
fn self_and_reverse(ev: &Eval, call: Node) -> bool {
    let Some(list) = call_args(ev.src(call), call).positional.first().copied() else {
        return false;
    };
    let items: Vec<String> = children(list)
        .iter()
        .map(|n| squeeze(ev.text(*n)))
        .collect();
    items.iter().any(|e| {
        [
            format!("{e}.flip(0)"),
            format!("{e}.flip([0])"),
            format!("{e}[[1,0]]"),
            format!("{e}.flip(dims=[0])"),
            format!("torch.flip({e},[0])"),
        ]
        .iter()
        .any(|r| items.contains(r))
    })
}

/// `data[(a, r, b)].edge_index = ...` and `data[(b, r2, a)].edge_index =
/// ...` in one function: each relation given its reverse type.
fn reverse_types(ev: &Eval) -> Option<String> {
    // In source order (the index keeps assignments by name, unordered):
    // the second of a pair is the one that makes the graph undirected.
    let mut all: Vec<_> = ev
        .project
        .indexes
        .iter()
        .flat_map(|idx| idx.assigns.iter())
        .filter(|(key, _)| key.ends_with(").edge_index") || key.ends_with("].edge_index"))
        .flat_map(|(_, v)| v.iter().map(|a| a.value))
        .collect();
    all.sort_by_key(|v| (ev.project.module_of(*v), v.start_byte()));
    let mut seen: HashMap<(usize, usize), Vec<(String, String)>> = HashMap::new();
    for value in all {
        let Some(types) = edge_type_of(ev, value) else {
            continue;
        };
        if !super::reachable(ev, value) {
            continue;
        }
        let list = seen.entry(scope_of(ev, value)).or_default();
        if types.0 != types.1 && list.iter().any(|(x, y)| *x == types.1 && *y == types.0) {
            return Some(ev.at(value));
        }
        list.push(types);
    }
    None
}

/// For the value of `x[(src, rel, dst)].edge_index = value`: the texts of
/// the source and destination node types.
fn edge_type_of<'t>(ev: &Eval<'t>, value: Node<'t>) -> Option<(String, String)> {
    let left = ev.parent(value)?.child_by_field_name("left")?;
    let sub = left.child_by_field_name("object")?;
    if sub.kind() != "subscript" {
        return None;
    }
    let mut key = sub.child_by_field_name("subscript")?;
    if key.kind() == "parenthesized_expression" {
        key = key.named_child(0)?;
    }
    let parts = children(key);
    let [s, _, d] = parts.as_slice() else {
        return None;
    };
    Some((squeeze(ev.text(*s)), squeeze(ev.text(*d))))
}

/// `text` without whitespace.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
