//! The layer constructions a class's `__init__` makes, each counted as
//! often as the loops around it run and for as many relations as its
//! relation loops give: classes of the project followed into, PyG's convs
//! by their names (also imported under another name), the project's own
//! message-passing layers and attention blocks said to be assumed
//! (model_shape.rs turns them into the model's shape).

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::model::{basic_gnn, conv_of, keyword};
use super::model_shape::{LAYERS, MAX_NESTING};
use super::py::{Value, call_args, callee_name, children};
use crate::spec::Conv;

/// One layer construction found in a model.
pub(super) struct Hit<'t> {
    /// The conv kind; None for a linear layer.
    pub(super) conv: Option<Conv>,
    pub(super) call: Node<'t>,
    /// How many times it runs as a layer (None: a loop that cannot be computed).
    pub(super) count: Option<i64>,
    /// How many relations it is built for (1 when not in a relation loop).
    pub(super) relations: i64,
    /// The places its count comes from (the loop bounds' values).
    pub(super) from: Vec<String>,
    /// The places its relation count comes from.
    pub(super) rel_from: Vec<String>,
    /// A relation loop over what the reader cannot count (`for edge_type in
    /// edge_types` with `edge_types=data.edge_types`): the dataset's edge
    /// types, named by the place it is bound.
    pub(super) of_dataset: Option<String>,
    pub(super) locals: Locals,
    /// A message-passing layer of the project's own (no conv kind of the
    /// spec): the model's layers are these, not its Linear ones.
    pub(super) own_message_passing: bool,
}
/// The layer constructions of `class`'s `__init__`, with `locals` bound.
pub(super) fn hits_in<'t>(
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
        let bound = bound_class(ev, call, locals);
        let passed = passed_class(ev, call, locals)
            .or_else(|| imported_as(ev, call))
            .or_else(|| bound.map(|b| last_name(ev.text(b))));
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
            own_message_passing: false,
        };
        // `self.init_conv(...)`: the convs the class's factory method returns.
        let made = super::model_factory::convs_of_method(ev, class, call, locals);
        if !made.is_empty() {
            for (conv, inner, bound) in made {
                let mut h = hit(Some(conv));
                h.call = inner;
                h.locals = bound;
                h.from.push(ev.at(call));
                out.push(h);
            }
            continue;
        }
        let project = ev
            .class_of_call(call)
            .or_else(|| bound.and_then(|b| ev.class_named(ev.project.module_of(b), ev.text(b))))
            .filter(|s| *s != class);
        match (project, conv_of(name)) {
            // A class of the project named like PyG's conv implements it
            // (OGB's RGCNConv); its own relation loops count its relations.
            (Some(sub), Some(conv)) if matches!(conv, Conv::Rgcn | Conv::Rgat) => {
                let mut h = hit(Some(conv));
                own_relations(ev, sub, locals, &mut h);
                out.push(h);
            }
            (_, Some(conv)) => out.push(hit(Some(conv))),
            // The project's own message passing (`class RGSNConv(MessagePassing)`,
            // or a layer that aggregates by hand: hand_conv.rs): a layer no
            // conv kind of the spec describes, said so.
            // A MessagePassing subclass that never propagates (a conv's
            // "PeerMLP"): one MLP layer where it is built.
            (Some(sub), None)
                if message_passing(ev, sub) && !super::hand_conv::propagates(ev, sub) =>
            {
                out.push(hit(Some(Conv::Mlp)));
            }
            (Some(sub), None)
                if message_passing(ev, sub)
                    || super::hand_conv::aggregates(ev, sub)
                        && !super::model_shape::builds_layers(ev, sub) =>
            {
                opaque_block.get_or_insert(call);
                let mut h = hit(None);
                h.own_message_passing = true;
                own_relations(ev, sub, locals, &mut h);
                out.push(h);
            }
            (Some(sub), None) if depth < MAX_NESTING => {
                if transformer_like(name)
                    && !layer_summary(ev, sub)
                    && !super::hand_conv::per_node_attention(ev, sub)
                {
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
                    // The outer loop's bounds count these layers too, and
                    // so does the line that builds the block each is in
                    // (`self.layer1 = RGTLayer(...)`, `self.layer2 = ...`).
                    h.from.extend(from.iter().cloned());
                    h.from.push(ev.at(call));
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
            // One of PyG's layers no conv kind describes (HGTConv): the
            // model's message passing, named in place of a project block
            // around it (`HGTTransformerLayer`) that was met first.
            (None, None) if super::model::other_pyg_layer(ev, call) => {
                if opaque_block.is_none_or(|b| !super::model::other_pyg_layer(ev, b)) {
                    *opaque_block = Some(call);
                }
                // A conv with weights is a layer of the model; a
                // propagation (APPNP) leaves the depth to the Linears.
                if name.ends_with("Conv") {
                    let mut h = hit(None);
                    h.own_message_passing = true;
                    out.push(h);
                }
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

/// `base_conv(dim, dim)` where `base_conv` is a name bound to a class
/// before (class_alias.rs): the name it stands for.
fn bound_class<'t>(ev: &Eval<'t>, call: Node<'t>, locals: &Locals) -> Option<Node<'t>> {
    let f = call
        .child_by_field_name("function")
        .filter(|f| f.kind() == "identifier")?;
    super::class_alias::resolve_with(ev, f, locals).map(|(class, _)| class)
}

/// `SAGEConv` of `torch_geometric.nn.SAGEConv`.
fn last_name(text: &str) -> String {
    text.rsplit('.').next().unwrap_or(text).to_string()
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

/// Whether a project class named like attention is a summary over the
/// layers' outputs rather than attention between nodes: its `__init__`
/// builds a recurrent layer (LSTM or GRU) and nothing transformer-like.
/// PyG's `JumpingKnowledge(mode='lstm')` is built so (a bidirectional LSTM
/// over `[nodes, layers, channels]` and a Linear scoring each layer), and
/// projects copy it under names like `AttentionSummarize` (DenceGCN): its
/// cost is per node, like a head, so the model keeps its convs' shape.
fn layer_summary<'t>(ev: &Eval<'t>, class: Node<'t>) -> bool {
    let Some(init) = ev.method(class, "__init__") else {
        return false;
    };
    let inside = |c: &Node| c.start_byte() >= init.start_byte() && c.end_byte() <= init.end_byte();
    let names: Vec<&str> = ev
        .index_of(init)
        .calls
        .iter()
        .filter(|c| inside(c))
        .map(|c| callee_name(ev.src(*c), *c))
        .collect();
    // `transformer_like` leaves out PyG's convs; TransformerConv is one,
    // and a class that builds it is a layer, not a summary.
    names.iter().any(|n| matches!(*n, "LSTM" | "GRU"))
        && !names
            .iter()
            .any(|n| transformer_like(n) || n.contains("Transformer"))
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
