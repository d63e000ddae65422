//! The model the script trains and its optimizer. The model is the one the
//! optimizer is given (`Adam(model.parameters())`, a LightningModule's
//! `self.parameters()`), followed back through `.to(device)`, DDP,
//! `to_hetero(...)`, the script's own helper functions (`model =
//! get_model(args)`), parameters and `self.model = ...` to its constructor
//! call; when no optimizer names it, the constructor assigned to `model`.
//! PyG's ready-made models (`GraphSAGE`, `GCN`, `GAT`, `GIN`, `MLP`:
//! `BasicGNN(in, hidden, layers, out, ...)`) are read by their arguments;
//! a class of the project by the convolutions its `__init__` builds
//! (model_shape.rs). Imported but unused convs do not count.

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::py::{Found, Value, call_args, callee_name};
use crate::spec::{Conv, Optimizer};

/// What the reader learned about the model.
#[derive(Debug, Clone, Default)]
pub struct ModelFind {
    /// `train.py:80`: the constructor call.
    pub at: Option<String>,
    /// The class, as called.
    pub class: Option<String>,
    /// The layer family, and where it was seen.
    pub conv: Option<(Conv, String)>,
    /// Hidden channels (per head for attention kinds).
    pub hidden: Option<Found>,
    /// Message-passing layers.
    pub layers: Option<Found>,
    /// Attention heads.
    pub heads: Option<Found>,
    /// Dropout probability.
    pub dropout: Option<Found>,
    /// Relations with their own weights, when counted.
    pub relations: Option<Found>,
    /// `to_hetero`/`HeteroConv` over the dataset's own relations (the line).
    pub hetero_of_dataset: Option<String>,
    /// A model no spec kind describes (a transformer hybrid...): its line.
    pub unsized_at: Option<String>,
    /// The optimizer, and where it is built.
    pub optimizer: Option<(Optimizer, String)>,
}

/// PyG's layer classes and the spec kind each is sized as.
pub fn conv_of(name: &str) -> Option<Conv> {
    Some(match name {
        "SAGEConv" | "GraphConv" => Conv::Sage,
        "GCNConv" | "GCN2Conv" | "ChebConv" | "SGConv" | "LEConv" => Conv::Gcn,
        "GATConv" => Conv::Gat,
        "GATv2Conv" => Conv::Gatv2,
        "TransformerConv" => Conv::Transformer,
        "GINConv" => Conv::Gin,
        "GINEConv" => Conv::Gine,
        "RGCNConv" | "FastRGCNConv" => Conv::Rgcn,
        "RGATConv" => Conv::Rgat,
        _ => return None,
    })
}

/// Whether `call` builds one of PyG's message-passing layers that no conv
/// kind of the spec describes (`HGTConv`, `HANConv`, `PNAConv`, the
/// `APPNP` propagation): a `...Conv` class (HeteroConv, which only wraps
/// convs, aside) or `APPNP`, imported from `torch_geometric` (or with no
/// import: a star import) and not a class of the project. The model is
/// then planned as an assumption naming that layer's line, never silently
/// as another conv.
pub fn other_pyg_layer<'t>(ev: &Eval<'t>, call: Node<'t>) -> bool {
    let name = callee_name(ev.src(call), call);
    let layer_name = name.ends_with("Conv") && name != "HeteroConv" || name == "APPNP";
    if !layer_name || conv_of(name).is_some() || ev.class_of_call(call).is_some() {
        return false;
    }
    let Some(f) = call.child_by_field_name("function") else {
        return false;
    };
    let pyg = |p: &str| p.starts_with("torch_geometric");
    match f.kind() {
        "identifier" => match ev.imported(f) {
            Some(super::project::Imported::Library(p)) => pyg(&p),
            Some(_) => false,
            None => ev.class_named(ev.project.module_of(call), name).is_none(),
        },
        "attribute" => {
            let object = f.child_by_field_name("object");
            pyg(ev.text(f))
                || object.is_some_and(|o| {
                    matches!(ev.imported(o), Some(super::project::Imported::Library(p)) if pyg(&p))
                })
        }
        _ => false,
    }
}

/// PyG's ready-made models (`torch_geometric.nn.models`).
pub fn basic_gnn(name: &str) -> Option<Conv> {
    Some(match name {
        "GraphSAGE" => Conv::Sage,
        "GCN" => Conv::Gcn,
        "GAT" => Conv::Gat,
        "GIN" => Conv::Gin,
        _ => return None,
    })
}

/// Finds the model the optimizer trains (or the one assigned to `model`) and the optimizer.
pub fn find<'t>(ev: &Eval<'t>) -> ModelFind {
    let mut out = ModelFind::default();
    // The optimizer that trains a GNN; else the first one built.
    let optimizers = optimizer_calls(ev);
    let trains_gnn = |o: &super::model_origin::Origin<'t>| {
        let name = callee_name(ev.src(o.call), o.call);
        basic_gnn(name).is_some()
            || name == "Sequential"
            || o.class
                .or_else(|| ev.class_of_call(o.call))
                .is_some_and(|c| super::model_shape::builds_layers(ev, c))
    };
    // Of several, the one that runs first (a retraining baseline's comes
    // after the training it is compared with, whatever the source order).
    let mut chosen = optimizers
        .iter()
        .filter_map(|(opt, call)| {
            let o = super::model_origin::trained(ev, *call)?;
            trains_gnn(&o).then_some((*opt, *call, Some(o)))
        })
        .min_by_key(|(_, call, _)| super::run_order::key(ev, *call))
        .or_else(|| {
            optimizers
                .first()
                .map(|(opt, call)| (*opt, *call, super::model_origin::trained(ev, *call)))
        });
    if let Some((opt, call, _)) = &chosen {
        out.optimizer = Some((*opt, ev.at(*call)));
    }
    let origin = chosen.as_mut().and_then(|c| c.2.take()).or_else(|| {
        fallback(ev).map(|call| super::model_origin::Origin {
            call,
            class: None,
            locals: Vec::new(),
            hetero: None,
        })
    });
    if let Some(o) = origin {
        super::model_shape::describe(ev, &o, &mut out);
    }
    out
}

/// The optimizers the script builds (`torch.optim.Adam(...)`), in order.
fn optimizer_calls<'t>(ev: &Eval<'t>) -> Vec<(Optimizer, Node<'t>)> {
    let mut out = Vec::new();
    for c in ev.calls() {
        let f = c.child_by_field_name("function").map_or("", |f| ev.text(f));
        let name = callee_name(ev.src(c), c);
        if !(f.contains("optim") || matches!(name, "Adam" | "AdamW")) {
            continue;
        }
        let args = call_args(ev.src(c), c);
        let momentum = args.keywords.iter().any(|(k, v)| {
            k == "momentum" && ev.eval(*v).is_some_and(|m| m.value.as_float() != Some(0.0))
        });
        let opt = match name {
            "Adam" | "SparseAdam" => Optimizer::Adam,
            "AdamW" => Optimizer::Adamw,
            "SGD" if momentum => Optimizer::Momentum,
            "SGD" => Optimizer::Sgd,
            _ => continue,
        };
        if super::reachable(ev, c) {
            out.push((opt, c));
        }
    }
    out
}

/// Without an optimizer to follow: a constructor of a PyG model or of a
/// project class that builds convs, the one assigned to `model` first.
fn fallback<'t>(ev: &Eval<'t>) -> Option<Node<'t>> {
    let candidates: Vec<Node<'t>> = ev
        .calls()
        .filter(|&c| {
            let known = basic_gnn(callee_name(ev.src(c), c)).is_some();
            (known
                || ev
                    .class_of_call(c)
                    .is_some_and(|k| super::model_shape::builds_layers(ev, k)))
                && super::reachable(ev, c)
        })
        .collect();
    let assigned_to_model = |c: &&Node<'t>| {
        ev.parent(**c)
            .and_then(|p| p.child_by_field_name("left"))
            .is_some_and(|l| ev.text(l) == "model")
    };
    candidates
        .iter()
        .find(assigned_to_model)
        .or(candidates.first())
        .copied()
}

/// A keyword argument of `call` named one of `names`, computed with `locals`.
pub fn keyword<'t>(
    ev: &Eval<'t>,
    call: Node<'t>,
    names: &[&str],
    locals: &Locals,
) -> Option<Found> {
    let args = call_args(ev.src(call), call);
    let (_, v) = args
        .keywords
        .iter()
        .find(|(k, _)| names.contains(&k.as_str()))?;
    ev.eval_with(*v, locals)
}

/// Whether `v` is a count that can size a model.
pub fn positive(v: &Found) -> bool {
    matches!(v.value, Value::Int(i) if i > 0)
}
