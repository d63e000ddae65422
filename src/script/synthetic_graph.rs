//! A graph the script generates instead of loading (benchmarks, examples):
//! `Data(x=torch.randn(N, F), edge_index=torch.randint(0, N, (2, E)))`,
//! sized by the shapes of the tensors given (tensor_shape.rs). Built in a
//! function, the function's parameters are bound to the first call of it
//! that runs (`create_graph(num_nodes=100_000)`).

use tree_sitter::Node;

use super::datafile::FileGraph;
use super::eval::Eval;
use super::graph::DatasetFind;
use super::py::{call_args, callee_name};
use super::tensor_shape::shape;

/// The graph `call` (a `Data(...)` of generated tensors) makes, if it is one.
pub fn graph<'t>(ev: &Eval<'t>, call: Node<'t>) -> Option<DatasetFind> {
    let src = ev.src(call);
    if callee_name(src, call) != "Data" {
        return None;
    }
    let args = call_args(src, call);
    let arg = |k: &str, i: usize| {
        args.keywords
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| *v)
            .or_else(|| args.positional.get(i).copied())
    };
    let (x, edge_index) = (arg("x", 0)?, arg("edge_index", 1)?);
    let locals = match ev.enclosing_function(call) {
        Some(f) => ev
            .call_sites(f)
            .into_iter()
            .find(|(site, _)| super::reachable(ev, *site))
            .map(|(site, spawned)| ev.bind_with_defaults(f, site, spawned))
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let xs = shape(ev, x, &locals, 0)?;
    let es = shape(ev, edge_index, &locals, 0)?;
    let [rows, features] = xs.dims[..] else {
        return None;
    };
    let [2, edges] = es.dims[..] else {
        return None;
    };
    let mut from = vec![src.at(call)];
    let mut nodes = rows;
    if let Some(n) = args
        .keywords
        .iter()
        .find(|(k, _)| k == "num_nodes")
        .map(|(_, v)| *v)
        && let Some(f) = ev.eval_with(n, &locals)
        && let Some(v) = f.value.as_int()
    {
        nodes = v;
        from.extend(f.from);
    }
    for f in xs.from.into_iter().chain(es.from) {
        if !from.contains(&f) {
            from.push(f);
        }
    }
    let g = FileGraph {
        nodes: u64::try_from(nodes).ok()?,
        edges: u64::try_from(edges).ok()?,
        features: u64::try_from(features).ok()?,
        feature_dtype: "float32",
    };
    Some(DatasetFind::Built(g, from.join(", ")))
}
