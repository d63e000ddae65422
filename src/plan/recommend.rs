//! A recommendation as people read it: each setting changed from the job's,
//! applied in order of what it costs the user (changes that leave training
//! as it is, then a preprocessing step, then batch size and fanout), with
//! what it saves on the host, /dev/shm and GPU peaks and how to make the
//! change in PyG / PyTorch; and the preprocessing step's own plan.

use super::planner::Planner;
use super::verdict::peaks;
use super::{Change, ChangeKind, Preprocessing, Recommendation};
use crate::estimate::{Coefficients, Settings};
use crate::spec::Job;

/// Describes `to` as changes from the job's settings, each with its saving;
/// `fits`: whether `to` fits (false: nothing does, and it comes closest).
pub(super) fn recommendation(planner: &mut Planner, to: &Settings, fits: bool) -> Recommendation {
    let margin = planner.job.margin;
    let mut cur = planner.job.settings.clone();
    let train = planner.job.dataset.splits().train;
    // Nodes a batch, by the batch model, at each (batch, fanout) the effects
    // compare: the user's and the recommended of each; none without a
    // training change.
    let trains = cur.batch_size != to.batch_size || cur.fanout != to.fanout;
    let nodes: Vec<(u64, Vec<i64>, f64)> = [
        (cur.batch_size, &cur.fanout),
        (cur.batch_size, &to.fanout),
        (to.batch_size, &cur.fanout),
        (to.batch_size, &to.fanout),
    ]
    .into_iter()
    .filter(|_| trains)
    .map(|(batch_size, fanout)| {
        let s = Settings {
            batch_size,
            fanout: fanout.clone(),
            ..cur.clone()
        };
        (batch_size, s.fanout.clone(), planner.mean_batch_nodes(&s))
    })
    .collect();
    let mut peak = |s: &Settings| {
        let est = planner.estimate(s).0;
        let (h, _, g, _) = peaks(&est);
        let shm = est.phases.iter().map(|p| p.shm_bytes).max().unwrap_or(0);
        (h as i64, g as i64, shm as i64)
    };
    let mut last = peak(&cur);
    let mut changes = Vec::new();
    macro_rules! step {
        ($field:ident, $name:expr, $kind:expr, $fmt:expr) => {
            if cur.$field != to.$field {
                let from = $fmt(&cur.$field);
                let before = cur.clone();
                cur.$field = to.$field.clone();
                let now = peak(&cur);
                let effect = ($kind == Training)
                    .then(|| effect(&before, &cur, &nodes, train, to.batch_size));
                changes.push(Change {
                    setting: $name,
                    kind: $kind,
                    how: how($name),
                    effect,
                    from,
                    to: $fmt(&to.$field),
                    saves_host_bytes: last.0 - now.0,
                    saves_gpu_bytes: last.1 - now.1,
                    saves_shm_bytes: last.2 - now.2,
                });
                last = now;
            }
        };
    }
    use ChangeKind::{Free, Preprocessing as Pre, Training};
    let b = |v: &bool| v.to_string();
    let n = |v: &u32| v.to_string();
    step!(shared_sampler, "shared_sampler", Free, b);
    step!(
        eval_loaders,
        "eval_loaders",
        Free,
        |v: &crate::spec::EvalLoaders| v.to_string()
    );
    step!(gc_collect, "gc_collect", Free, b);
    step!(num_workers, "num_workers", Free, n);
    step!(persistent_workers, "persistent_workers", Free, b);
    step!(prefetch_factor, "prefetch_factor", Free, n);
    step!(pin_memory, "pin_memory", Free, b);
    step!(expandable_segments, "expandable_segments", Free, b);
    step!(is_sorted, "is_sorted", Pre, b);
    step!(fanout, "fanout", Training, |v: &Vec<i64>| format!("{v:?}"));
    step!(batch_size, "batch_size", Training, |v: &u64| v.to_string());
    Recommendation {
        fits,
        needs_host_bytes: needs(last.0 as u64, margin),
        batch_size: to.batch_size,
        fanout: to.fanout.clone(),
        num_workers: to.num_workers,
        persistent_workers: to.persistent_workers,
        eval_loaders: to.eval_loaders,
        pin_memory: to.pin_memory,
        prefetch_factor: to.prefetch_factor,
        shared_sampler: to.shared_sampler,
        is_sorted: to.is_sorted,
        gc_collect: to.gc_collect,
        expandable_segments: to.expandable_segments,
        peak_host_bytes: last.0 as u64,
        peak_gpu_bytes: last.1 as u64,
        peak_shm_bytes: last.2 as u64,
        shm_check: None,
        changes,
    }
}

/// What a training change from `a` to `b` does: nodes a batch (looked up in
/// `nodes`, by batch size and fanout) and, where the batch size moves, steps
/// an epoch over `train` seeds. A fanout change is told at the batch the job
/// will run with (`batch`), where its nodes are what training sees. A batch
/// cut that leaves the batches nearly as large (the sampled subgraphs
/// already cover most of the graph) shows as many more steps for few nodes
/// less.
fn effect(
    a: &Settings,
    b: &Settings,
    nodes: &[(u64, Vec<i64>, f64)],
    train: u64,
    batch: u64,
) -> String {
    let of = |s: &Settings, bs: u64| {
        nodes
            .iter()
            .find(|(n, f, _)| *n == bs && *f == s.fanout)
            .map_or(0.0, |(_, _, v)| *v)
    };
    let fanout_only = a.batch_size == b.batch_size;
    let at = |s: &Settings| if fanout_only { batch } else { s.batch_size };
    let (na, nb) = (of(a, at(a)), of(b, at(b)));
    let change = if na > 0.0 {
        (nb / na - 1.0) * 100.0
    } else {
        0.0
    };
    let change = if change.abs() < 0.5 {
        "about the same".to_string()
    } else {
        format!("{change:+.0} %")
    };
    let mut out = format!(
        "nodes a batch {} → {} ({change})",
        round_nodes(na),
        round_nodes(nb)
    );
    if fanout_only && batch != a.batch_size {
        out.push_str(&format!(" at batch {batch}"));
    }
    if a.batch_size != b.batch_size {
        let steps = |bs: u64| train.div_ceil(bs.max(1));
        out.push_str(&format!(
            ", steps an epoch {} → {}",
            steps(a.batch_size),
            steps(b.batch_size)
        ));
    }
    out
}

/// Nodes as a reader takes them in: 73512 → "73.5k".
fn round_nodes(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.2}M", n / 1e6)
    } else if n >= 1e4 {
        format!("{:.1}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// What to write in the training script for each recommended change.
fn how(setting: &str) -> &'static str {
    match setting {
        "shared_sampler" => {
            "build one NeighborSampler(data, num_neighbors) and pass neighbor_sampler= to every NeighborLoader"
        }
        "is_sorted" => {
            "sort edge_index by destination once (sort_edge_index(..., sort_by_row=False)), save it, pass is_sorted=True"
        }
        "eval_loaders" => {
            "resident: build val/test loaders once at start; on_demand: build, use and del them at each evaluation"
        }
        "num_workers" => "NeighborLoader(num_workers=...)",
        "persistent_workers" => "NeighborLoader(persistent_workers=...)",
        "prefetch_factor" => "NeighborLoader(prefetch_factor=...)",
        "pin_memory" => "NeighborLoader(pin_memory=...)",
        "fanout" => {
            "NeighborLoader(num_neighbors=[...]): fewer neighbours a hop; each node's aggregate is noisier"
        }
        "batch_size" => {
            "NeighborLoader(batch_size=...): fewer seeds a step; scale the learning rate with the batch (linearly for SGD, by its square root for Adam, as a first guess)"
        }
        "gc_collect" => {
            "call gc.collect() right after `del loader`: a NeighborLoader refers to itself, so del alone frees its CSC only at CPython's next full collection"
        }
        "expandable_segments" => {
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch >= 2.1)"
        }
        _ => "",
    }
}

/// The host limit, rounded up to a whole GiB, that `peak` needs with `margin` kept free.
pub(super) fn needs(peak: u64, margin: f64) -> u64 {
    ((peak as f64 / (1.0 - margin)) / (1u64 << 30) as f64).ceil() as u64 * (1 << 30)
}

/// The one-off job that sorts edge_index by destination and saves it: the
/// dataset loaded as the job loads it, then `edge_index[:, argsort(edge_index[1])]`
/// (the load phase of the same job with `sort_edges`).
pub(super) fn sort_step(job: &Job, coeffs: &Coefficients) -> Preprocessing {
    let mut sorting = job.clone();
    sorting.load.sort_edges = true;
    let s = Settings {
        is_sorted: true,
        num_workers: 0,
        ..job.settings.clone()
    };
    let est = crate::estimate::estimate(&sorting, &s, coeffs);
    let peak = est
        .phases
        .iter()
        .find(|p| p.phase == crate::estimate::Phase::Load)
        .map_or(0, |p| p.host_bytes);
    let d = &est.dataset;
    let alone = peak.saturating_sub(d.features + d.labels + d.splits);
    Preprocessing {
        step: "load the dataset, edge_index = edge_index[:, edge_index[1].argsort(stable=True)], save it; then pass is_sorted=True",
        peak_host_bytes: peak,
        needs_host_bytes: needs(peak, job.margin),
        edge_index_only_peak_bytes: alone,
        edge_index_only_needs_bytes: needs(alone, job.margin),
        edges: d.edges,
    }
}
