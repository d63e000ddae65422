//! What the script does with its graph: the dataset (dataset_name.rs: a
//! PyG or OGB dataset class or name, a file on disk read by datafile.rs),
//! `to_undirected` / `T.ToUndirected()` / `to_symmetric()`, the whole graph
//! moved to the GPU (`data.to(device)`,
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
    /// Read from a file on disk: the graph its arrays make, the file, the line.
    File(super::datafile::FileGraph, String, String),
    /// Loaded in a way that does not name it (a `torch.load` of a path...): the text.
    Opaque(String, String),
    /// Several datasets with profiles, built in places the reader cannot
    /// tell apart (a dispatcher's branches on a name it cannot compute):
    /// each name with where.
    Several(Vec<(String, String)>),
}

/// What the reader learned about the graph and the run.
#[derive(Debug, Clone, Default)]
pub struct GraphFind {
    /// The dataset.
    pub dataset: Option<DatasetFind>,
    /// Where edges are made undirected.
    pub undirected: Option<String>,
    /// `model.inference(...)` with no loader among its arguments: the
    /// evaluation runs over the whole graph at once (OGB's MAG examples).
    pub full_inference: Option<String>,
    /// `T.ToUndirected(merge=False)`: every edge type gets its own reverse
    /// type, those between one node type too (PyG's default merges them).
    pub reverse_every_type: bool,
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
    let mut out = GraphFind::default();
    let mut out_weight = 0;
    // Every used constructor that names a profile: more than one name
    // among them and nothing to choose is no answer, not the first.
    // The training script's own constructors come before its modules'
    // (a helper module may load other datasets for other scripts).
    let mut profiled: Vec<(bool, String, Found)> = Vec::new();
    for call in ev.calls() {
        if !super::reachable(ev, call) {
            continue;
        }
        let src = ev.src(call);
        let name = callee_name(src, call);
        let ftext = call
            .child_by_field_name("function")
            .map_or("", |f| src.text_of(f));
        let args = call_args(src, call);
        let kw = |k: &str| args.keywords.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        if let Some(d) = super::dataset_name::dataset(ev, call) {
            let weight = used_weight(ev, call);
            if let DatasetFind::Named(f) = &d
                && let Value::Str(n) = &f.value
                && weight == 1
                && let Ok(p) = crate::profiles::dataset(n)
                && !profiled.iter().any(|(_, q, _)| *q == p.name)
            {
                let own = std::ptr::eq(src, &ev.project.sources[0]);
                profiled.push((own, p.name, f.clone()));
            }
            if better(&out.dataset, out_weight, &d, weight) {
                out.dataset = Some(d);
                out_weight = weight;
            }
        }
        match name {
            "to_undirected" | "ToUndirected" | "to_symmetric" | "ToSymmetric" => {
                if out.undirected.is_none() && name == "ToUndirected" {
                    out.reverse_every_type = kw("merge")
                        .and_then(|m| ev.eval(m))
                        .is_some_and(|m| m.value == Value::Bool(false));
                }
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
            "inference"
                if !args
                    .positional
                    .iter()
                    .chain(args.keywords.iter().map(|(_, v)| v))
                    .any(|a| {
                        let t = ev.text(*a).to_ascii_lowercase();
                        ["loader", "sampler", "iter", "subgraph"]
                            .iter()
                            .any(|w| t.contains(w))
                    }) =>
            {
                out.full_inference.get_or_insert_with(|| src.at(call));
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
    let own = profiled.iter().any(|(o, ..)| *o);
    let mut level: Vec<(String, Found)> = profiled
        .into_iter()
        .filter(|(o, ..)| *o == own)
        .map(|(_, n, f)| (n, f))
        .collect();
    if level.len() > 1 {
        let each = level.iter().map(|(n, f)| (n.clone(), f.origin())).collect();
        out.dataset = Some(DatasetFind::Several(each));
    } else if let Some((_, f)) = level.pop() {
        out.dataset = Some(DatasetFind::Named(f));
    }
    out.epochs = ev
        .fors()
        .find_map(|f| epochs(ev, f))
        .or_else(|| lightning_epochs(ev))
        .or_else(|| passes(ev));
    // Nothing read names a profile: the script's `--dataset` argument, when it names one.
    if !matches!(
        &out.dataset,
        Some(DatasetFind::Named(_) | DatasetFind::File(..))
    ) && let Some(f) = ["dataset", "dataset_name", "data", "data_name"]
        .iter()
        .find_map(|k| ev.args.get(*k))
        && let Value::Str(s) = &f.value
        && crate::profiles::dataset(s).is_ok()
    {
        out.dataset = Some(DatasetFind::Named(f.clone()));
    }
    out
}

/// 1 for a dataset built to be used; 0 for one built and dropped (a
/// download step) or built in a Lightning `prepare_data` (which downloads:
/// `setup` loads).
fn used_weight<'t>(ev: &Eval<'t>, call: Node<'t>) -> u8 {
    let dropped = ev
        .parent(call)
        .is_some_and(|p| p.kind() == "expression_statement");
    let prepare = ev
        .enclosing_function(call)
        .is_some_and(|f| super::index::def_name(ev.src(f), f) == "prepare_data");
    u8::from(!dropped && !prepare)
}

/// Whether `new` says more than what was found before: a name over a
/// file over text, a dataset used over one dropped; the first of equals.
fn better(old: &Option<DatasetFind>, old_weight: u8, new: &DatasetFind, new_weight: u8) -> bool {
    let rank = |d: &DatasetFind| match d {
        DatasetFind::Named(Found {
            value: Value::Str(n),
            ..
        }) if crate::profiles::dataset(n).is_ok() => 3,
        DatasetFind::File(..) => 2,
        DatasetFind::Named(_) => 1,
        DatasetFind::Opaque(..) | DatasetFind::Several(_) => 0,
    };
    old.as_ref()
        .is_none_or(|o| (rank(new), new_weight) > (rank(o), old_weight))
}

/// `Trainer(max_epochs=...)` (PyTorch Lightning) when no epoch loop says it.
fn lightning_epochs(ev: &Eval) -> Option<Found> {
    ev.calls()
        .filter(|c| callee_name(ev.src(*c), *c) == "Trainer" && super::reachable(ev, *c))
        .find_map(|c| super::model::keyword(ev, c, &["max_epochs"], &Vec::new()))
}

/// `data.to(device)`, `dataset[0].to(device)`, `data = data.cuda()`: the
/// object is the dataset's graph (not the model, not a batch) and the
/// device is not the CPU.
fn moves_graph<'t>(ev: &Eval<'t>, call: Node<'t>) -> bool {
    let src = ev.src(call);
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
                .index_of(object)
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

/// No epoch loop: a function that loops over a loader (`def train(): for
/// batch in loader: ...`) called at the top level of the script, each call
/// one pass over the data (PyG's hierarchical_sampling.py calls it twice).
fn passes(ev: &Eval) -> Option<Found> {
    let f = ev.fors().find_map(|f| {
        let right = f.child_by_field_name("right")?;
        ev.text(right).contains("loader").then_some(())?;
        ev.enclosing_function(f)
    })?;
    let name = ev.text(f.child_by_field_name("name")?).to_string();
    let calls: Vec<String> = ev
        .index_of(f)
        .calls_of(&name)
        .filter(|c| ev.enclosing_function(*c).is_none() && super::reachable(ev, *c))
        .filter(|c| {
            // Not inside a loop of the top level (that is an epoch loop not
            // counted as such, e.g. `while`): straight-line calls only.
            let mut p = ev.parent(*c);
            while let Some(n) = p {
                if matches!(n.kind(), "for_statement" | "while_statement") {
                    return false;
                }
                p = ev.parent(n);
            }
            true
        })
        .map(|c| ev.at(c))
        .collect();
    if calls.is_empty() {
        return None;
    }
    Some(Found {
        value: Value::Int(calls.len() as i64),
        from: calls,
    })
}

/// `for epoch in range(1, args.epochs + 1)` → the count of epochs.
fn epochs<'t>(ev: &Eval<'t>, f: Node<'t>) -> Option<Found> {
    let src = ev.src(f);
    let var = src.text_of(f.child_by_field_name("left")?);
    let right = f.child_by_field_name("right")?;
    if !var.contains("epoch") && !src.text_of(right).contains("epoch") {
        return None;
    }
    if right.kind() != "call" {
        return None;
    }
    // `tqdm(range(1, n))`: a progress bar around the range; `trange(1, n)`
    // is tqdm's range.
    let range = match callee_name(src, right) {
        "range" | "trange" => right,
        "tqdm" => call_args(src, right)
            .positional
            .first()
            .copied()
            .filter(|r| r.kind() == "call" && callee_name(src, *r) == "range")?,
        _ => return None,
    };
    let args = call_args(src, range);
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
