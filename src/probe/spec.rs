//! The parts of the observed job spec, each from the events that show it:
//! the dataset from the `dataset` event of the loader's graph (and
//! `to_undirected`), the model from the convolutions, BasicGNN and the
//! optimizer, the loader settings from the training and evaluation loaders.
//! What no event shows is pushed onto `assumed` with the value taken.

use serde_json::{Value, json};

use super::events::{Event, Events};
use super::observed::first;
use crate::error::{Error, Result};

pub(super) fn dataset_json(
    d: Option<&Event>,
    train: &Event,
    evals: &[&Event],
    ev: &Events,
    assumed: &mut Vec<String>,
) -> Result<Value> {
    let d = d.ok_or_else(|| {
        Error::bad("the probe saw loaders but not the graph they sample (not a PyG loader?)")
    })?;
    let nodes = d.u64("num_nodes").unwrap_or(0);
    let sampled = d.u64("csc_edges").or(d.u64("num_edges")).unwrap_or(0);
    let x = d.u64s("x_shape").unwrap_or_default();
    let undirected = first(ev, "to_undirected");
    let seeds = |l: &Event| l.u64("seeds").or(l.u64("input_nodes")).unwrap_or(0);
    let classes = ev
        .events
        .iter()
        .rfind(|e| e.ev == "conv")
        .and_then(|c| c.u64("out_channels"));
    if classes.is_none() {
        assumed.push("dataset.classes: 2 (no convolution seen)".into());
    }
    let mut out = json!({
        "name": "observed",
        "nodes": nodes,
        // The stored edges: before to_undirected when the script ran it.
        "edges": undirected.and_then(|u| u.u64("edges_in")).unwrap_or(sampled),
        "undirected": false,
        "features": x.get(1).copied().unwrap_or(0),
        "feature_dtype": d.str("x_dtype").unwrap_or("float32"),
        "classes": classes.unwrap_or(2),
        "label_dtype": d.str("y_dtype").unwrap_or("int64"),
        "splits": {
            "train": seeds(train),
            "valid": evals.first().map(|l| seeds(l)).unwrap_or(0),
            "test": evals.get(1).map(|l| seeds(l)).unwrap_or(0),
        },
    });
    if let Some(u) = undirected.and_then(|u| u.u64("edges_out")) {
        out["undirected_edges"] = u.into();
    }
    if let Some(h) = d.histogram() {
        out["degree_histogram"] = serde_json::to_value(h)
            .map_err(|e| Error::Internal(format!("degree histogram: {e}")))?;
    }
    Ok(out)
}

pub(super) fn model_json(ev: &Events, assumed: &mut Vec<String>) -> Value {
    let convs: Vec<&Event> = ev.events.iter().filter(|e| e.ev == "conv").collect();
    let conv = match convs.first().and_then(|c| c.str("cls")) {
        Some("GCNConv") => "gcn",
        Some("GATConv" | "GATv2Conv") => "gat",
        Some("GINConv" | "GINEConv") => "gin",
        Some("SAGEConv") => "sage",
        other => {
            assumed.push(format!(
                "model.conv: sage ({} seen)",
                other.unwrap_or("no convolution")
            ));
            "sage"
        }
    };
    let heads = convs.first().and_then(|c| c.u64("heads")).unwrap_or(1);
    // headroom's hidden is per head, as a GATConv's out_channels is.
    let hidden = convs
        .first()
        .and_then(|c| c.u64("out_channels"))
        .unwrap_or(256);
    let optimizer = match first(ev, "optimizer").and_then(|o| o.str("cls")) {
        Some("SGD") => "sgd",
        Some("AdamW") => "adamw",
        Some("Adam") => "adam",
        other => {
            assumed.push(format!(
                "model.optimizer: adam ({})",
                other.unwrap_or("none seen")
            ));
            "adam"
        }
    };
    let mut m = json!({
        "conv": conv, "layers": convs.len().max(1), "hidden": hidden,
        "heads": heads, "optimizer": optimizer,
    });
    match first(ev, "model").and_then(|e| e.fields.get("dropout")?.as_f64()) {
        Some(p) => m["dropout"] = p.into(),
        None => assumed.push("model.dropout: kept masks assumed (not a PyG BasicGNN)".into()),
    }
    m
}

pub(super) fn loader_json(
    train: &Event,
    evals: &[&Event],
    layerwise: Option<&Event>,
    first_pass: Option<f64>,
    passes: &[&Event],
    assumed: &mut Vec<String>,
) -> Value {
    let fanout = train.i64s("num_neighbors").unwrap_or_default();
    let eval_loaders = match (evals.first(), first_pass) {
        _ if layerwise.is_some() => "layerwise",
        (None, _) => "none",
        (Some(e), Some(p)) if e.t > p => "on_demand",
        _ => "resident",
    };
    let workers = train.u64("num_workers").unwrap_or(0);
    let sampler = train.u64("sampler_id");
    let mut l = json!({
        "batch_size": train.u64("batch_size").unwrap_or(1),
        "fanout": fanout,
        "num_workers": workers,
        "persistent_workers": train.bool("persistent_workers").unwrap_or(false),
        "prefetch_factor": train.u64("prefetch_factor").unwrap_or(2),
        "pin_memory": train.bool("pin_memory").unwrap_or(false),
        "eval_loaders": eval_loaders,
        "is_sorted": train.bool("is_sorted").unwrap_or(false),
        "shared_sampler": !evals.is_empty() && evals.iter().all(|e| e.u64("sampler_id") == sampler),
        "evaluate_train": passes.iter().any(|p| p.u64("id") == train.u64("id") && p.bool("grad") == Some(false)),
    });
    if layerwise.is_some() && evals.is_empty() {
        assumed.push("dataset.splits valid/test: 0 (layer-wise inference evaluates every node; no loader of those splits was seen)".into());
    }
    if let Some(e) = layerwise.or(evals.first().copied()) {
        if e.u64("batch_size") != train.u64("batch_size") {
            l["eval_batch_size"] = e.u64("batch_size").into();
        }
        if e.u64("num_workers") != Some(workers) {
            l["eval_num_workers"] = e.u64("num_workers").into();
        }
    }
    if eval_loaders == "on_demand" {
        assumed.push("loader.gc_collect: false (a deleted loader is taken to linger until the next collection)".into());
    }
    l
}

pub(super) fn device(ev: &Events, assumed: &mut Vec<String>) -> &'static str {
    match first(ev, "optimizer").and_then(|o| o.str("device")) {
        Some(d) if d.starts_with("cuda") => "cuda",
        Some(_) => "cpu",
        None => {
            assumed.push("device: cpu (no optimizer seen)".into());
            "cpu"
        }
    }
}

/// The stack the probe read when PyG was imported (`stack` event), with
/// only the fields it knew; None when it never saw PyG imported.
pub(super) fn stack_json(ev: &Events) -> Option<Value> {
    let e = first(ev, "stack")?;
    let mut out = serde_json::Map::new();
    for k in [
        "python",
        "torch",
        "torch_geometric",
        "sampler",
        "pyg_lib",
        "torch_sparse",
        "glibc",
        "kernel",
    ] {
        if let Some(v) = e.str(k) {
            out.insert(k.into(), v.into());
        }
    }
    Some(Value::Object(out))
}
