//! The model the script trains and its optimizer. PyG's ready-made models
//! (`GraphSAGE`, `GCN`, `GAT`, `GIN`: `BasicGNN(in_channels,
//! hidden_channels, num_layers, out_channels, dropout=0.0, ...)`) by their
//! arguments; a class the script defines by the convolutions its `__init__`
//! builds (`SAGEConv`, `GCNConv`, `GATConv`, `GINConv`) and the arguments its
//! constructor call binds to `__init__`'s parameters (hidden, layers, heads,
//! dropout by name). A class whose layer count is neither a parameter nor a
//! fixed number of convolutions leaves the layers unknown.

use tree_sitter::Node;

use super::eval::{Eval, param_name};
use super::py::{Found, Value, call_args, callee_name, children};
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
    /// Hidden channels.
    pub hidden: Option<Found>,
    /// Message-passing layers.
    pub layers: Option<Found>,
    /// Attention heads.
    pub heads: Option<Found>,
    /// Dropout probability.
    pub dropout: Option<Found>,
    /// The optimizer, and where it is built.
    pub optimizer: Option<(Optimizer, String)>,
}

fn conv_of(name: &str) -> Option<Conv> {
    Some(match name {
        "GraphSAGE" | "SAGEConv" => Conv::Sage,
        "GCN" | "GCNConv" => Conv::Gcn,
        "GAT" | "GATConv" | "GATv2Conv" => Conv::Gat,
        "GIN" | "GINConv" => Conv::Gin,
        _ => return None,
    })
}

/// Finds the model constructor (the one assigned to `model` first) and the optimizer.
pub fn find(ev: &Eval) -> ModelFind {
    let src = ev.src;
    let mut out = ModelFind::default();
    let candidates: Vec<Node> = ev
        .index
        .calls
        .iter()
        .copied()
        .filter(|&c| {
            let name = callee_name(src, c);
            let known = matches!(name, "GraphSAGE" | "GCN" | "GAT" | "GIN");
            (known
                || ev
                    .index
                    .classes
                    .get(name)
                    .is_some_and(|k| !convs_in(ev, *k).is_empty()))
                && super::reachable(ev, c)
        })
        .collect();
    let assigned_to_model = |c: &&Node| {
        ev.index
            .parent(**c)
            .and_then(|p| p.child_by_field_name("left"))
            .is_some_and(|l| src.text_of(l) == "model")
    };
    if let Some(&call) = candidates
        .iter()
        .find(assigned_to_model)
        .or(candidates.first())
    {
        read_call(ev, call, &mut out);
    }
    for &c in &ev.index.calls {
        let f = c
            .child_by_field_name("function")
            .map_or("", |f| src.text_of(f));
        if !f.contains("optim") || out.optimizer.is_some() {
            continue;
        }
        let args = call_args(src, c);
        let momentum = args.keywords.iter().any(|(k, v)| {
            k == "momentum" && ev.eval(*v).is_some_and(|m| m.value.as_float() != Some(0.0))
        });
        let opt = match callee_name(src, c) {
            "Adam" => Optimizer::Adam,
            "AdamW" => Optimizer::Adamw,
            "SGD" if momentum => Optimizer::Momentum,
            "SGD" => Optimizer::Sgd,
            _ => continue,
        };
        out.optimizer = Some((opt, src.at(c)));
    }
    out
}

fn read_call<'t>(ev: &Eval<'t>, call: Node<'t>, out: &mut ModelFind) {
    let src = ev.src;
    let class = callee_name(src, call).to_string();
    let args = call_args(src, call);
    out.at = Some(src.at(call));
    let kw = |names: &[&str]| -> Option<Found> {
        let (_, v) = args
            .keywords
            .iter()
            .find(|(k, _)| names.contains(&k.as_str()))?;
        ev.eval(*v)
    };
    const HIDDEN: &[&str] = &[
        "hidden_channels",
        "hidden",
        "hidden_dim",
        "hidden_size",
        "nhid",
        "hid_dim",
    ];
    const LAYERS: &[&str] = &["num_layers", "n_layers", "layers", "nlayers"];
    const HEADS: &[&str] = &["heads", "num_heads", "n_heads"];
    // A class the script defines wins over PyG's model of the same name
    // (OGB's examples define their own `GCN` and `SAGE`).
    if let (false, Some(conv)) = (ev.index.classes.contains_key(&class), conv_of(&class)) {
        // BasicGNN(in_channels, hidden_channels, num_layers, out_channels, ...)
        out.conv = Some((conv, src.at(call)));
        let pos = |i: usize| args.positional.get(i).and_then(|n| ev.eval(*n));
        out.hidden = kw(HIDDEN).or_else(|| pos(1));
        out.layers = kw(LAYERS).or_else(|| pos(2));
        out.heads = kw(HEADS);
        out.dropout = kw(&["dropout"]);
        out.class = Some(class);
        return;
    }
    let Some(&def) = ev.index.classes.get(&class) else {
        return;
    };
    out.class = Some(class);
    let convs = convs_in(ev, def);
    if let Some(&(conv, first)) = convs.first() {
        out.conv = Some((conv, src.at(first)));
    }
    let Some(init) = init_of(ev, def) else { return };
    let params: Vec<&str> = init
        .child_by_field_name("parameters")
        .map(|p| {
            children(p)
                .into_iter()
                .filter_map(|n| param_name(src, n))
                .collect()
        })
        .unwrap_or_default();
    // The value bound to the __init__ parameter named one of `names`.
    let bound = |names: &[&str]| -> Option<Found> {
        if let Some(f) = kw(names) {
            return Some(f);
        }
        let i = params.iter().position(|p| names.contains(p))?;
        let node = args.positional.get(i.checked_sub(1)?)?;
        ev.eval(*node)
    };
    out.hidden = bound(HIDDEN);
    out.heads = bound(HEADS);
    out.dropout = bound(&["dropout", "p_dropout", "drop"]);
    out.layers = bound(LAYERS).or_else(|| {
        // A fixed stack: as many convolutions as __init__ builds, none in a loop.
        let in_loop = convs.iter().any(|(_, n)| in_loop(ev, *n, def));
        (!in_loop && !convs.is_empty())
            .then(|| Found::at(Value::Int(convs.len() as i64), src.at(def)))
    });
}

/// The convolution constructor calls in class `def`.
fn convs_in<'t>(ev: &Eval<'t>, def: Node<'t>) -> Vec<(Conv, Node<'t>)> {
    ev.index
        .calls
        .iter()
        .filter(|c| c.start_byte() >= def.start_byte() && c.end_byte() <= def.end_byte())
        .filter_map(|&c| Some((conv_of(callee_name(ev.src, c))?, c)))
        .collect()
}

fn init_of<'t>(ev: &Eval<'t>, def: Node<'t>) -> Option<Node<'t>> {
    let body = def.child_by_field_name("body")?;
    children(body).into_iter().find_map(|n| {
        let f = if n.kind() == "decorated_definition" {
            n.child_by_field_name("definition")?
        } else {
            n
        };
        (f.kind() == "function_definition" && super::index::def_name(ev.src, f) == "__init__")
            .then_some(f)
    })
}

fn in_loop<'t>(ev: &Eval<'t>, node: Node<'t>, stop: Node<'t>) -> bool {
    let mut cur = ev.index.parent(node);
    while let Some(n) = cur {
        if n == stop {
            return false;
        }
        if matches!(
            n.kind(),
            "for_statement" | "while_statement" | "list_comprehension"
        ) {
            return true;
        }
        cur = ev.index.parent(n);
    }
    false
}
