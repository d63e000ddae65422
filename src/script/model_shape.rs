//! The shape of the model a constructor call builds. PyG's ready-made
//! models by their arguments (`GraphSAGE(in, hidden, layers, out)`,
//! `GAT(..., heads=4, v2=True)`, `MLP`); a class of the project by the
//! layers its `__init__` constructs, with that call's arguments bound: each
//! conv call counted as often as the loops around it run (`for _ in
//! range(num_layers - 2)`, `[GCNConv(...) for _ in range(n)]`), loops over
//! relations or edge types counted as relations, classes of the project it
//! instantiates followed into (a LightningModule holding a `GNN`), only the
//! branches that run (`if self.model == 'gat'`). Hidden width and heads are
//! the first conv's arguments; a model of linear layers only is an MLP.
//! What cannot be computed falls back to the parameters named like it
//! (`hidden_channels`, `num_layers`, `heads`).

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::model::{ModelFind, basic_gnn, conv_of, keyword, positive};
use super::model_hits::{Hit, hits_in};
use super::model_origin::Origin;
use super::py::{Found, Value, call_args, callee_name, children};
use crate::spec::Conv;

/// Classes of the project followed into, at most this deep.
pub(super) const MAX_NESTING: usize = 4;

const HIDDEN: &[&str] = &[
    "hidden_channels",
    "hidden",
    "hidden_dim",
    "hidden_size",
    "nhid",
    "hid_dim",
    "n_hidden",
    "dim_hidden",
    "hidden_feats",
    "hidden_dims",
    "hidden_feat",
    "hidden_units",
    "hidden_channel",
    "hidden_dimension",
    "num_hidden",
    "n_hid",
    "nhidden",
];
pub(super) const LAYERS: &[&str] = &[
    "num_layers",
    "n_layers",
    "layers",
    "nlayers",
    "gnn_num_layers",
    "local_layers",
];
const HEADS: &[&str] = &["heads", "num_heads", "n_heads", "gat_heads"];

/// Fills `out` with the shape of the model `o` builds.
pub fn describe<'t>(ev: &Eval<'t>, o: &Origin<'t>, out: &mut ModelFind) {
    let call = o.call;
    let name = callee_name(ev.src(call), call);
    out.at = Some(ev.at(call));
    out.class = Some(name.to_string());
    let class = o.class.or_else(|| ev.class_of_call(call));
    if let Some(h) = o.hetero {
        hetero(ev, h, &o.locals, out);
    }
    let Some(class) = class else {
        ready_made(ev, call, &o.locals, out);
        return;
    };
    let init = ev.method(class, "__init__");
    let locals = init.map_or_else(Vec::new, |f| ev.bind(f, call, 0, &o.locals, 0));
    // A wrapper (a LightningModule) that makes its inner model heterogeneous:
    // `self.model = to_hetero(model, metadata)` in its `__init__`.
    if o.hetero.is_none()
        && let Some(f) = init
        && let Some(h) = ev.index_of(f).calls.iter().copied().find(|c| {
            c.start_byte() >= f.start_byte()
                && c.end_byte() <= f.end_byte()
                && callee_name(ev.src(*c), *c).starts_with("to_hetero")
        })
    {
        hetero(ev, h, &locals, out);
    }
    let mut hits = Vec::new();
    let mut opaque_block = None;
    hits_in(ev, class, &locals, 0, 1, &mut hits, &mut opaque_block);
    let convs: Vec<&Hit> = hits.iter().filter(|h| h.conv.is_some()).collect();
    // The project's own message passing beside PyG's convs (a temporal
    // embedding next to R-GAT's GATConvs) is a side layer: the convs are
    // the model. Alone, or beside a transformer block, it is not sized.
    let side_layer = !convs.is_empty()
        && hits
            .iter()
            .any(|h| h.own_message_passing && Some(h.call) == opaque_block);
    // Named with the layer itself: a model class can build it classes deep.
    if let Some(block) = opaque_block.filter(|_| !side_layer) {
        // `base_conv(...)` with `base_conv = SAGEConvMLP`: the class's name.
        let bound = block
            .child_by_field_name("function")
            .filter(|f| f.kind() == "identifier")
            .and_then(|f| super::class_alias::resolve(ev, f))
            .map(|(c, _)| ev.text(c));
        let name = bound.unwrap_or_else(|| callee_name(ev.src(block), block));
        out.unsized_at = Some(format!(
            "{} ({} at {})",
            out.at.clone().unwrap_or_default(),
            name.rsplit('.').next().unwrap_or(name),
            ev.at(block)
        ));
    }
    let layers_of = |hs: &[&Hit]| -> Option<i64> { hs.iter().map(|h| h.count).sum() };
    let own: Vec<&Hit> = hits.iter().filter(|h| h.own_message_passing).collect();
    let chosen: Vec<&Hit> = if !convs.is_empty() {
        convs.clone()
    } else if !own.is_empty() {
        // FIE's ReLUFIENet: a Linear in-head, three FIELayers, a Linear
        // classifier is three layers of message passing.
        own
    } else {
        hits.iter().collect()
    };
    if let Some(first) = chosen.first() {
        let conv = first.conv.unwrap_or(Conv::Mlp);
        out.conv = Some((conv, ev.at(first.call)));
        if let Some(n) = layers_of(&chosen).filter(|n| *n > 0) {
            let mut places: Vec<String> = chosen.iter().flat_map(|h| h.from.clone()).collect();
            places.extend(chosen.iter().map(|h| ev.at(h.call)));
            out.layers = Some(Found {
                value: Value::Int(n),
                from: dedup(places),
            });
        }
        // A Linear head the model's own class builds after its last conv
        // makes the convs' width the hidden one, whatever it is called
        // (`TransformerConv(..., out_channels=out_channel)`, then `out1`).
        let last_conv = hits
            .iter()
            .rposition(|h| chosen.iter().any(|c| c.call == h.call));
        let head_after = last_conv.is_some_and(|i| {
            hits[i + 1..].iter().any(|h| {
                h.conv.is_none()
                    && !h.own_message_passing
                    && h.call.start_byte() >= class.start_byte()
                    && h.call.end_byte() <= class.end_byte()
                    && std::ptr::eq(ev.src(h.call), ev.src(class))
            })
        });
        out.hidden = chosen
            .iter()
            .find_map(|h| width(ev, h, false))
            .or_else(|| fed_width(ev, &chosen))
            .or_else(|| {
                head_after
                    .then(|| chosen.iter().find_map(|h| width(ev, h, true)))
                    .flatten()
            });
        if matches!(
            conv,
            Conv::Gat | Conv::Gatv2 | Conv::Transformer | Conv::Rgat
        ) {
            out.heads = chosen.iter().find_map(|h| {
                let a = call_args(ev.src(h.call), h.call);
                keyword(ev, h.call, &["heads"], &h.locals).or_else(|| {
                    a.positional
                        .get(2)
                        .and_then(|n| ev.eval_with(*n, &h.locals))
                })
            });
        }
        if let Some(h) = chosen
            .iter()
            .max_by_key(|h| h.relations)
            .filter(|h| h.relations > 1)
        {
            let mut from = h.rel_from.clone();
            from.push(ev.at(h.call));
            out.relations = Some(Found {
                value: Value::Int(h.relations),
                from: dedup(from),
            });
        } else if let Some(at) = chosen.iter().find_map(|h| h.of_dataset.clone()) {
            // Named where the model is given the dataset's edge types
            // (`edge_types=data.edge_types`), else where the loop's is bound.
            let given = locals
                .iter()
                .find(|b| {
                    b.text.ends_with(".edge_types")
                        || b.text.contains("metadata()")
                        || b.text.contains("edge_index_dict")
                })
                .and_then(|b| b.at.clone());
            out.hetero_of_dataset.get_or_insert(given.unwrap_or(at));
        }
    }
    // What the layers did not say: the constructor's parameters by name.
    let by_name = |names: &[&str]| -> Option<Found> {
        let f = init?;
        let n = children(f.child_by_field_name("parameters")?)
            .into_iter()
            .filter_map(|p| super::eval::param_name(ev.src(f), p))
            .find(|p| names.contains(p))?;
        locals
            .iter()
            .find(|b| b.name == n)
            .and_then(|b| b.value.clone())
    };
    if out.hidden.as_ref().is_none_or(|h| !positive(h)) {
        out.hidden = by_name(HIDDEN).or(out.hidden.take());
    }
    if out.layers.is_none() {
        out.layers = by_name(LAYERS);
    }
    if out.heads.is_none() {
        out.heads = by_name(HEADS);
    }
    out.dropout = by_name(&["dropout", "p_dropout", "drop", "gnn_dropout"]);
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// A layer's output width: `out_channels=` or its second argument; for
/// attention kinds the width per head. A width named like the output
/// (`out_channels`, classes) is not the hidden one unless `named_out`.
fn width<'t>(ev: &Eval<'t>, h: &Hit<'t>, named_out: bool) -> Option<Found> {
    let a = call_args(ev.src(h.call), h.call);
    let node = a
        .keywords
        .iter()
        .find(|(k, _)| matches!(k.as_str(), "out_channels" | "out_features"))
        .map(|(_, v)| *v)
        .or_else(|| a.positional.get(1).copied())?;
    // A wrapper's own parameter (`SAGEConv(in_channels, out_channels)` in
    // a GNNConv built with `cfg.n_hid`): what its caller passed says
    // whether it is the output width.
    let own = ev.text(node);
    let text = h
        .locals
        .iter()
        .rfind(|b| b.name == own && !b.text.is_empty())
        .map_or(own, |b| b.text.as_str())
        .to_ascii_lowercase();
    if !named_out && (text.contains("out") || text.contains("class") || text.contains("label")) {
        return None; // the output layer's width is the classes, not the hidden width
    }
    ev.eval_with(node, &h.locals).filter(positive)
}

/// A width named like an output (`out_channels`) that another layer takes
/// as its input (`SAGEConv(out_channels, out_channels)` in the loop after
/// the first): the layers' hidden width, the classes coming after them.
fn fed_width<'t>(ev: &Eval<'t>, hits: &[&Hit<'t>]) -> Option<Found> {
    let arg = |h: &Hit<'t>, names: &[&str], pos: usize| -> Option<Node<'t>> {
        let a = call_args(ev.src(h.call), h.call);
        a.keywords
            .iter()
            .find(|(k, _)| names.contains(&k.as_str()))
            .map(|(_, v)| *v)
            .or_else(|| a.positional.get(pos).copied())
    };
    let inputs: Vec<&str> = hits
        .iter()
        .filter_map(|h| arg(h, &["in_channels", "in_features"], 0))
        .map(|n| ev.text(n))
        .collect();
    hits.iter().find_map(|h| {
        let out = arg(h, &["out_channels", "out_features"], 1)?;
        inputs
            .contains(&ev.text(out))
            .then(|| ev.eval_with(out, &h.locals))
            .flatten()
            .filter(positive)
    })
}

/// PyG's `BasicGNN(in_channels, hidden_channels, num_layers, out_channels, ...)` and `MLP`.
fn ready_made<'t>(ev: &Eval<'t>, call: Node<'t>, locals: &Locals, out: &mut ModelFind) {
    let name = callee_name(ev.src(call), call);
    let a = call_args(ev.src(call), call);
    let pos = |i: usize| a.positional.get(i).and_then(|n| ev.eval_with(*n, locals));
    let kw = |names: &[&str]| keyword(ev, call, names, locals);
    let conv = match (name, basic_gnn(name)) {
        ("GAT", _) if kw(&["v2"]).is_some_and(|v| v.value.truthy()) => Conv::Gatv2,
        (_, Some(c)) => c,
        ("MLP", _) => Conv::Mlp,
        ("Sequential", _) => return sequential(ev, call, locals, out),
        _ => return,
    };
    out.conv = Some((conv, ev.at(call)));
    out.hidden = kw(HIDDEN).or_else(|| pos(1));
    out.layers = kw(LAYERS).or_else(|| pos(2));
    out.heads = kw(HEADS);
    out.dropout = kw(&["dropout"]);
    if conv == Conv::Mlp
        && let Some(Found {
            value: Value::List(ch),
            from,
        }) = kw(&["channel_list"]).or_else(|| pos(0))
    {
        out.layers = Some(Found {
            value: Value::Int(ch.len() as i64 - 1),
            from: from.clone(),
        });
        out.hidden = ch.get(1).map(|v| Found {
            value: v.clone(),
            from,
        });
    }
}

/// `Sequential('x, edge_index', [(SAGEConv(...), 'x, edge_index -> x'), ...])`:
/// the convs among its layers, in order.
fn sequential<'t>(ev: &Eval<'t>, call: Node<'t>, locals: &Locals, out: &mut ModelFind) {
    let mut convs = Vec::new();
    let mut stack = vec![call.child_by_field_name("arguments")];
    while let Some(Some(n)) = stack.pop() {
        if n.kind() == "call"
            && let Some(c) = conv_of(callee_name(ev.src(n), n))
        {
            convs.push((n.start_byte(), c, n));
            continue;
        }
        stack.extend(children(n).into_iter().map(Some));
    }
    convs.sort_by_key(|(b, _, _)| *b);
    let Some(&(_, conv, first)) = convs.first() else {
        return;
    };
    out.conv = Some((conv, ev.at(first)));
    let places: Vec<String> = convs.iter().map(|(_, _, n)| ev.at(*n)).collect();
    out.layers = Some(Found {
        value: Value::Int(convs.len() as i64),
        from: dedup(places),
    });
    let hit = Hit {
        conv: Some(conv),
        call: first,
        count: Some(1),
        relations: 1,
        from: vec![],
        rel_from: vec![],
        of_dataset: None,
        locals: locals.clone(),
        own_message_passing: false,
    };
    out.hidden = width(ev, &hit, false);
}

/// `to_hetero(model, metadata)`: the relations metadata lists, or the dataset's.
fn hetero<'t>(ev: &Eval<'t>, call: Node<'t>, locals: &Locals, out: &mut ModelFind) {
    let a = call_args(ev.src(call), call);
    let Some(meta) = a.positional.get(1).copied() else {
        return;
    };
    if let Some(Found {
        value: Value::List(parts),
        from,
    }) = ev.eval_with(meta, locals)
        && let Some(Value::List(edge_types)) = parts.get(1)
    {
        out.relations = Some(Found {
            value: Value::Int(edge_types.len() as i64),
            from,
        });
        return;
    }
    out.hetero_of_dataset = Some(ev.at(call));
}

/// Whether `class` (or a class it builds) constructs a conv.
pub fn builds_layers<'t>(ev: &Eval<'t>, class: Node<'t>) -> bool {
    fn go<'t>(ev: &Eval<'t>, class: Node<'t>, depth: usize) -> bool {
        ev.index_of(class).calls.iter().any(|c| {
            c.start_byte() >= class.start_byte()
                && c.end_byte() <= class.end_byte()
                && (conv_of(callee_name(ev.src(*c), *c)).is_some()
                    || super::model::other_pyg_layer(ev, *c)
                    || depth < 3
                        && ev
                            .class_of_call(*c)
                            .is_some_and(|s| s != class && go(ev, s, depth + 1)))
        })
    }
    go(ev, class, 0)
}

/// The value assigned to `self.x` (the attribute node) in its class.
pub fn self_value<'t>(ev: &Eval<'t>, attr: Node<'t>) -> Option<Node<'t>> {
    ev.self_assignment(attr)
}
