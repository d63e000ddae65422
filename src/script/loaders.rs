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
use super::index::{def_name, enclosing_function};
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
    let variable = call
        .parent()
        .filter(|p| p.kind() == "assignment")
        .and_then(|p| p.child_by_field_name("left"))
        .map(|l| src.text_of(l).to_string());
    LoaderCall {
        at: src.at(call),
        split: split_of(input_nodes_text.as_deref(), variable.as_deref()),
        placement: placement(ev, call),
        variable,
        args,
        unknown,
    }
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

/// Resident when built once before training; on demand when built inside an
/// evaluation function or a loop (once per epoch or per evaluation).
fn placement(ev: &Eval, call: Node) -> EvalLoaders {
    let func = enclosing_function(call);
    if let Some(f) = func {
        let name = def_name(ev.src, f).to_ascii_lowercase();
        if ["test", "eval", "valid", "infer", "predict"]
            .iter()
            .any(|w| name.contains(w))
        {
            return EvalLoaders::OnDemand;
        }
    }
    let mut cur = call.parent();
    while let Some(n) = cur {
        if Some(n) == func {
            break;
        }
        if matches!(n.kind(), "for_statement" | "while_statement") {
            return EvalLoaders::OnDemand;
        }
        cur = n.parent();
    }
    EvalLoaders::Resident
}
