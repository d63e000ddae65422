//! What the probe saw, as a job spec in the ordinary schema (so `plan` takes
//! it as it is) with the fields it had to assume named, and the phase
//! boundaries of the run: load until the first loader is built, building
//! until the first pass, then train passes and everything else (evaluation
//! passes, on-demand loaders) as evaluate.

use serde_json::{Value, json};

use super::events::{Event, Events, Mem};
use crate::error::{Error, Result};
use crate::spec::JobSpec;

/// One time span of a phase, wall-clock seconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Span {
    /// `load`, `build_loaders`, `train` or `evaluate`.
    pub phase: &'static str,
    /// Start.
    pub from: f64,
    /// End.
    pub to: f64,
}

/// The observed job.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Observed {
    /// The job as a spec (JSON of `JobSpec`).
    pub spec: Value,
    /// Fields the probe could not see, with the value taken.
    pub assumed: Vec<String>,
    /// The phases in time order.
    pub spans: Vec<Span>,
    /// The main process's memory once torch (and PyG) were imported, before data.
    pub runtime_mem: Option<Mem>,
    /// Training passes seen (epochs).
    pub epochs: u32,
    /// Seconds the probe's own work took inside the job, and the seconds
    /// from the interpreter's start to its exit (when it exited normally).
    pub probe_seconds: Option<(f64, f64)>,
    /// The main process's memory as the first training pass starts (the
    /// data loaded, the loaders built, no batch yet).
    pub first_pass_mem: Option<Mem>,
    /// Private pages (USS) of each training loader worker, read at the
    /// third batch of the first training passes.
    pub train_worker_uss: Vec<u64>,
    /// USS of workers of other loaders, idle then (persistent workers).
    pub idle_worker_uss: Vec<u64>,
}

/// The USS of the `procs` events (of passes of `loader`, or of all), by role.
fn worker_uss(ev: &Events, loader: Option<Option<u64>>, role: &str) -> Vec<u64> {
    ev.events
        .iter()
        .filter(|e| e.ev == "procs" && loader.is_none_or(|l| e.u64("id") == l))
        .filter_map(|e| e.fields.get("procs")?.as_array().cloned())
        .flatten()
        .filter(|p| p["role"] == role)
        .filter_map(|p| Some(p["Private_Clean"].as_u64()? + p["Private_Dirty"].as_u64()?))
        .collect()
}

fn loaders(ev: &Events) -> Vec<&Event> {
    ev.events.iter().filter(|e| e.ev == "loader").collect()
}

pub(super) fn first<'a>(ev: &'a Events, name: &str) -> Option<&'a Event> {
    ev.events.iter().find(|e| e.ev == name)
}

/// A loader of every node with every neighbour at each hop
/// (`num_neighbors=[-1]`, no input nodes): PyG's examples' `subgraph_loader`
/// for layer-wise inference.
fn is_subgraph_loader(l: &Event, nodes: Option<u64>) -> bool {
    let fanout = l.i64s("num_neighbors").unwrap_or_default();
    !fanout.is_empty()
        && fanout.iter().all(|&f| f < 0)
        && nodes.is_some_and(|n| n > 0 && l.u64("seeds") == Some(n))
}

/// Reads the job out of the events; an error when no loader was seen (the
/// job never built one, or the probe was disabled before it did).
pub fn observe(ev: &Events) -> Result<Observed> {
    let all = loaders(ev);
    let passes: Vec<&Event> = ev.events.iter().filter(|e| e.ev == "pass_start").collect();
    // The training loader: shuffled, else the first iterated with gradients.
    let train = all
        .iter()
        .find(|l| l.bool("shuffle") == Some(true))
        .or_else(|| {
            let id = passes
                .iter()
                .find(|p| p.bool("grad") == Some(true))?
                .u64("id");
            all.iter().find(|l| l.u64("id") == id)
        })
        .or(all.first())
        .copied()
        .ok_or_else(|| {
            Error::bad("the probe saw no DataLoader or NeighborLoader being built".to_string())
        })?;
    let train_id = train.u64("id");
    let mut evals: Vec<&Event> = all
        .iter()
        .filter(|l| l.u64("id") != train_id)
        .copied()
        .collect();
    let dataset = ev
        .events
        .iter()
        .find(|e| e.ev == "dataset" && e.u64("data_id") == train.u64("data_id"));
    // PyG's layer-wise inference: a full-neighbour loader over every node
    // (`subgraph_loader`), not a split's loader; its seeds are all nodes.
    let nodes = dataset.and_then(|d| d.u64("num_nodes"));
    let layerwise = evals
        .iter()
        .position(|l| is_subgraph_loader(l, nodes))
        .map(|i| evals.remove(i));
    let first_pass = passes.first().map(|p| p.t);
    let mut assumed = Vec::new();
    let mut spec = json!({
        "name": "observed",
        "dataset": super::spec::dataset_json(dataset, train, evals.as_slice(), ev, &mut assumed)?,
        "model": super::spec::model_json(ev, &mut assumed),
        "loader": super::spec::loader_json(train, &evals, layerwise, first_pass, &passes, &mut assumed),
        "load": {"to_undirected": first(ev, "to_undirected").is_some()},
        "device": super::spec::device(ev, &mut assumed),
        "epochs": passes
            .iter()
            .filter(|p| p.u64("id") == train_id && p.bool("grad") != Some(false))
            .count()
            .max(1),
    });
    if let Some(stack) = super::spec::stack_json(ev) {
        spec["stack"] = stack;
    }
    if train.bool("is_sorted") == Some(true) {
        assumed.push("load.sort_edges: false (is_sorted: edge_index taken as stored sorted, not sorted by the script)".into());
    }
    // The spec must be one plan reads.
    serde_json::from_value::<JobSpec>(spec.clone())
        .map_err(|e| Error::Internal(format!("observed job spec: {e}")))?;
    let runtime = ev
        .events
        .iter()
        .filter(|e| e.ev == "import")
        .find(|e| e.str("name") == Some("torch_geometric"))
        .or_else(|| first(ev, "import"));
    let probe_seconds = match (first(ev, "start"), first(ev, "exit")) {
        (Some(s), Some(x)) => x
            .fields
            .get("probe_s")
            .and_then(Value::as_f64)
            .map(|p| (p, x.t - s.t)),
        _ => None,
    };
    let train_pass = passes
        .iter()
        .find(|p| p.u64("id") == train_id && p.bool("grad") != Some(false));
    Ok(Observed {
        first_pass_mem: train_pass.map(|p| p.mem),
        train_worker_uss: worker_uss(ev, Some(train_id), "worker"),
        idle_worker_uss: worker_uss(ev, None, "other"),
        probe_seconds,
        epochs: spec["epochs"].as_u64().unwrap_or(1) as u32,
        spec,
        assumed,
        spans: spans(ev, train_id, runtime.map(|e| e.t)),
        runtime_mem: runtime.map(|e| e.mem),
    })
}

/// Phase spans: load from the imports to the first loader, building to the
/// first pass, then the train loader's passes as train and the rest as evaluate.
fn spans(ev: &Events, train_id: Option<u64>, runtime: Option<f64>) -> Vec<Span> {
    let start = runtime.or(ev.events.first().map(|e| e.t)).unwrap_or(0.0);
    let end = ev.events.last().map(|e| e.t).unwrap_or(start);
    let built = first(ev, "loader_start").map(|e| e.t).unwrap_or(end);
    let first_pass = first(ev, "pass_start").map(|e| e.t).unwrap_or(end);
    let mut out = vec![
        Span {
            phase: "load",
            from: start,
            to: built,
        },
        Span {
            phase: "build_loaders",
            from: built,
            to: first_pass,
        },
    ];
    let mut at = first_pass;
    let mut open: Option<f64> = None;
    for e in ev
        .events
        .iter()
        .filter(|e| e.u64("id") == train_id && train_id.is_some())
    {
        match (e.ev.as_str(), open) {
            ("pass_start", None) if e.bool("grad") != Some(false) => {
                out.push(Span {
                    phase: "evaluate",
                    from: at,
                    to: e.t,
                });
                open = Some(e.t);
            }
            ("pass_end", Some(from)) => {
                out.push(Span {
                    phase: "train",
                    from,
                    to: e.t,
                });
                at = e.t;
                open = None;
            }
            _ => {}
        }
    }
    if let Some(from) = open {
        out.push(Span {
            phase: "train",
            from,
            to: end,
        });
    } else {
        out.push(Span {
            phase: "evaluate",
            from: at,
            to: end,
        });
    }
    out.retain(|s| s.to > s.from);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::events::parse;

    /// A job that builds its evaluation loader only while evaluating,
    /// evaluates the train loader too, and trains with SGD on a GCN.
    const EVENTS: &str = r#"{"ev":"start","t":10,"pid":5,"argv":["t.py"]}
{"ev":"import","t":11,"pid":5,"name":"torch_geometric","mem":{"RssAnon":419430400}}
{"ev":"loader_start","t":12,"pid":5,"id":1}
{"ev":"dataset","t":13,"pid":5,"data_id":9,"num_nodes":1000,"num_edges":8000,"csc_edges":8000,"x_shape":[1000,16],"x_dtype":"float16","y_dtype":"int64"}
{"ev":"loader","t":13,"pid":5,"id":1,"batch_size":64,"num_workers":0,"shuffle":true,"num_neighbors":[5,5],"is_sorted":false,"sampler_id":3,"seeds":600,"data_id":9}
{"ev":"conv","t":14,"pid":5,"cls":"GCNConv","in_channels":16,"out_channels":32}
{"ev":"conv","t":14,"pid":5,"cls":"GCNConv","in_channels":32,"out_channels":7}
{"ev":"optimizer","t":14,"pid":5,"cls":"SGD","device":"cpu"}
{"ev":"pass_start","t":15,"pid":5,"id":1,"grad":true}
{"ev":"pass_end","t":20,"pid":5,"id":1,"batches":10}
{"ev":"pass_start","t":21,"pid":5,"id":1,"grad":false}
{"ev":"pass_end","t":22,"pid":5,"id":1,"batches":10}
{"ev":"loader_start","t":22.5,"pid":5,"id":2}
{"ev":"loader","t":23,"pid":5,"id":2,"batch_size":128,"num_workers":0,"shuffle":false,"num_neighbors":[5,5],"sampler_id":4,"seeds":200,"data_id":9}
{"ev":"pass_start","t":23,"pid":5,"id":2,"grad":false}
{"ev":"pass_end","t":24,"pid":5,"id":2,"batches":2}
{"ev":"exit","t":25,"pid":5,"probe_s":0.05}
"#;

    #[test]
    fn the_events_become_the_job_and_its_phases() {
        let o = observe(&parse(EVENTS)).unwrap();
        let s = &o.spec;
        assert_eq!(s["loader"]["eval_loaders"], "on_demand");
        assert_eq!(s["loader"]["evaluate_train"], true);
        assert_eq!(s["loader"]["eval_batch_size"], 128);
        assert_eq!(s["model"]["conv"], "gcn");
        assert_eq!(s["model"]["optimizer"], "sgd");
        assert_eq!(s["dataset"]["classes"], 7);
        assert_eq!(s["dataset"]["feature_dtype"], "float16");
        assert_eq!(s["dataset"]["splits"]["train"], 600);
        assert_eq!(s["epochs"], 1);
        // Dropout was not seen (not a BasicGNN), nor is gc.collect().
        assert_eq!(o.assumed.len(), 2, "{:?}", o.assumed);
        assert_eq!(o.runtime_mem.map(|m| m.anon), Some(419_430_400));
        assert_eq!(o.probe_seconds, Some((0.05, 15.0)));
        let phases: Vec<(&str, f64, f64)> =
            o.spans.iter().map(|s| (s.phase, s.from, s.to)).collect();
        assert_eq!(
            phases,
            [
                ("load", 11.0, 12.0),
                ("build_loaders", 12.0, 15.0),
                ("train", 15.0, 20.0),
                ("evaluate", 20.0, 25.0)
            ]
        );
    }

    /// Issue 30's draw 06 under the probe (case.py --eval-loaders layerwise;
    /// its loader lines as recorded, ids and times shortened): the second
    /// loader is PyG's subgraph_loader, every node with every neighbour.
    /// It was read as the valid split's loader (324,208 seeds), and the
    /// spec refused splits larger than the graph.
    const LAYERWISE: &str = r#"{"ev":"start","t":10,"pid":5,"argv":["case.py"]}
{"ev":"import","t":11,"pid":5,"name":"torch_geometric","mem":{"RssAnon":419430400}}
{"ev":"dataset","t":12,"pid":5,"data_id":9,"num_nodes":324208,"num_edges":14739415,"csc_edges":14739415,"x_shape":[324208,1024],"x_dtype":"bfloat16","y_dtype":"int64"}
{"ev":"loader_start","t":12,"pid":5,"id":1}
{"ev":"loader","t":13,"pid":5,"id":1,"batch_size":128,"num_workers":0,"persistent_workers":false,"prefetch_factor":null,"pin_memory":false,"drop_last":false,"shuffle":true,"num_neighbors":[5],"is_sorted":true,"shared_sampler":false,"sampler_id":3,"input_nodes":3072,"seeds":3072,"data_id":9}
{"ev":"loader_start","t":13,"pid":5,"id":2}
{"ev":"loader","t":14,"pid":5,"id":2,"batch_size":128,"num_workers":0,"persistent_workers":false,"prefetch_factor":null,"pin_memory":false,"drop_last":false,"shuffle":false,"num_neighbors":[-1],"is_sorted":true,"shared_sampler":false,"sampler_id":4,"input_nodes":null,"seeds":324208,"data_id":10}
{"ev":"conv","t":14,"pid":5,"cls":"GINConv","in_channels":1024,"out_channels":32}
{"ev":"optimizer","t":14,"pid":5,"cls":"Adam","device":"cpu"}
{"ev":"pass_start","t":15,"pid":5,"id":1,"grad":true}
{"ev":"pass_end","t":20,"pid":5,"id":1,"batches":24}
{"ev":"pass_start","t":21,"pid":5,"id":2,"grad":false}
{"ev":"pass_end","t":24,"pid":5,"id":2,"batches":2533}
{"ev":"exit","t":25,"pid":5,"probe_s":0.05}
"#;

    #[test]
    fn a_subgraph_loader_is_layer_wise_inference_not_a_split() {
        let o = observe(&parse(LAYERWISE)).unwrap();
        let s = &o.spec;
        assert_eq!(s["loader"]["eval_loaders"], "layerwise", "{s}");
        assert_eq!(s["dataset"]["splits"]["train"], 3072);
        assert_eq!(s["dataset"]["splits"]["valid"], 0);
        assert!(
            o.assumed.iter().any(|a| a.contains("layer-wise")),
            "{:?}",
            o.assumed
        );
        // The spec is one plan reads (observe checks it; plan it too).
        let spec: crate::spec::JobSpec = serde_json::from_value(s.clone()).unwrap();
        assert!(crate::spec::Job::from_spec(&spec).is_ok());
    }

    #[test]
    fn no_loader_is_an_error_naming_it() {
        let e = observe(&parse(r#"{"ev":"start","t":1,"pid":5}"#)).unwrap_err();
        assert!(e.to_string().contains("no DataLoader"), "{e}");
    }
}
