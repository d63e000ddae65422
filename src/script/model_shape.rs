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
use super::model_origin::Origin;
use super::py::{Found, Value, call_args, callee_name, children};
use crate::spec::Conv;

/// Classes of the project followed into, at most this deep.
const MAX_NESTING: usize = 4;

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
const LAYERS: &[&str] = &[
    "num_layers",
    "n_layers",
    "layers",
    "nlayers",
    "gnn_num_layers",
    "local_layers",
];
const HEADS: &[&str] = &["heads", "num_heads", "n_heads", "gat_heads"];

/// One layer construction found in a model.
struct Hit<'t> {
    /// The conv kind; None for a linear layer.
    conv: Option<Conv>,
    call: Node<'t>,
    /// How many times it runs as a layer (None: a loop that cannot be computed).
    count: Option<i64>,
    /// How many relations it is built for (1 when not in a relation loop).
    relations: i64,
    /// The places its count comes from (the loop bounds' values).
    from: Vec<String>,
    /// The places its relation count comes from.
    rel_from: Vec<String>,
    /// A relation loop over what the reader cannot count (`for edge_type in
    /// edge_types` with `edge_types=data.edge_types`): the dataset's edge
    /// types, named by the place it is bound.
    of_dataset: Option<String>,
    locals: Locals,
}

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
    if opaque_block.is_some() {
        out.unsized_at = out.at.clone();
    }
    let convs: Vec<&Hit> = hits.iter().filter(|h| h.conv.is_some()).collect();
    let layers_of = |hs: &[&Hit]| -> Option<i64> { hs.iter().map(|h| h.count).sum() };
    let chosen: Vec<&Hit> = if convs.is_empty() {
        hits.iter().collect()
    } else {
        convs.clone()
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
        out.hidden = chosen
            .iter()
            .find_map(|h| width(ev, h))
            .or_else(|| fed_width(ev, &chosen));
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
/// attention kinds the width per head.
fn width<'t>(ev: &Eval<'t>, h: &Hit<'t>) -> Option<Found> {
    let a = call_args(ev.src(h.call), h.call);
    let node = a
        .keywords
        .iter()
        .find(|(k, _)| matches!(k.as_str(), "out_channels" | "out_features"))
        .map(|(_, v)| *v)
        .or_else(|| a.positional.get(1).copied())?;
    let text = ev.text(node).to_ascii_lowercase();
    if text.contains("out") || text.contains("class") || text.contains("label") {
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
    };
    out.hidden = width(ev, &hit);
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

/// The layer constructions of `class`'s `__init__`, with `locals` bound.
fn hits_in<'t>(
    ev: &Eval<'t>,
    class: Node<'t>,
    locals: &Locals,
    depth: usize,
    outer: i64,
    out: &mut Vec<Hit<'t>>,
    opaque_block: &mut Option<Node<'t>>,
) {
    let Some(init) = ev.method(class, "__init__") else {
        return;
    };
    let calls: Vec<Node> = ev
        .index_of(init)
        .calls
        .iter()
        .copied()
        .filter(|c| c.start_byte() >= init.start_byte() && c.end_byte() <= init.end_byte())
        .collect();
    for call in calls {
        if !super::reachable_with(ev, call, locals) {
            continue;
        }
        let passed = passed_class(ev, call, locals).or_else(|| imported_as(ev, call));
        let name = passed.as_deref().unwrap_or(callee_name(ev.src(call), call));
        let m = multiplicity(ev, call, init, locals);
        let (relations, rel_from, of_dataset) = (m.relations, m.rel_from, m.of_dataset);
        let (from, count) = (m.from, m.layers.map(|c| c * outer));
        let hit = |conv| Hit {
            conv,
            call,
            count,
            relations,
            from: from.clone(),
            rel_from: rel_from.clone(),
            of_dataset: of_dataset.clone(),
            locals: locals.clone(),
        };
        let project = ev.class_of_call(call).filter(|s| *s != class);
        match (project, conv_of(name)) {
            // A class of the project named like PyG's conv implements it
            // (OGB's RGCNConv); its own relation loops count its relations.
            (Some(sub), Some(conv)) if matches!(conv, Conv::Rgcn | Conv::Rgat) => {
                let mut h = hit(Some(conv));
                own_relations(ev, sub, locals, &mut h);
                out.push(h);
            }
            (_, Some(conv)) => out.push(hit(Some(conv))),
            // The project's own message passing (`class RGSNConv(MessagePassing)`):
            // a layer no conv kind of the spec describes, said so.
            (Some(sub), None) if message_passing(ev, sub) => {
                opaque_block.get_or_insert(call);
                let mut h = hit(None);
                own_relations(ev, sub, locals, &mut h);
                out.push(h);
            }
            (Some(sub), None) if depth < MAX_NESTING => {
                if transformer_like(name) {
                    opaque_block.get_or_insert(call);
                }
                let sub_init = ev.method(sub, "__init__");
                let sub_locals = sub_init.map_or_else(Vec::new, |f| ev.bind(f, call, 0, locals, 0));
                let before = out.len();
                hits_in(
                    ev,
                    sub,
                    &sub_locals,
                    depth + 1,
                    count.unwrap_or(1),
                    out,
                    opaque_block,
                );
                for h in &mut out[before..] {
                    if relations > h.relations {
                        h.relations = relations;
                        h.rel_from = rel_from.clone();
                    }
                    if h.of_dataset.is_none() {
                        h.of_dataset = of_dataset.clone();
                    }
                    // The outer loop's bounds count these layers too.
                    h.from.extend(from.iter().cloned());
                }
            }
            (None, None) if matches!(name, "Linear" | "Lin") => out.push(hit(None)),
            (None, None) if basic_gnn(name).is_some() => {
                // A ready-made PyG model inside the class: its layers argument counts.
                let a = call_args(ev.src(call), call);
                let n = keyword(ev, call, LAYERS, locals)
                    .or_else(|| a.positional.get(2).and_then(|n| ev.eval_with(*n, locals)));
                let mut h = hit(basic_gnn(name));
                h.count = n.as_ref().and_then(|f| f.value.as_int());
                h.from = n.map(|f| f.from).unwrap_or_default();
                out.push(h);
            }
            (None, None) if transformer_like(name) => {
                opaque_block.get_or_insert(call);
            }
            _ => {}
        }
    }
}

/// `conv(dims[i], dims[i + 1])` where `conv` is a parameter bound to a
/// class (`GNN(SAGEConv, ...)`): that class's name.
fn passed_class<'t>(ev: &Eval<'t>, call: Node<'t>, locals: &Locals) -> Option<String> {
    let f = call
        .child_by_field_name("function")
        .filter(|f| f.kind() == "identifier")?;
    let b = locals.iter().rfind(|b| b.name == ev.text(f))?;
    let last = b.text.rsplit('.').next()?;
    let is_name = !last.is_empty() && last.chars().all(|c| c.is_alphanumeric() || c == '_');
    is_name.then(|| last.to_string())
}

/// The relations a layer class of the project builds weights for: the
/// relation loops of its own `__init__` (`for _ in range(num_edge_types)`),
/// bound to the layer's construction `h.call`.
fn own_relations<'t>(ev: &Eval<'t>, class: Node<'t>, locals: &Locals, h: &mut Hit<'t>) {
    let Some(init) = ev.method(class, "__init__") else {
        return;
    };
    let inner = ev.bind(init, h.call, 0, locals, 0);
    let inside = |c: &Node| c.start_byte() >= init.start_byte() && c.end_byte() <= init.end_byte();
    for c in ev.index_of(init).calls.iter().copied().filter(inside) {
        let m = multiplicity(ev, c, init, &inner);
        if m.relations > h.relations {
            h.relations = m.relations;
            h.rel_from = m.rel_from;
        }
        if h.of_dataset.is_none() {
            h.of_dataset = m.of_dataset;
        }
    }
}

/// Whether `class` subclasses PyG's `MessagePassing`.
fn message_passing(ev: &Eval, class: Node) -> bool {
    class
        .child_by_field_name("superclasses")
        .is_some_and(|s| ev.text(s).contains("MessagePassing"))
}

/// The library's own name of a class imported under another one
/// (`from torch_geometric.nn import SAGEConv as PyGSAGEConv`).
fn imported_as<'t>(ev: &Eval<'t>, call: Node<'t>) -> Option<String> {
    let f = call
        .child_by_field_name("function")
        .filter(|f| f.kind() == "identifier")?;
    match ev.imported(f)? {
        super::project::Imported::Library(p) => {
            let last = p.rsplit('.').next()?;
            (last != ev.text(f)).then(|| last.to_string())
        }
        _ => None,
    }
}

/// Names of attention blocks no conv kind of the spec describes.
fn transformer_like(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["trans", "attention", "former", "mamba", "performer"]
        .iter()
        .any(|w| n.contains(w))
        && conv_of(name).is_none()
}

/// What the loops around a layer construction say.
struct Multiplicity {
    /// Layers (None: a loop that cannot be computed).
    layers: Option<i64>,
    /// Relations counted from relation loops that can be computed.
    relations: i64,
    /// Where the layer count comes from.
    from: Vec<String>,
    /// Where the relation count comes from.
    rel_from: Vec<String>,
    /// A relation loop that cannot be counted: where its iterable is bound.
    of_dataset: Option<String>,
}

/// What the loops around `call` inside `init` give.
fn multiplicity<'t>(
    ev: &Eval<'t>,
    call: Node<'t>,
    init: Node<'t>,
    locals: &Locals,
) -> Multiplicity {
    let (mut layers, mut relations, mut from, mut rel_from) =
        (Some(1i64), 1i64, Vec::new(), Vec::new());
    let mut of_dataset = None;
    let mut cur = ev.parent(call);
    while let Some(n) = cur {
        if n == init {
            break;
        }
        let iterable = match n.kind() {
            "for_statement" => n.child_by_field_name("right"),
            "list_comprehension"
            | "dictionary_comprehension"
            | "generator_expression"
            | "set_comprehension" => children(n)
                .into_iter()
                .find(|c| c.kind() == "for_in_clause")
                .and_then(|c| c.child_by_field_name("right")),
            _ => None,
        };
        if let Some(it) = iterable {
            let text = ev.text(it).to_ascii_lowercase();
            let found = ev.eval_with(it, locals);
            let trips = found.as_ref().and_then(|f| match &f.value {
                Value::List(v) => Some(v.len() as i64),
                Value::Dict(v) => Some(v.len() as i64),
                _ => None,
            });
            if ["relation", "edge_type", "etype", "metadata", "rel"]
                .iter()
                .any(|w| text.contains(w))
            {
                relations *= trips.unwrap_or(1).max(1);
                if trips.is_none() {
                    // The parameter's argument (`edge_types=data.edge_types`), else the loop.
                    let bound = locals
                        .iter()
                        .rfind(|b| b.name == ev.text(it))
                        .and_then(|b| b.at.clone());
                    of_dataset.get_or_insert(bound.unwrap_or_else(|| ev.at(it)));
                }
                rel_from.extend(found.map(|f| f.from).unwrap_or_default());
            } else {
                layers = layers.zip(trips).map(|(a, b)| a * b);
                from.extend(found.map(|f| f.from).unwrap_or_default());
            }
        }
        cur = ev.parent(n);
    }
    Multiplicity {
        layers,
        relations,
        from,
        rel_from,
        of_dataset,
    }
}

/// Whether `class` (or a class it builds) constructs a conv.
pub fn builds_layers<'t>(ev: &Eval<'t>, class: Node<'t>) -> bool {
    fn go<'t>(ev: &Eval<'t>, class: Node<'t>, depth: usize) -> bool {
        ev.index_of(class).calls.iter().any(|c| {
            c.start_byte() >= class.start_byte()
                && c.end_byte() <= class.end_byte()
                && (conv_of(callee_name(ev.src(*c), *c)).is_some()
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
