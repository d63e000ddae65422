//! The dataset, load, device, epoch and model fields of the job, from what
//! graph.rs and model.rs found, into the ledger of infer.rs.

use super::graph::{DatasetFind, GraphFind};
use super::infer::Ledger;
use super::model::ModelFind;
use super::py::{Found, Value};
use crate::spec::Device;

/// Fills the dataset, load and device fields.
pub fn graph(l: &mut Ledger, g: &GraphFind) {
    match &g.dataset {
        Some(DatasetFind::Named(Found {
            value: Value::Str(name),
            from,
        })) => {
            l.spec.dataset = crate::spec::DatasetRef::Name(name.clone());
            l.spec.name = Some(name.clone());
            l.read("dataset", name.clone().into(), from.join(", "));
        }
        Some(DatasetFind::Named(f)) => l
            .missing
            .push(("dataset".into(), format!("{:?} at {}", f.value, f.origin()))),
        Some(DatasetFind::Opaque(text, at)) => l.missing.push((
            "dataset".into(),
            format!(
                "{at} loads `{}`, which names no dataset profile",
                crate::output::shown_within(text, 80)
            ),
        )),
        None => l.missing.push((
            "dataset".into(),
            "no dataset constructor or torch.load found".into(),
        )),
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
            "{at} moves the whole graph to the GPU; headroom's GPU figures count the batches, not a resident graph: add the graph's size to the GPU peak"
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

/// Fills the model fields.
pub fn model(l: &mut Ledger, m: &ModelFind) {
    let at = m.at.clone().unwrap_or_default();
    match &m.conv {
        Some((c, from)) => {
            l.spec.model.conv = *c;
            l.read(
                "model.conv",
                serde_json::to_value(c).unwrap_or_default(),
                from.clone(),
            );
        }
        None => l.assume(
            "model.conv",
            "sage".into(),
            "no GraphSAGE/GCN/GAT/GIN model or SAGEConv/GCNConv/GATConv/GINConv found",
        ),
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
    if l.spec.model.conv == crate::spec::Conv::Gat
        && let Some(h) = num(l, "model.heads", &m.heads, 1)
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
