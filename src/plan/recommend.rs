//! A recommendation as people read it: each setting changed from the job's,
//! applied in order, with what it saves on the host, /dev/shm and GPU peaks and how to
//! make the change in PyG / PyTorch.

use super::planner::Planner;
use super::verdict::peaks;
use super::{Change, Recommendation};
use crate::estimate::Settings;

/// Describes `found` as changes from the job's settings, each with its saving.
pub(super) fn recommendation(planner: &mut Planner, to: &Settings) -> Recommendation {
    let mut cur = planner.job.settings.clone();
    let mut peak = |s: &Settings| {
        let est = planner.estimate(s).0;
        let (h, _, g, _) = peaks(&est);
        let shm = est.phases.iter().map(|p| p.shm_bytes).max().unwrap_or(0);
        (h as i64, g as i64, shm as i64)
    };
    let mut last = peak(&cur);
    let mut changes = Vec::new();
    macro_rules! step {
        ($field:ident, $name:expr, $fmt:expr) => {
            if cur.$field != to.$field {
                let from = $fmt(&cur.$field);
                cur.$field = to.$field.clone();
                let now = peak(&cur);
                changes.push(Change {
                    setting: $name,
                    how: how($name),
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
    step!(shared_sampler, "shared_sampler", |v: &bool| v.to_string());
    step!(is_sorted, "is_sorted", |v: &bool| v.to_string());
    step!(
        eval_loaders,
        "eval_loaders",
        |v: &crate::spec::EvalLoaders| v.to_string()
    );
    step!(num_workers, "num_workers", |v: &u32| v.to_string());
    step!(persistent_workers, "persistent_workers", |v: &bool| v
        .to_string());
    step!(prefetch_factor, "prefetch_factor", |v: &u32| v.to_string());
    step!(pin_memory, "pin_memory", |v: &bool| v.to_string());
    step!(fanout, "fanout", |v: &Vec<i64>| format!("{v:?}"));
    step!(batch_size, "batch_size", |v: &u64| v.to_string());
    step!(expandable_segments, "expandable_segments", |v: &bool| v
        .to_string());
    Recommendation {
        batch_size: to.batch_size,
        fanout: to.fanout.clone(),
        num_workers: to.num_workers,
        persistent_workers: to.persistent_workers,
        eval_loaders: to.eval_loaders,
        pin_memory: to.pin_memory,
        prefetch_factor: to.prefetch_factor,
        shared_sampler: to.shared_sampler,
        is_sorted: to.is_sorted,
        expandable_segments: to.expandable_segments,
        peak_host_bytes: last.0 as u64,
        peak_gpu_bytes: last.1 as u64,
        peak_shm_bytes: last.2 as u64,
        shm_check: None,
        changes,
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
        "fanout" => "NeighborLoader(num_neighbors=[...])",
        "batch_size" => "NeighborLoader(batch_size=...); scale the learning rate with it",
        "expandable_segments" => {
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch >= 2.1)"
        }
        _ => "",
    }
}
