//! Turning what was read into a job spec: every field set from the script
//! is recorded with its value and the lines that decided it ("inferred");
//! every field left at its default is recorded with the default and why
//! ("assumed"). Fields that change the plan most (dataset, batch size,
//! fanout, workers) and were not found are listed as missing, so `check`
//! can refuse to plan them silently.

use serde::Serialize;

use super::graph::GraphFind;
use super::loaders::{LoaderCall, Split};
use super::py::{Found, Value};
use crate::spec::{EvalLoaders, JobSpec};

/// A field read from the scripts.
#[derive(Debug, Clone, Serialize)]
pub struct Inferred {
    /// The job-spec field (`loader.batch_size`).
    pub field: String,
    /// Its value.
    pub value: serde_json::Value,
    /// `file:line` places that decided it.
    pub from: String,
}

/// A field the scripts do not say, with the value planned.
#[derive(Debug, Clone, Serialize)]
pub struct Assumed {
    /// The job-spec field.
    pub field: String,
    /// The value used.
    pub value: serde_json::Value,
    /// Why.
    pub why: String,
}

/// The spec being built and its ledger.
pub struct Ledger {
    /// The spec.
    pub spec: JobSpec,
    /// Fields read.
    pub inferred: Vec<Inferred>,
    /// Fields defaulted.
    pub assumed: Vec<Assumed>,
    /// Fields that matter and were not found: (field, what the script has there).
    pub missing: Vec<(String, String)>,
    /// Things the user should know.
    pub warnings: Vec<String>,
}

impl Ledger {
    /// Records `field` as read from `from`.
    pub fn read(&mut self, field: &str, value: serde_json::Value, from: String) {
        self.inferred.push(Inferred {
            field: field.into(),
            value,
            from,
        });
    }

    /// Records `field` as defaulted.
    pub fn assume(&mut self, field: &str, value: serde_json::Value, why: impl Into<String>) {
        self.assumed.push(Assumed {
            field: field.into(),
            value,
            why: why.into(),
        });
    }
}

/// Fills the loader fields from the loaders found.
/// `graph`: where the script evaluates with `model.inference(...)` over the
/// whole graph (no loader), if it does, and its epoch loop; `dead`: the
/// branches that keep its other loaders from being built.
pub fn loaders(l: &mut Ledger, loaders: &[LoaderCall], graph: &GraphFind, dead: &[String]) {
    let Some(train) = loaders.iter().find(|c| c.split == Split::Train) else {
        for f in ["loader.batch_size", "loader.fanout", "loader.num_workers"] {
            l.missing.push((
                f.into(),
                "no NeighborLoader or NeighborSampler over the training nodes".into(),
            ));
        }
        return;
    };
    l.spec.loader.kind = train.kind;
    l.read(
        "loader.kind",
        serde_json::to_value(train.kind).unwrap_or_default(),
        train.places.clone(),
    );
    let unknown_splat = train.unknown.iter().any(|u| u.starts_with("**"));
    // An argument absent from a call with no unknown **kwargs has its library default.
    let arg =
        |l: &mut Ledger, key: &str, field: &str, default: Value, matters: bool| -> Option<Found> {
            if let Some(f) = train.args.get(key) {
                return Some(f.clone());
            }
            if train.unknown.iter().any(|u| u == key) || unknown_splat {
                let what = if unknown_splat {
                    "may come through **kwargs the reader cannot compute"
                } else {
                    "is an expression the reader cannot compute"
                };
                let why = format!("{key} at {} {what}", train.at);
                if matters {
                    l.missing.push((field.into(), why));
                } else {
                    l.assume(field, default.to_json(), why);
                }
                return None;
            }
            Some(Found::at(
                default,
                format!("{} (not given: the library default)", train.at),
            ))
        };
    if let Some(f) = arg(l, "batch_size", "loader.batch_size", Value::Int(1), true) {
        match f.value.as_int().filter(|b| *b > 0) {
            Some(b) => {
                l.spec.loader.batch_size = b as u64;
                l.read("loader.batch_size", b.into(), f.origin());
            }
            None => l.missing.push((
                "loader.batch_size".into(),
                format!("{:?} at {}", f.value, f.origin()),
            )),
        }
    }
    match train
        .args
        .get("num_neighbors")
        .map(|f| (fanout_of(&f.value), f))
    {
        Some((Some(fan), f)) => {
            l.read("loader.fanout", serde_json::json!(fan), f.origin());
            l.spec.loader.fanout = fan;
        }
        Some((None, f)) => l.missing.push((
            "loader.fanout".into(),
            match &f.value {
                Value::Dict(by_type) => format!(
                    "num_neighbors at {} gives edge types different hops ({}), and a plan takes one fanout",
                    f.origin(),
                    by_type
                        .iter()
                        .map(|(k, v)| format!("{k} {}", v.to_json()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                other => format!("{other:?} at {}", f.origin()),
            },
        )),
        None => l.missing.push((
            "loader.fanout".into(),
            format!("num_neighbors at {} cannot be computed", train.at),
        )),
    }
    if let Some(f) = arg(l, "num_workers", "loader.num_workers", Value::Int(0), true) {
        match f.value.as_int().and_then(|w| u32::try_from(w).ok()) {
            Some(w) => {
                l.spec.loader.num_workers = w;
                l.read("loader.num_workers", w.into(), f.origin());
            }
            None => l.missing.push((
                "loader.num_workers".into(),
                format!("{:?} at {}", f.value, f.origin()),
            )),
        }
    }
    let flag = |l: &mut Ledger, key: &str, field: &str| -> bool {
        arg(l, key, field, Value::Bool(false), false).is_some_and(|f| {
            l.read(field, f.value.truthy().into(), f.origin());
            f.value.truthy()
        })
    };
    l.spec.loader.persistent_workers = flag(l, "persistent_workers", "loader.persistent_workers");
    l.spec.loader.pin_memory = flag(l, "pin_memory", "loader.pin_memory");
    l.spec.loader.is_sorted = flag(l, "is_sorted", "loader.is_sorted");
    if let Some(f) = arg(
        l,
        "prefetch_factor",
        "loader.prefetch_factor",
        Value::Int(2),
        false,
    ) && let Some(p) = f.value.as_int().and_then(|p| u32::try_from(p).ok())
    {
        l.spec.loader.prefetch_factor = p;
        l.read("loader.prefetch_factor", p.into(), f.origin());
    }
    if let Some(f) = train.args.get("neighbor_sampler") {
        l.spec.loader.shared_sampler = f.value != Value::None;
        l.read(
            "loader.shared_sampler",
            l.spec.loader.shared_sampler.into(),
            f.origin(),
        );
    }
    eval_loaders(l, loaders, train, graph, dead);
}

fn eval_loaders(
    l: &mut Ledger,
    loaders: &[LoaderCall],
    train: &LoaderCall,
    graph: &GraphFind,
    dead: &[String],
) {
    let evals: Vec<&LoaderCall> = loaders.iter().filter(|c| c.split != Split::Train).collect();
    let mut places: Vec<&str> = Vec::new();
    for p in evals.iter().flat_map(|c| c.places.split(", ")) {
        if !places.contains(&p) {
            places.push(p);
        }
    }
    let at = places.join(", ");
    // No loader of its own: the training loader's batches, evaluated.
    if evals.is_empty()
        && let Some(loop_at) = &train.reused_without_grad
    {
        let at = format!("{loop_at}, {}", train.places);
        l.spec.loader.eval_loaders = EvalLoaders::Resident;
        l.read("loader.eval_loaders", "resident".into(), at.clone());
        l.warnings.push(format!(
            "the script evaluates over its training loader ({at}); headroom plans two resident evaluation loaders of its batch, the safe side"
        ));
        if let Some(b) = train.args.get("batch_size")
            && let Some(n) = b.value.as_int().and_then(|n| u64::try_from(n).ok())
        {
            l.spec.loader.eval_batch_size = Some(n);
            let mut from: Vec<String> = Vec::new();
            for p in b.origin().split(", ").chain(train.places.split(", ")) {
                if !from.iter().any(|q| q == p) {
                    from.push(p.to_string());
                }
            }
            let from = from.join(", ");
            l.read("loader.eval_batch_size", n.into(), from);
        }
        return;
    }
    let Some(first) = evals.first() else {
        l.spec.loader.eval_loaders = EvalLoaders::None;
        // Named where it shows: the whole-graph evaluation, else the
        // training loader, the only one.
        let why = match graph.full_inference.as_deref() {
            Some(at) => format!("{at} (evaluates the whole graph, no loader)"),
            None if !dead.is_empty() => format!(
                "{} (the other loaders are built only under branches that never run)",
                dead.join(", ")
            ),
            None => match &graph.epoch_loop {
                Some(epochs) => format!(
                    "{}, {epochs} (no NeighborLoader besides the training one, in the epoch loop or elsewhere)",
                    train.places
                ),
                None => format!(
                    "{} (no NeighborLoader besides the training one)",
                    train.places
                ),
            },
        };
        l.read("loader.eval_loaders", "none".into(), why);
        return;
    };
    // Layer-wise inference's loader (every node, every neighbour) is the
    // evaluation: the one the plan sizes, at its own line.
    // Of several (a subclass's override of the method that builds them),
    // the one beside the training loader.
    let file = |c: &LoaderCall| c.at.split(':').next().unwrap_or("").to_string();
    let train_file = loaders.iter().find(|c| c.split == Split::Train).map(file);
    let layerwise = evals
        .iter()
        .find(|c| c.layerwise && Some(file(c)) == train_file)
        .or_else(|| evals.iter().find(|c| c.layerwise));
    // Of the others, the first whose batches run (one built and never
    // used after says nothing of the evaluation's batch).
    let first = layerwise
        .or_else(|| evals.iter().find(|c| c.used))
        .unwrap_or(first);
    let placement = if layerwise.is_some() {
        EvalLoaders::Layerwise
    } else if evals.iter().any(|c| c.placement == EvalLoaders::Resident) {
        EvalLoaders::Resident
    } else {
        EvalLoaders::OnDemand
    };
    let at = layerwise.map_or(at, |c| c.places.clone());
    l.spec.loader.eval_loaders = placement;
    l.read("loader.eval_loaders", placement.as_str().into(), at.clone());
    if placement == EvalLoaders::Resident && evals.len() != 2 {
        l.warnings.push(format!(
            "the script keeps {} evaluation loader(s) ({at}); headroom plans two resident ones (validation and test), the safe side when there is one",
            evals.len()
        ));
    }
    if let Some(b) = first
        .args
        .get("batch_size")
        .and_then(|f| f.value.as_int().map(|b| (b, f.origin())))
    {
        l.spec.loader.eval_batch_size = Some(b.0 as u64);
        l.read("loader.eval_batch_size", b.0.into(), b.1);
    }
    // Not given, with nothing else that could give it (no unknown **kwargs,
    // no uncomputable num_workers=): DataLoader's default, 0 workers. Left
    // unset, the plan would give evaluation the training loader's workers.
    let given_elsewhere = first
        .unknown
        .iter()
        .any(|u| u.starts_with("**") || u == "num_workers");
    let workers = match first.args.get("num_workers") {
        Some(f) => f.value.as_int().map(|w| (w, f.origin())),
        None if !given_elsewhere => {
            Some((0, format!("{} (not given: the library default)", first.at)))
        }
        None => None,
    };
    if let Some(w) = workers {
        l.spec.loader.eval_num_workers = u32::try_from(w.0).ok();
        l.read("loader.eval_num_workers", w.0.into(), w.1);
    }
    for c in &evals {
        if let Some(fan) = c
            .args
            .get("num_neighbors")
            .and_then(|f| f.value.as_int_list())
            && fan != l.spec.loader.fanout
            && !c.layerwise
        {
            l.warnings.push(format!(
                "the evaluation loader at {} samples {fan:?}; headroom plans evaluation batches with the training fanout {:?}",
                c.at, l.spec.loader.fanout
            ));
        }
    }
}

/// A `num_neighbors` value as hops: a list, or a dict by edge type whose
/// entries all give the same hops (`{('paper', 'cites', 'paper'): [12, 12,
/// 12]}`); a dict whose edge types differ is not one fanout.
fn fanout_of(v: &Value) -> Option<Vec<i64>> {
    match v {
        Value::Dict(entries) => {
            let lists: Option<Vec<Vec<i64>>> =
                entries.iter().map(|(_, v)| v.as_int_list()).collect();
            let lists = lists?;
            let first = lists.first()?;
            lists.iter().all(|l| l == first).then(|| first.clone())
        }
        other => other.as_int_list(),
    }
}
