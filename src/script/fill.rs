//! The dataset, load, device, epoch and model fields of the job, from what
//! graph.rs and model.rs found, into the ledger of infer.rs.

use super::graph::{DatasetFind, GraphFind};
use super::infer::Ledger;
use super::model::ModelFind;
use super::py::{Found, Value};
use crate::spec::Device;

/// The words of the warning about a graph moved whole to the GPU, which a
/// job planned on the CPU (`--device cpu`) drops.
pub const GRAPH_TO_GPU: &str = "moves the whole graph to the GPU";

/// Fills the dataset, load and device fields.
pub fn graph(l: &mut Ledger, g: &GraphFind) {
    match &g.dataset {
        Some(DatasetFind::Named(Found {
            value: Value::Str(name),
            from,
        })) => {
            // `--dataset products`: the profile's own name (ogbn-products),
            // so the job says which graph was planned.
            let name = &crate::profiles::dataset(name).map_or_else(|_| name.clone(), |p| p.name);
            l.spec.dataset = crate::spec::DatasetRef::Name(name.clone());
            l.spec.name = Some(name.clone());
            l.read("dataset", name.clone().into(), from.join(", "));
        }
        Some(DatasetFind::Named(f)) => l
            .missing
            .push(("dataset".into(), format!("{:?} at {}", f.value, f.origin()))),
        Some(DatasetFind::File(g, file, at)) => {
            let name = std::path::Path::new(file)
                .file_name()
                .map_or(file.clone(), |n| n.to_string_lossy().to_string());
            inline(l, g, &name, format!("{at}, {file}"));
        }
        Some(DatasetFind::Built(g, from)) => inline(
            l,
            g,
            "generated graph",
            format!("{from} (a graph the script generates)"),
        ),
        Some(DatasetFind::Opaque(text, at)) => l.missing.push((
            "dataset".into(),
            format!(
                "{at} loads `{}`, which names no dataset profile",
                crate::output::shown_within(text, 80)
            ),
        )),
        Some(DatasetFind::Several(names)) => {
            let each: Vec<String> = names.iter().map(|(n, at)| format!("{n} at {at}")).collect();
            l.missing.push((
                "dataset".into(),
                format!(
                    "the scripts build several datasets ({}) and which one runs is decided where the reader cannot compute",
                    each.join(", ")
                ),
            ))
        }
        None => l.missing.push((
            "dataset".into(),
            "no dataset constructor or torch.load found".into(),
        )),
    }
    match &g.degrees {
        Some(Ok((h, file))) => with_degrees(l, h, file, g.undirected.as_deref()),
        Some(Err(why)) => l.assume("dataset.degree_histogram", "not read".into(), why.clone()),
        None => {}
    }
    if let Some(db) = &g.database {
        let pool = db.buffer_pool.map_or_else(
            || "its buffer pool's size is not given".to_string(),
            |b| format!("its buffer pool is {}", crate::units::fmt_bytes(b)),
        );
        l.assume(
            "load.features",
            "in memory".into(),
            format!(
                "{} keeps the graph and features in a Kùzu database ({pool}): planned as if the dataset were held in memory; Kùzu's own use was not measured",
                db.at
            ),
        );
    }
    match &g.undirected {
        Some(at) => {
            l.spec.load.to_undirected = true;
            l.read("load.to_undirected", true.into(), at.clone());
        }
        None => l.read(
            "load.to_undirected",
            false.into(),
            "no to_undirected / ToUndirected call".into(),
        ),
    }
    if let Some(at) = &g.features_replaced {
        l.spec.load.replaces_features = true;
        l.read("load.replaces_features", true.into(), at.clone());
    }
    if let Some(at) = &g.cpu_only {
        l.spec.device = Device::Cpu;
        l.read("device", "cpu".into(), at.clone());
    } else {
        l.assume(
            "device",
            "cuda".into(),
            "no torch.device('cpu') in the script",
        );
    }
    if let Some(at) = &g.graph_on_gpu {
        l.warnings.push(format!(
            "{at} {GRAPH_TO_GPU}; headroom's GPU figures count the batches, not a resident graph: add the graph's size to the GPU peak"
        ));
    }
    if let Some(at) = &g.mmap {
        l.warnings.push(format!(
            "{at} memory-maps features: they are page cache, charged by a cgroup limit as they are read; headroom plans them as loaded into RAM (the upper bound)"
        ));
    }
    if let Some(at) = &g.gc_collect {
        l.spec.loader.gc_collect = true;
        l.read("loader.gc_collect", true.into(), at.clone());
    }
    if let Some(f) = &g.eval_every
        && let Some(n) = f.value.as_int().and_then(|n| u32::try_from(n).ok())
    {
        l.spec.loader.eval_every = n;
        l.read("loader.eval_every", n.into(), f.origin());
    }
    match &g.epochs {
        Some(f) => match f.value.as_int().and_then(|e| u32::try_from(e).ok()) {
            Some(e) => {
                l.spec.epochs = e;
                l.read("epochs", e.into(), f.origin());
            }
            None => l.assume(
                "epochs",
                l.spec.epochs.into(),
                "the epoch loop's range is not a number",
            ),
        },
        None => l.assume(
            "epochs",
            l.spec.epochs.into(),
            "no `for epoch in range(...)` loop found",
        ),
    }
}

/// The dataset as an inline profile of `g`'s sizes, named `name`.
fn inline(l: &mut Ledger, g: &crate::script::datafile::FileGraph, name: &str, from: String) {
    let text = format!(
        "{{name: {name:?}, nodes: {}, edges: {}, features: {}, feature_dtype: {}}}",
        g.nodes, g.edges, g.features, g.feature_dtype
    );
    match crate::yaml::from_str::<crate::profiles::DatasetProfile>(&text) {
        Ok(p) => {
            l.spec.dataset = crate::spec::DatasetRef::Inline(Box::new(p));
            l.read(
                "dataset",
                serde_json::json!({"nodes": g.nodes, "edges": g.edges, "features": g.features}),
                from,
            );
        }
        Err(e) => l.missing.push(("dataset".into(), format!("{from}: {e}"))),
    }
}

/// Gives the dataset the degree histogram read from `file`, so the
/// sampler's batches follow the graph's own degrees; `undirected` is the
/// line that makes the graph undirected, whose coalesced edge count the
/// histogram's degree sums give (`undirected_edges`). The dataset's own
/// validation judges both.
fn with_degrees(
    l: &mut Ledger,
    h: &crate::profiles::DegreeHistogram,
    file: &str,
    undirected: Option<&str>,
) {
    let profile = match &l.spec.dataset {
        crate::spec::DatasetRef::Name(n) => crate::profiles::dataset(n).ok(),
        crate::spec::DatasetRef::Inline(p) => Some((**p).clone()),
    };
    let Some(mut p) = profile else { return };
    p.degree_histogram = Some(h.clone());
    let coalesced = undirected
        .and(h.degree_sums.as_ref())
        .map(|s| s.iter().sum::<u64>());
    if coalesced.is_some() {
        p.undirected_edges = coalesced;
    }
    if let Err(e) = p.validate() {
        l.assume(
            "dataset.degree_histogram",
            "not read".into(),
            format!("{file}: {e}"),
        );
        return;
    }
    let from = match (undirected, coalesced) {
        (Some(at), Some(e)) => {
            format!("{file}, made undirected as {at} does: {e} edges after coalescing")
        }
        _ => file.to_string(),
    };
    l.spec.dataset = crate::spec::DatasetRef::Inline(Box::new(p));
    l.read("dataset.degree_histogram", "measured".into(), from);
}

/// Fills the model fields.
pub fn model(l: &mut Ledger, m: &ModelFind, reverse_every_type: bool) {
    let at = m.at.clone().unwrap_or_default();
    match (&m.conv, &m.unsized_at) {
        (_, Some(at)) => l.assume(
            "model.conv",
            "sage".into(),
            format!("{at} builds a model no conv kind of the spec describes: planned as GraphSAGE of the same width and depth"),
        ),
        (Some((c, from)), None) => {
            l.spec.model.conv = *c;
            l.read(
                "model.conv",
                serde_json::to_value(c).unwrap_or_default(),
                from.clone(),
            );
        }
        (None, None) => l.assume(
            "model.conv",
            "sage".into(),
            match &m.at {
                Some(at) => format!("{at}: the model's layers were not found"),
                None => "no model found (no optimizer's parameters and no GNN constructor)".into(),
            },
        ),
    }
    if let Some(r) = m
        .relations
        .as_ref()
        .and_then(|f| f.value.as_int().filter(|r| *r > 1).map(|r| (r, f.origin())))
    {
        l.spec.model.relations = u32::try_from(r.0).ok();
        l.read("model.relations", r.0.into(), r.1);
    } else if let Some(at) = &m.hetero_of_dataset {
        let undirected = l.spec.load.to_undirected;
        let profile = match &l.spec.dataset {
            crate::spec::DatasetRef::Name(n) => crate::profiles::dataset(n).ok(),
            crate::spec::DatasetRef::Inline(p) => Some((**p).clone()),
        };
        let relations = profile.and_then(|p| match (undirected, reverse_every_type) {
            (true, true) => p.relations.map(|r| 2 * r),
            (true, false) => p.relations_undirected.or(p.relations),
            (false, _) => p.relations,
        });
        match relations {
            Some(r) => {
                l.spec.model.relations = Some(r);
                l.read("model.relations", r.into(), format!("{at} (the dataset's edge types)"));
            }
            None => l.assume("model.relations", 1.into(), format!("{at} makes the model heterogeneous; the dataset's profile does not list its edge types: planned with one set of weights")),
        }
    }
    let num = |l: &mut Ledger, field: &str, f: &Option<Found>, default: u64| -> Option<u64> {
        match f.as_ref().and_then(|f| {
            f.value
                .as_int()
                .filter(|v| *v > 0)
                .map(|v| (v as u64, f.origin()))
        }) {
            Some((v, from)) => {
                l.read(field, v.into(), from);
                Some(v)
            }
            None => {
                let why = if at.is_empty() {
                    "no model constructor found".to_string()
                } else {
                    format!("not computable from the constructor at {at}")
                };
                l.assume(field, default.into(), why);
                None
            }
        }
    };
    if let Some(h) = num(l, "model.hidden", &m.hidden, l.spec.model.hidden) {
        l.spec.model.hidden = h;
    }
    if let Some(n) = num(l, "model.layers", &m.layers, u64::from(l.spec.model.layers)) {
        l.spec.model.layers = u32::try_from(n).unwrap_or(u32::MAX);
    }
    if matches!(
        l.spec.model.conv,
        crate::spec::Conv::Gat
            | crate::spec::Conv::Gatv2
            | crate::spec::Conv::Transformer
            | crate::spec::Conv::Rgat
    ) && let Some(h) = num(l, "model.heads", &m.heads, 1)
    {
        l.spec.model.heads = u32::try_from(h).unwrap_or(u32::MAX);
    }
    if let Some(p) = m
        .dropout
        .as_ref()
        .and_then(|f| f.value.as_float().map(|p| (p, f.origin())))
    {
        l.spec.model.dropout = Some(p.0);
        l.read("model.dropout", p.0.into(), p.1);
    }
    match &m.optimizer {
        Some((o, from)) => {
            l.spec.model.optimizer = *o;
            l.read(
                "model.optimizer",
                serde_json::to_value(o).unwrap_or_default(),
                from.clone(),
            );
        }
        None => l.assume(
            "model.optimizer",
            "adam".into(),
            "no torch.optim optimizer found",
        ),
    }
}
