//! Every `NeighborLoader(...)` the script builds: its arguments (keywords,
//! `**kwargs` dicts, `num_neighbors` as the second positional argument, as
//! in PyG's signature `NeighborLoader(data, num_neighbors, input_nodes=None,
//! ...)`), the split it iterates (`input_nodes=split_idx['train']`, a
//! `train_mask`, or all nodes for layer-wise inference), and when it exists:
//! built at module level or in `main` before training it is resident; built
//! inside an evaluation function, or inside a loop, it is built on demand.
//! A loader in a branch whose condition is known to be false is skipped.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::eval::Eval;
use super::index::def_name;
use super::py::{Found, call_args, callee_name};
use crate::spec::EvalLoaders;

/// Which nodes a loader iterates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// The training nodes.
    Train,
    /// Validation nodes.
    Val,
    /// Test nodes.
    Test,
    /// Every node (layer-wise inference, `input_nodes=None`).
    All,
}

impl Split {
    /// The split's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Val => "val",
            Split::Test => "test",
            Split::All => "all nodes",
        }
    }
}

/// One NeighborLoader call.
#[derive(Debug, Clone)]
pub struct LoaderCall {
    /// `train.py:57`.
    pub at: String,
    /// The variable it is assigned to, if any.
    pub variable: Option<String>,
    /// The nodes it iterates.
    pub split: Split,
    /// When it exists.
    pub placement: EvalLoaders,
    /// Arguments whose value is known.
    pub args: BTreeMap<String, Found>,
    /// Arguments given but not computable (a call, an unknown name).
    pub unknown: Vec<String>,
}

/// The loaders of the script, in source order.
pub fn find(ev: &Eval) -> Vec<LoaderCall> {
    let src = ev.src;
    ev.index
        .calls
        .iter()
        .filter(|&&c| callee_name(src, c) == "NeighborLoader" && super::reachable(ev, c))
        .map(|&c| loader(ev, c))
        .collect()
}

fn loader<'t>(ev: &Eval<'t>, call: Node<'t>) -> LoaderCall {
    let src = ev.src;
    let a = call_args(src, call);
    let mut args = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut written: Vec<(String, Node)> = a.keywords.clone();
    if let Some(n) = a.positional.get(1) {
        written.push(("num_neighbors".into(), *n));
    }
    if let Some(n) = a.positional.get(2) {
        written.push(("input_nodes".into(), *n));
    }
    for splat in &a.splats {
        // A dict written as a literal or dict(...) is read entry by entry,
        // so each argument keeps its own line.
        if let Some(entries) = splat_entries(ev, *splat) {
            args.extend(entries);
            continue;
        }
        match ev.eval(*splat) {
            Some(Found {
                value: super::py::Value::Dict(entries),
                from,
            }) => {
                for (k, v) in entries {
                    args.insert(
                        k,
                        Found {
                            value: v,
                            from: from.clone(),
                        },
                    );
                }
            }
            _ => unknown.push(format!("**{}", src.text_of(*splat))),
        }
    }
    let mut input_nodes_text = None;
    for (k, node) in written {
        if k == "input_nodes" {
            input_nodes_text = Some(src.text_of(node).to_string());
        }
        match ev.eval(node) {
            Some(f) => {
                args.insert(k, f);
            }
            None if k != "input_nodes" && k != "data" => unknown.push(k),
            None => {}
        }
    }
    let variable = ev
        .index
        .parent(call)
        .filter(|p| p.kind() == "assignment")
        .and_then(|p| p.child_by_field_name("left"))
        .map(|l| src.text_of(l).to_string());
    let placement = placement(ev, call);
    let mut split = split_of(input_nodes_text.as_deref(), variable.as_deref());
    // `input_nodes=split_idx[split]` in an evaluation function: an evaluation loader.
    if split == Split::Train
        && !input_nodes_text.as_deref().unwrap_or("").contains("train")
        && !variable.as_deref().unwrap_or("").contains("train")
        && in_eval_function(ev, call)
    {
        split = Split::Val;
    }
    LoaderCall {
        at: src.at(call),
        split,
        placement,
        variable,
        args,
        unknown,
    }
}

/// The entries of `**name` where `name` is bound to `{...}` or `dict(...)`.
fn splat_entries<'t>(ev: &Eval<'t>, splat: Node<'t>) -> Option<Vec<(String, Found)>> {
    let node = match splat.kind() {
        "identifier" => ev.index.assignment_at(ev.src.text_of(splat), splat)?.value,
        _ => splat,
    };
    let mut out = Vec::new();
    match node.kind() {
        "dictionary" => {
            for pair in super::py::children(node) {
                match pair.kind() {
                    "pair" => {}
                    "comment" => continue,
                    _ => return None,
                }
                let key = pair.child_by_field_name("key")?;
                let Some(super::py::Value::Str(k)) = ev.eval(key).map(|f| f.value) else {
                    return None;
                };
                out.push((k, ev.eval(pair.child_by_field_name("value")?)?));
            }
        }
        "call" if ev.src.text_of(node.child_by_field_name("function")?) == "dict" => {
            for (k, v) in call_args(ev.src, node).keywords {
                out.push((k, ev.eval(v)?));
            }
        }
        _ => return None,
    }
    Some(out)
}

/// The split by the text of `input_nodes` (the variable name when absent).
fn split_of(input_nodes: Option<&str>, variable: Option<&str>) -> Split {
    let text = match input_nodes {
        Some("None") => return Split::All,
        Some(t) => t,
        None => variable.unwrap_or(""),
    }
    .to_ascii_lowercase();
    if text.contains("train") {
        Split::Train
    } else if text.contains("val") || text.contains("dev") {
        Split::Val
    } else if text.contains("test") {
        Split::Test
    } else if input_nodes.is_none() {
        Split::All
    } else {
        Split::Train
    }
}

/// Whether `call` is in a function named for evaluation (`test`, `evaluate`...).
fn in_eval_function(ev: &Eval, call: Node) -> bool {
    ev.index.enclosing_function(call).is_some_and(|f| {
        let name = def_name(ev.src, f).to_ascii_lowercase();
        ["test", "eval", "valid", "infer", "predict"]
            .iter()
            .any(|w| name.contains(w))
    })
}

/// Resident when built once before training; on demand when built inside an
/// evaluation function or a loop (once per epoch or per evaluation).
fn placement(ev: &Eval, call: Node) -> EvalLoaders {
    let func = ev.index.enclosing_function(call);
    if in_eval_function(ev, call) {
        return EvalLoaders::OnDemand;
    }
    let mut cur = ev.index.parent(call);
    while let Some(n) = cur {
        if Some(n) == func {
            break;
        }
        if matches!(n.kind(), "for_statement" | "while_statement") {
            return EvalLoaders::OnDemand;
        }
        cur = ev.index.parent(n);
    }
    EvalLoaders::Resident
}
