//! What the script does with its graph: the dataset constructor
//! (`PygNodePropPredDataset(name=...)`, `Reddit`, `OGB_MAG`,
//! `MAG240MDataset`, a `torch.load` of a path), `to_undirected` /
//! `T.ToUndirected()`, the whole graph moved to the GPU (`data.to(device)`,
//! `dataset[0].to(device)`), memory-mapped features (`np.load(...,
//! mmap_mode='r')`), the device, and the epoch loop (`for epoch in
//! range(...)`), and `gc.collect()`.

use tree_sitter::Node;

use super::eval::Eval;
use super::py::{Found, Value, call_args, callee_name};

/// The dataset as the script names it.
#[derive(Debug, Clone)]
pub enum DatasetFind {
    /// A name a profile may have (`ogbn-products`), with where it was decided.
    Named(Found),
    /// Loaded in a way that does not name it (a `torch.load` of a path...): the text.
    Opaque(String, String),
}

/// What the reader learned about the graph and the run.
#[derive(Debug, Clone, Default)]
pub struct GraphFind {
    /// The dataset.
    pub dataset: Option<DatasetFind>,
    /// Where edges are made undirected.
    pub undirected: Option<String>,
    /// Where the whole graph is moved to the GPU.
    pub graph_on_gpu: Option<String>,
    /// Where features are memory-mapped.
    pub mmap: Option<String>,
    /// Where a CPU-only device is chosen.
    pub cpu_only: Option<String>,
    /// Epochs of the training loop.
    pub epochs: Option<Found>,
    /// Where the script runs the cyclic garbage collector (`gc.collect()`).
    pub gc_collect: Option<String>,
}

/// Scans the calls and loops of the script.
pub fn find(ev: &Eval) -> GraphFind {
    let src = ev.src;
    let mut out = GraphFind::default();
    for &call in &ev.index.calls {
        if !super::reachable(ev, call) {
            continue;
        }
        let name = callee_name(src, call);
        let ftext = call
            .child_by_field_name("function")
            .map_or("", |f| src.text_of(f));
        let args = call_args(src, call);
        let kw = |k: &str| args.keywords.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        let named = |v: Value| Some(DatasetFind::Named(Found::at(v, src.at(call))));
        let dataset = match name {
            "PygNodePropPredDataset" | "NodePropPredDataset" | "DglNodePropPredDataset" => {
                kw("name")
                    .or(args.positional.first().copied())
                    .and_then(|n| ev.eval(n))
                    .map(|f| {
                        DatasetFind::Named(Found::joined(
                            f.value.clone(),
                            &[&f, &Found::at(Value::None, src.at(call))],
                        ))
                    })
                    .or_else(|| Some(DatasetFind::Opaque(src.text_of(call).into(), src.at(call))))
            }
            "Reddit" => named(Value::Str("reddit".into())),
            "OGB_MAG" => named(Value::Str("ogbn-mag".into())),
            "MAG240MDataset" => named(Value::Str("mag240m".into())),
            "load" if ftext == "torch.load" && out.dataset.is_none() => {
                Some(DatasetFind::Opaque(src.text_of(call).into(), src.at(call)))
            }
            _ => None,
        };
        if let Some(d) = dataset
            && !matches!(
                (&out.dataset, &d),
                (Some(DatasetFind::Named(_)), DatasetFind::Opaque(..))
            )
        {
            out.dataset = Some(d);
        }
        match name {
            "to_undirected" | "ToUndirected" => {
                out.undirected.get_or_insert_with(|| src.at(call));
            }
            "to" | "cuda" if moves_graph(ev, call) => {
                out.graph_on_gpu.get_or_insert_with(|| src.at(call));
            }
            "load"
                if kw("mmap_mode").is_some()
                    && (ftext.ends_with("np.load") || ftext == "numpy.load") =>
            {
                out.mmap.get_or_insert_with(|| src.at(call));
            }
            "collect" if ftext == "gc.collect" => {
                out.gc_collect.get_or_insert_with(|| src.at(call));
            }
            "device" if ftext == "torch.device" => {
                if let Some(Found {
                    value: Value::Str(d),
                    ..
                }) = args.positional.first().and_then(|n| ev.eval(*n))
                    && d == "cpu"
                {
                    out.cpu_only = Some(src.at(call));
                }
            }
            _ => {}
        }
    }
    out.epochs = ev.index.fors.iter().find_map(|&f| epochs(ev, f));
    out
}

/// `data.to(device)`, `dataset[0].to(device)`, `data = data.cuda()`: the
/// object is the dataset's graph (not the model, not a batch) and the
/// device is not the CPU.
fn moves_graph(ev: &Eval, call: Node) -> bool {
    let src = ev.src;
    let Some(object) = call
        .child_by_field_name("function")
        .and_then(|f| f.child_by_field_name("object"))
    else {
        return false;
    };
    let text = src.text_of(object);
    let graph_like = text.starts_with("dataset[") || {
        object.kind() == "identifier"
            && ev
                .index
                .assignment_at(text, object)
                .is_some_and(|a| src.text_of(a.value).starts_with("dataset["))
    };
    if !graph_like {
        return false;
    }
    let args = call_args(src, call);
    match args.positional.first().and_then(|n| ev.eval(*n)) {
        Some(Found {
            value: Value::Str(d),
            ..
        }) => d != "cpu",
        _ => !args
            .positional
            .first()
            .is_some_and(|n| src.text_of(*n).contains("cpu")),
    }
}

/// `for epoch in range(1, args.epochs + 1)` → the count of epochs.
fn epochs(ev: &Eval, f: Node) -> Option<Found> {
    let src = ev.src;
    let var = src.text_of(f.child_by_field_name("left")?);
    if !var.contains("epoch") {
        return None;
    }
    let right = f.child_by_field_name("right")?;
    if right.kind() != "call" || callee_name(src, right) != "range" {
        return None;
    }
    let args = call_args(src, right);
    let vals: Option<Vec<Found>> = args.positional.iter().map(|n| ev.eval(*n)).collect();
    let vals = vals?;
    let n = match vals.as_slice() {
        [end] => end.value.as_int()?,
        [start, end, ..] => end.value.as_int()? - start.value.as_int()?,
        [] => return None,
    };
    let refs: Vec<&Found> = vals.iter().collect();
    let mut found = Found::joined(Value::Int(n), &refs);
    if !found.from.contains(&src.at(f)) {
        found.from.push(src.at(f));
    }
    Some(found)
}
