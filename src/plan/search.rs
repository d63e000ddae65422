//! The recommendation search: every combination of batch size, fanout,
//! workers, persistence, evaluation-loader strategy and pinning at or below
//! what the user asked for, estimated, judged, and ranked. headroom never
//! trades what the model learns from for speed: among the settings that fit
//! with the margin it keeps the fanout (weighted double) and the batch size as
//! close to the user's as it can, and only then picks the fastest.

use std::collections::HashMap;

use super::speed::epoch_cost;
use super::verdict::{Limits, fits, peaks};
use crate::estimate::{BatchModel, Coefficients, Prepared, Settings, estimate_with};
use crate::spec::{EvalLoaders, Job};

/// A setting that fits (GPU judged without the allocator's reserve, which
/// the caller simulates), with its ranking key.
#[derive(Debug, Clone)]
pub struct Found {
    /// The settings.
    pub settings: Settings,
    /// Ranking key: quality given up, seconds, changes, host peak.
    key: Key,
}

/// Batch sizes tried: the user's, then halvings down to 16.
fn batch_sizes(requested: u64) -> Vec<u64> {
    let mut out = vec![requested];
    let mut b = requested;
    let floor = if requested <= 16 { 1 } else { 16 };
    while b > floor {
        b = if b.is_power_of_two() {
            b / 2
        } else {
            b.next_power_of_two() / 2
        };
        out.push(b);
    }
    out
}

/// Fanouts tried: the first hop and the later hops scaled separately.
fn fanouts(requested: &[i64]) -> Vec<Vec<i64>> {
    const SCALES: [f64; 10] = [1.0, 0.8, 0.67, 0.5, 0.4, 0.33, 0.25, 0.2, 0.15, 0.1];
    let scale = |f: i64, k: f64| {
        if f < 0 {
            if k == 1.0 {
                -1
            } else {
                (50.0 * k).ceil() as i64
            }
        } else {
            ((f as f64 * k).ceil() as i64).max(1)
        }
    };
    let mut out: Vec<Vec<i64>> = Vec::new();
    for &first in &SCALES {
        for &rest in &SCALES {
            let f: Vec<i64> = requested
                .iter()
                .enumerate()
                .map(|(i, &f)| scale(f, if i == 0 { first } else { rest }))
                .collect();
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// Worker counts tried, bounded by the cores a rank has.
fn worker_counts(cpus: u32, requested: u32) -> Vec<u32> {
    let mut out: Vec<u32> = [0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
        .into_iter()
        .filter(|&w| w < cpus.max(2))
        .collect();
    if !out.contains(&requested) {
        out.push(requested);
    }
    out
}

/// How much of what the user asked for a setting gives up: log-ratios of the
/// fanout (twice) and of the batch size. 0 for the user's own.
pub fn quality_loss(requested: &Settings, s: &Settings) -> f64 {
    let ratio = |a: i64, b: i64| {
        let a = if a < 0 { 50.0 } else { a as f64 };
        let b = if b < 0 { 50.0 } else { b as f64 };
        (a / b).ln().max(0.0)
    };
    let fan: f64 = requested
        .fanout
        .iter()
        .zip(&s.fanout)
        .map(|(&a, &b)| ratio(a, b))
        .sum();
    2.0 * fan
        + (requested.batch_size as f64 / s.batch_size as f64)
            .ln()
            .max(0.0)
}

/// How many settings differ from the user's.
fn changes(req: &Settings, s: &Settings) -> usize {
    [
        req.batch_size != s.batch_size,
        req.fanout != s.fanout,
        req.num_workers != s.num_workers,
        req.persistent_workers != s.persistent_workers,
        req.prefetch_factor != s.prefetch_factor,
        req.pin_memory != s.pin_memory,
        req.eval_loaders != s.eval_loaders,
        req.shared_sampler != s.shared_sampler,
        req.is_sorted != s.is_sorted,
    ]
    .into_iter()
    .filter(|&c| c)
    .count()
}

/// Ranking key, ordered best first: quality given up (micro-units of
/// log-ratio), estimated epoch time (microseconds), changes from the user's
/// settings, host peak. Quantised so that float noise cannot reorder ties.
type Key = (i64, i64, usize, u64);

fn key(loss: f64, secs: f64, changes: usize, host: u64) -> Key {
    (
        (loss * 1e6).round() as i64,
        (secs * 1e6).round() as i64,
        changes,
        host,
    )
}

/// Searches every candidate: the ones that fit, best first, and how many
/// were estimated. The GPU is judged on its tensors alone (a lower bound):
/// the allocator's reserve is simulated afterwards, best candidate first.
pub fn search(job: &Job, coeffs: &Coefficients) -> (Vec<Found>, usize) {
    let coeffs = &Coefficients {
        allocator_reserve_fraction: 0.0,
        ..coeffs.clone()
    };
    let req = &job.settings;
    let prep = Prepared::new(job);
    let limits = Limits::of(job);
    let evals: Vec<EvalLoaders> = match req.eval_loaders {
        EvalLoaders::None => vec![EvalLoaders::None],
        _ => vec![EvalLoaders::Resident, EvalLoaders::OnDemand],
    };
    let pins: Vec<bool> = if req.pin_memory {
        vec![true, false]
    } else {
        vec![false]
    };
    // Sharing a sampler and pre-sorting only mean something for NeighborLoaders.
    let gnn = matches!(job.model, crate::spec::ModelKind::Gnn { .. });
    let shares: Vec<bool> = if req.shared_sampler || !gnn {
        vec![req.shared_sampler]
    } else {
        vec![false, true]
    };
    let sorts: Vec<bool> = if req.is_sorted || !gnn {
        vec![req.is_sorted]
    } else {
        vec![false, true]
    };
    let prefetches: Vec<u32> = if req.prefetch_factor > 1 {
        vec![req.prefetch_factor, 1]
    } else {
        vec![req.prefetch_factor]
    };
    let mut extras: Vec<(u32, bool, bool)> = Vec::new();
    for &p in &prefetches {
        for &h in &shares {
            for &o in &sorts {
                extras.push((p, h, o));
            }
        }
    }
    let mut models: HashMap<(u64, Vec<i64>), BatchModel> = HashMap::new();
    let mut fitting: Vec<Found> = Vec::new();
    let mut count = 0;
    for batch in batch_sizes(req.batch_size) {
        for fanout in fanouts(&req.fanout) {
            let mut s = Settings {
                batch_size: batch,
                fanout,
                ..req.clone()
            };
            let loss = quality_loss(req, &s);
            let bm = *models
                .entry((batch, s.fanout.clone()))
                .or_insert_with(|| BatchModel::new(job, &s, &prep));
            for &workers in &worker_counts(job.cpus, req.num_workers) {
                for persistent in [false, true] {
                    if persistent && workers == 0 {
                        continue;
                    }
                    for &eval_loaders in &evals {
                        for &pin in &pins {
                            for &(prefetch, shared, sorted) in &extras {
                                s.shared_sampler = shared;
                                s.is_sorted = sorted;
                                s.num_workers = workers;
                                s.persistent_workers = persistent;
                                s.eval_loaders = eval_loaders;
                                s.pin_memory = pin;
                                s.prefetch_factor = prefetch;
                                count += 1;
                                let est = estimate_with(job, &s, coeffs, &bm, false);
                                if !fits(&est, &limits) {
                                    continue;
                                }
                                let secs = epoch_cost(job, &s, &bm.train, est.dataset.edges);
                                let host = peaks(&est).0;
                                let key = key(loss, secs, changes(req, &s), host);
                                fitting.push(Found {
                                    settings: s.clone(),
                                    key,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    fitting.sort_by_key(|f| f.key);
    (fitting, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_halve_from_the_request() {
        assert_eq!(batch_sizes(1024), vec![1024, 512, 256, 128, 64, 32, 16]);
        assert_eq!(batch_sizes(1000), vec![1000, 512, 256, 128, 64, 32, 16]);
        assert_eq!(batch_sizes(2), vec![2, 1]);
    }

    #[test]
    fn fanouts_never_exceed_the_request_and_include_it() {
        let f = fanouts(&[15, 10]);
        assert_eq!(f[0], vec![15, 10]);
        assert!(
            f.iter()
                .all(|v| v[0] <= 15 && v[1] <= 10 && v[0] >= 1 && v[1] >= 1)
        );
        assert!(f.len() > 50, "{}", f.len());
    }

    #[test]
    fn quality_loss_is_zero_for_the_request_and_grows_with_cuts() {
        let req = Settings {
            batch_size: 1024,
            fanout: vec![15, 10],
            num_workers: 4,
            persistent_workers: true,
            prefetch_factor: 2,
            pin_memory: false,
            eval_loaders: EvalLoaders::Resident,
            shared_sampler: false,
            is_sorted: false,
            expandable_segments: false,
        };
        assert_eq!(quality_loss(&req, &req), 0.0);
        let half_batch = Settings {
            batch_size: 512,
            ..req.clone()
        };
        let half_fan = Settings {
            fanout: vec![15, 5],
            ..req.clone()
        };
        // ln 2 for the batch; 2·ln 2 for halving one hop of the fanout.
        assert!((quality_loss(&req, &half_batch) - 2f64.ln()).abs() < 1e-12);
        assert!((quality_loss(&req, &half_fan) - 2.0 * 2f64.ln()).abs() < 1e-12);
    }
}
