//! Every loader the script builds: PyG's `NeighborLoader(...)` and the
//! legacy `NeighborSampler(...)` (`torch_geometric.loader`/`.data`, by its
//! import: DGL's and PyG's new `torch_geometric.sampler` class of that name
//! are samplers, not loaders). A loader call is read once per context it
//! runs in (loader_context.rs): each call of the function that builds it
//! (`get_loader(split_idx['valid'])`), each value of a loop over splits.
//! Its arguments (keywords, `**kwargs` dicts, `num_neighbors`/`sizes` and
//! `input_nodes`/`node_idx` by position), the split it iterates
//! (`input_nodes=split_idx['train']`, a `train_mask`, a Lightning
//! `val_dataloader`, or all nodes for layer-wise inference), and when it
//! exists: built once before training it is resident; built inside an
//! evaluation function, or a loop of the training, it is built on demand.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::loader_context::{Context, contexts};
use super::project::Imported;
use super::py::{Found, Value, call_args, callee_name};
use crate::spec::{EvalLoaders, LoaderKind};

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
    /// The training nodes, evaluated: built where autograd is off
    /// (grad_context.rs), so not the loader that trains.
    TrainEval,
}

impl Split {
    /// The split's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Val => "val",
            Split::Test => "test",
            Split::All => "all nodes",
            Split::TrainEval => "train (evaluated)",
        }
    }
}

/// One loader as built in one context.
#[derive(Debug, Clone)]
pub struct LoaderCall {
    /// `train.py:57` (and the context: `called at train.py:80`).
    pub at: String,
    /// The places that decide this loader: its line and its call site's.
    pub places: String,
    /// The variable it is assigned to, if any.
    pub variable: Option<String>,
    /// The nodes it iterates.
    pub split: Split,
    /// When it exists.
    pub placement: EvalLoaders,
    /// NeighborLoader or the legacy NeighborSampler.
    pub kind: LoaderKind,
    /// All nodes, every neighbour: layer-wise inference's loader.
    pub layerwise: bool,
    /// Arguments whose value is known (`num_neighbors`, `input_nodes`, ...
    /// under NeighborLoader's names for both kinds).
    pub args: BTreeMap<String, Found>,
    /// Arguments given but not computable (a call, an unknown name).
    pub unknown: Vec<String>,
    /// A training loader iterated again with autograd off (eval_reuse.rs):
    /// where.
    pub reused_without_grad: Option<String>,
    /// Whether the loader is used after it is built (eval_reuse.rs).
    pub used: bool,
}

/// The loaders of the script, in source order, one per context.
pub fn find(ev: &Eval) -> Vec<LoaderCall> {
    let mut out = Vec::new();
    for call in ev.calls() {
        let Some(kind) = kind_of(ev, call) else {
            continue;
        };
        if !super::reachable(ev, call) {
            continue;
        }
        for ctx in contexts(ev, call) {
            out.push(loader(ev, call, kind, &ctx));
        }
    }
    out
}

/// The branches that keep the script's other loaders from being built
/// (`if False:` around an evaluation, the only calls of the function that
/// builds them), in source order.
pub fn dead(ev: &Eval) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for call in ev.calls() {
        if kind_of(ev, call).is_none() {
            continue;
        }
        for p in super::loader_context::dead_places(ev, call) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Whether the loader `call` builds (assigned to `var`) is iterated right
/// where it is built, `for batch in var:` outside any loop over the
/// model's layers: each batch goes through the whole model (a sampled
/// evaluation with every neighbour), not layer-wise inference, which loops
/// over the layers around it (`model.inference(x, loader)`, or `for conv in
/// model.convs: for batch in loader:`).
fn iterated_per_batch<'t>(ev: &Eval<'t>, call: Node<'t>, var: &str) -> bool {
    let scope = ev.enclosing_function(call);
    ev.fors().any(|f| {
        let over_var = f
            .child_by_field_name("right")
            .is_some_and(|r| ev.text(r) == var);
        if !over_var
            || f.start_byte() < call.end_byte()
            || ev.enclosing_function(f) != scope
            || !std::ptr::eq(ev.src(f), ev.src(call))
        {
            return false;
        }
        let mut p = ev.parent(f);
        while let Some(n) = p {
            if n.kind() == "for_statement"
                && n.child_by_field_name("right").is_some_and(|r| {
                    let t = ev.text(r).to_ascii_lowercase();
                    t.contains("conv") || t.contains("layer")
                })
            {
                return false;
            }
            p = ev.parent(n);
        }
        true
    })
}

/// The loader kind `call` builds, when it builds PyG's.
fn kind_of<'t>(ev: &Eval<'t>, call: Node<'t>) -> Option<LoaderKind> {
    let name = callee_name(ev.src(call), call);
    let kind = match name {
        "NeighborLoader" => LoaderKind::NeighborLoader,
        "NeighborSampler" => LoaderKind::NeighborSampler,
        _ => return None,
    };
    let f = call.child_by_field_name("function")?;
    let text = ev.text(f);
    // The project's own class of that name: PyG's loader when it
    // subclasses it (`class NeighborLoader(NeighborL)` that adds a
    // transform and passes the rest on), else another loader.
    if let Some(class) = ev.class_of_call(call) {
        return subclasses(ev, class, name).then_some(kind);
    }
    let m = ev.project.module_of(call);
    if ev.class_named(m, name).is_some() {
        return None; // the script's own class of that name
    }
    let path = match f.kind() {
        "identifier" => match ev.imported(f) {
            Some(Imported::Library(p)) => p,
            Some(_) => return None,
            None => String::new(),
        },
        _ => text.to_string(),
    };
    let pyg = path.starts_with("torch_geometric.loader")
        || path.starts_with("torch_geometric.data")
        || path.starts_with("pyg.loader")
        || path.starts_with("geometric.loader");
    match kind {
        // Unimported (a star import) counts; DGL's and glt's do not.
        LoaderKind::NeighborLoader => {
            (path.is_empty() || pyg || path == "NeighborLoader").then_some(kind)
        }
        LoaderKind::NeighborSampler => {
            (pyg || path.is_empty() && !text.contains("dgl")).then_some(kind)
        }
    }
}

/// Whether the project's `class` subclasses PyG's loader `name` (under
/// any alias it was imported as).
fn subclasses<'t>(ev: &Eval<'t>, class: Node<'t>, name: &str) -> bool {
    let Some(supers) = class.child_by_field_name("superclasses") else {
        return false;
    };
    let mut cursor = supers.walk();
    let listed: Vec<Node> = supers.named_children(&mut cursor).collect();
    listed.into_iter().any(|s| {
        let pyg = |p: &str| p.starts_with("torch_geometric.") && p.rsplit('.').next() == Some(name);
        match s.kind() {
            "identifier" => match ev.imported(s) {
                Some(Imported::Library(p)) => pyg(&p),
                _ => false,
            },
            "attribute" => pyg(ev.text(s)),
            _ => false,
        }
    })
}

/// A loader argument: its value when computed, else its name among the
/// unknown ones (the data and input nodes are not settings: not named).
fn keep(
    args: &mut BTreeMap<String, Found>,
    unknown: &mut Vec<String>,
    k: String,
    f: Option<Found>,
) {
    match f {
        Some(f) => {
            args.insert(k, f);
        }
        None if k != "input_nodes" && k != "data" => unknown.push(k),
        None => {}
    }
}

fn loader<'t>(ev: &Eval<'t>, call: Node<'t>, kind: LoaderKind, ctx: &Context<'t>) -> LoaderCall {
    let a = call_args(ev.src(call), call);
    let mut args = BTreeMap::new();
    let mut unknown = Vec::new();
    let rename = |k: &str| -> String {
        match (kind, k) {
            (LoaderKind::NeighborSampler, "sizes") => "num_neighbors".into(),
            (LoaderKind::NeighborSampler, "node_idx") => "input_nodes".into(),
            (LoaderKind::NeighborSampler, "edge_index") => "data".into(),
            _ => k.to_string(),
        }
    };
    let mut written: Vec<(String, Node)> =
        a.keywords.iter().map(|(k, v)| (rename(k), *v)).collect();
    let positional = match kind {
        // NeighborLoader(data, num_neighbors, input_nodes, ...)
        LoaderKind::NeighborLoader => ["data", "num_neighbors", "input_nodes"],
        // NeighborSampler(edge_index, sizes, node_idx, ...)
        LoaderKind::NeighborSampler => ["data", "num_neighbors", "input_nodes"],
    };
    for (i, n) in a.positional.iter().enumerate().take(3) {
        written.push((positional[i].to_string(), *n));
    }
    for splat in &a.splats {
        let entries = ev.splat(*splat, &ctx.locals, 0);
        if entries.is_empty() {
            unknown.push(format!("**{}", ev.text(*splat)));
        }
        for (k, f) in entries {
            keep(&mut args, &mut unknown, rename(&k), f);
        }
    }
    let mut input_nodes_text = None;
    for (k, node) in written {
        if k == "input_nodes" {
            input_nodes_text = Some(bound_text(ev, node, &ctx.locals));
        }
        let f = ev.eval_with(node, &ctx.locals);
        keep(&mut args, &mut unknown, k, f);
    }
    let variable = ctx.variable.clone().or_else(|| {
        ev.parent(call)
            .filter(|p| p.kind() == "assignment")
            .and_then(|p| p.child_by_field_name("left"))
            .map(|l| ev.text(l).to_string())
    });
    let mut split = split_of(input_nodes_text.as_deref(), variable.as_deref());
    // Every node, shuffled: a training loader (PyG's benchmarks train on
    // all nodes this way; evaluation does not shuffle).
    if split == Split::All
        && args
            .get("shuffle")
            .is_some_and(|f| f.value == Value::Bool(true))
    {
        split = Split::Train;
    }
    if let Some(s) = ctx.split {
        split = s;
    }
    // Built where autograd is off, or by a helper called there
    // (`create_loader(data, indices)` inside an `@torch.no_grad()` evaluate).
    if split == Split::Train
        && (super::grad_context::without_grad(ev, call)
            || ctx
                .site_node
                .is_some_and(|s| super::grad_context::without_grad(ev, s)))
    {
        split = Split::TrainEval;
    }
    let fanout = args
        .get("num_neighbors")
        .and_then(|f| f.value.as_int_list());
    // Every node (no input nodes given, whatever the variable is called:
    // `self.test_loader = NeighborSampler(edge_index, sizes=[-1])`), every
    // neighbour: layer-wise inference, unless it is the training loader.
    let every_node = input_nodes_text.as_deref().is_none_or(|t| t == "None");
    let layerwise = (split == Split::All || (every_node && split != Split::Train))
        && fanout.is_some_and(|f| !f.is_empty() && f.iter().all(|h| *h < 0))
        && !ev
            .parent(call)
            .filter(|p| p.kind() == "assignment")
            .and_then(|p| p.child_by_field_name("left"))
            .is_some_and(|v| iterated_per_batch(ev, call, ev.text(v)));
    let reused_without_grad = variable
        .as_deref()
        .filter(|_| split == Split::Train)
        .and_then(|v| {
            // Where the variable is bound: the caller's call when it names it.
            let built = ctx.site_node.filter(|_| ctx.variable.is_some());
            super::eval_reuse::reused_without_grad(ev, built.unwrap_or(call), v)
        });
    let used = variable.as_deref().is_none_or(|v| {
        let built = ctx.site_node.filter(|_| ctx.variable.is_some());
        super::eval_reuse::used_after(ev, built.unwrap_or(call), v)
    });
    LoaderCall {
        reused_without_grad,
        used,
        at: format!("{}{}", ev.at(call), ctx.describe),
        places: match &ctx.site {
            Some(s) => format!("{}, {s}", ev.at(call)),
            None => ev.at(call),
        },
        split,
        placement: ctx.placement,
        kind,
        layerwise,
        variable,
        args,
        unknown,
    }
}

/// The text `node` stands for: a parameter or loop variable bound in this
/// context stands for the expression bound to it; a name assigned a
/// conditional before it in the function for the branch this context takes
/// (`input_nodes = data.train_mask if use_train_mask else data.test_mask`).
fn bound_text<'t>(ev: &Eval<'t>, node: Node<'t>, locals: &Locals) -> String {
    let text = ev.text(node);
    if node.kind() == "identifier"
        && let Some(b) = ev_local(ev, text, node, locals)
    {
        return match b.value.as_ref().map(|f| &f.value) {
            _ if !b.text.is_empty() => b.text.clone(),
            Some(Value::Str(s)) => s.clone(),
            _ => text.to_string(),
        };
    }
    if node.kind() == "identifier"
        && let Some(a) = ev.index_of(node).local_assignment(text, node)
        && a.position == 0
        && let Some(b) = chosen_branch(ev, a.value, locals)
    {
        return bound_text(ev, b, locals);
    }
    // `('paper', mask)`: the node type and its mask.
    text.to_string()
}

/// The branch of a conditional expression (`a if cond else b`) whose
/// condition is known in this context.
fn chosen_branch<'t>(ev: &Eval<'t>, n: Node<'t>, locals: &Locals) -> Option<Node<'t>> {
    if n.kind() != "conditional_expression" {
        return None;
    }
    let parts = super::py::children(n);
    let cond = ev.eval_with(*parts.get(1)?, locals)?;
    if cond.value.truthy() {
        parts.first().copied()
    } else {
        parts.get(2).copied()
    }
}

fn ev_local<'l, 't>(
    ev: &Eval<'t>,
    name: &str,
    node: Node<'t>,
    locals: &'l Locals,
) -> Option<&'l super::eval::Binding> {
    ev.local(name, node, locals)
}

/// The split by the text of `input_nodes` (the variable name when absent).
pub(super) fn split_of(input_nodes: Option<&str>, variable: Option<&str>) -> Split {
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
