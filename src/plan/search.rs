//! The recommendation search: the largest settings that fit. A setting is
//! only ever moved in the direction that needs less memory (fewer workers,
//! not persistent, less prefetch, no pinning, evaluation loaders built on
//! demand and collected, one shared sampler, a sorted edge_index), so no
//! change that costs memory is taken back by another. Batch size and fanout,
//! which change what the model learns, are given up last and least: the
//! (batch, fanout) pairs are tried in order of how much of the request they
//! give up, and the first level at which anything fits is the answer; among
//! the settings that fit there, the ones that need no preprocessing step,
//! then those that change the fewest settings, then the fastest come first. Where nothing fits, the settings that come
//! closest, with the limit they would need. A batch that would move CPU
//! layer-wise inference into glibc's heap range (where the model cannot
//! bound the heap: `estimate::layerwise_heap_risk`) is never advised unless
//! the user's own batch is there already.

use std::collections::HashMap;

use super::speed::epoch_cost;
use super::verdict::{Limits, fits, peaks};
use crate::estimate::{
    BatchModel, Coefficients, Prepared, Settings, estimate_with, layerwise_heap_risk,
};
use crate::spec::{EvalLoaders, Job};

/// A setting that fits (GPU judged without the allocator's reserve, which
/// the caller simulates), with its ranking key.
#[derive(Debug, Clone)]
pub struct Found {
    /// The settings.
    pub settings: Settings,
    /// Ranking key: quality given up, preprocessing, changes, seconds, host peak.
    key: Key,
}

/// What the search found.
#[derive(Debug, Clone, Default)]
pub struct Searched {
    /// Settings that fit, best first: those of the least quality given up.
    pub fitting: Vec<Found>,
    /// The best that fit without a preprocessing step (sorting edge_index),
    /// where the best needs one.
    pub without_preprocessing: Vec<Found>,
    /// Where nothing fits: the settings whose peaks need the smallest
    /// limits, and the factor by which the tightest limit falls short.
    pub closest: Option<(Settings, f64)>,
    /// The same among the settings without a preprocessing step, where the
    /// best needs one and nothing fits without it.
    pub closest_without_preprocessing: Option<(Settings, f64)>,
    /// Settings estimated.
    pub count: usize,
}

/// Batch sizes tried, largest first: the user's, then powers of two and
/// the halfway steps between them (768, 512, 384, ...), down to 16.
fn batch_sizes(requested: u64) -> Vec<u64> {
    let mut out = vec![requested];
    let floor = if requested <= 16 { 1 } else { 16 };
    let mut p = requested.next_power_of_two();
    while p >= floor {
        for b in [p / 2 + p / 4, p / 2] {
            if b < requested && b >= floor && !out.contains(&b) {
                out.push(b);
            }
        }
        p /= 2;
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
        req.gc_collect != s.gc_collect,
    ]
    .into_iter()
    .filter(|&c| c)
    .count()
}

/// Ranking key, best first: quality given up (micro-units of log-ratio), a
/// preprocessing step needed, changes from the user's settings (nothing is
/// changed that need not be), estimated epoch time (microseconds), host
/// peak. Quantised so that float noise cannot reorder ties.
type Key = (i64, bool, usize, i64, u64);

/// The settings that leave training as it is, each only in the direction
/// that needs less memory than the user's.
fn free_settings(job: &Job, req: &Settings) -> Vec<Settings> {
    let down = |v: bool| if v { vec![true, false] } else { vec![false] };
    let up = |v: bool| if v { vec![true] } else { vec![false, true] };
    let gnn = matches!(job.model, crate::spec::ModelKind::Gnn { .. });
    let workers: Vec<u32> = [req.num_workers, 8, 6, 4, 3, 2, 1, 0]
        .into_iter()
        .filter(|&w| w <= req.num_workers)
        .fold(Vec::new(), |mut v, w| {
            if !v.contains(&w) {
                v.push(w);
            }
            v
        });
    let evals: Vec<EvalLoaders> = match req.eval_loaders {
        EvalLoaders::Resident => vec![EvalLoaders::Resident, EvalLoaders::OnDemand],
        e => vec![e],
    };
    let prefetches = if req.prefetch_factor > 1 {
        vec![req.prefetch_factor, 1]
    } else {
        vec![req.prefetch_factor]
    };
    // Sharing a sampler and pre-sorting only mean something for NeighborLoaders.
    let (shares, sorts) = if gnn {
        (up(req.shared_sampler), up(req.is_sorted))
    } else {
        (vec![req.shared_sampler], vec![req.is_sorted])
    };
    let mut out = Vec::new();
    for &w in &workers {
        for persistent in down(req.persistent_workers) {
            for &prefetch in &prefetches {
                if w == 0 && (persistent || prefetch != req.prefetch_factor) {
                    continue;
                }
                for pin in down(req.pin_memory) {
                    for &eval_loaders in &evals {
                        let gcs = if eval_loaders == EvalLoaders::OnDemand {
                            up(req.gc_collect)
                        } else {
                            vec![req.gc_collect]
                        };
                        for &gc_collect in &gcs {
                            // Deleted on-demand loaders whose persistent
                            // workers live on until CPython's oldest
                            // generation is collected: the workers forked
                            // after them inherit them, and 5 of 10 such real
                            // jobs died or hung (sealed-linger-2611265);
                            // advice-2611253's draw 15, advised this, died of
                            // the AssertionError after 325 s. Never advised.
                            if eval_loaders == EvalLoaders::OnDemand
                                && persistent
                                && w > 0
                                && !gc_collect
                            {
                                continue;
                            }
                            for &shared_sampler in &shares {
                                for &is_sorted in &sorts {
                                    out.push(Settings {
                                        num_workers: w,
                                        persistent_workers: persistent,
                                        prefetch_factor: prefetch,
                                        pin_memory: pin,
                                        eval_loaders,
                                        gc_collect,
                                        shared_sampler,
                                        is_sorted,
                                        ..req.clone()
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The free settings that need the least memory: no workers, one shared
/// sampler, evaluation loaders collected after use (or resident ones on
/// that sampler), sorted where the search may sort. Nothing else among
/// `free_settings` needs less on any budget but for the effects
/// `estimate::props` allows (a worker moves a batch out of the main
/// process's heap: under one batch), so where these do not fit a (batch,
/// fanout) pair, the search moves on to the next pair: at worst it answers
/// one step of batch or fanout smaller than it had to, never a setting that
/// does not fit.
fn least<'a>(free: &'a [Settings], preprocessing: bool, req: &Settings) -> Vec<&'a Settings> {
    free.iter()
        .filter(|f| f.num_workers == 0 && !f.pin_memory)
        .filter(|f| f.shared_sampler || !free.iter().any(|g| g.shared_sampler))
        .filter(|f| f.gc_collect || f.eval_loaders != EvalLoaders::OnDemand)
        .filter(|f| f.is_sorted == (preprocessing || req.is_sorted))
        .collect()
}

/// How far `s`'s estimate is from fitting: its largest peak over its limit
/// less the margin, over every budget given (1 or less fits).
fn shortfall(est: &crate::estimate::Estimate, limits: &Limits) -> f64 {
    let (host, _, gpu, _) = peaks(est);
    let shm = est.phases.iter().map(|p| p.shm_bytes).max().unwrap_or(0);
    let over = |need: u64, limit: Option<u64>, usable: bool| {
        limit.map_or(0.0, |l| {
            let l = if usable { limits.usable(l) } else { l };
            need as f64 / l.max(1) as f64
        })
    };
    over(host, limits.host, true)
        .max(over(gpu, limits.gpu, true))
        .max(over(shm, limits.shm, false))
}

/// A check of a setting that fits the host by the estimate, with the GPU
/// as the allocator simulation sees it: the setting to use (perhaps with
/// expandable segments), or None.
pub type Verify<'a> = &'a mut dyn FnMut(&Settings) -> Option<Settings>;

/// Searches for the largest settings that fit `job`'s budgets; `verify`
/// (where a GPU is simulated) has the last word on each that fits.
pub fn search(job: &Job, coeffs: &Coefficients, mut verify: Option<Verify>) -> Searched {
    let coeffs = &Coefficients {
        allocator_reserve_fraction: 0.0,
        ..coeffs.clone()
    };
    let req = &job.settings;
    let prep = Prepared::new(job);
    let limits = Limits::of(job);
    let free = free_settings(job, req);
    // (batch, fanout) pairs in order of quality given up; a tie keeps the fanout.
    let mut pairs: Vec<(f64, u64, Vec<i64>)> = Vec::new();
    for batch in batch_sizes(req.batch_size) {
        for fanout in fanouts(&req.fanout) {
            let s = Settings {
                batch_size: batch,
                fanout: fanout.clone(),
                ..req.clone()
            };
            pairs.push((quality_loss(req, &s), batch, fanout));
        }
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let quantised = |loss: f64| (loss * 1e6).round() as i64;
    let mut out = Searched::default();
    let mut models: HashMap<(u64, Vec<i64>), BatchModel> = HashMap::new();
    let req_bm = BatchModel::new(job, req, &prep);
    let req_heap_risk = layerwise_heap_risk(job, req, &req_bm.eval).is_some();
    models.insert((req.batch_size, req.fanout.clone()), req_bm);
    let mut closest: Option<(f64, f64, Settings)> = None;
    let mut alt_closest: Option<(f64, f64, Settings)> = None;
    // The first level of quality at which anything fits, and the first at
    // which something fits without a preprocessing step.
    let (mut best_level, mut alt_level): (Option<i64>, Option<i64>) = (None, None);
    for (loss, batch, fanout) in pairs {
        let level = quantised(loss);
        let searching_best = best_level.is_none_or(|b| level == b);
        let searching_alt = alt_level.is_none_or(|a| level == a);
        if !searching_best && !searching_alt {
            break;
        }
        let bm = *models.entry((batch, fanout.clone())).or_insert_with(|| {
            let s = Settings {
                batch_size: batch,
                fanout: fanout.clone(),
                ..req.clone()
            };
            BatchModel::new(job, &s, &prep)
        });
        // CPU layer-wise inference moved into glibc's heap range: its heap
        // then grows by an amount the model cannot bound (0.3-2 GB on one
        // job run again and again; advice-2611253-06, advised this, was
        // killed). Never advised where the user's own settings are outside it.
        if !req_heap_risk && layerwise_heap_risk(job, req, &bm.eval).is_some() {
            continue;
        }
        // The pair's least-memory corners: where they do not fit, nothing
        // at this pair does, and they are the pair's closest settings.
        let mut corner_fits = [false, false];
        for (i, sorted) in [false, true].into_iter().enumerate() {
            for f in least(&free, sorted, req) {
                let s = Settings {
                    batch_size: batch,
                    fanout: fanout.clone(),
                    ..f.clone()
                };
                out.count += 1;
                let est = estimate_with(job, &s, coeffs, &bm, false);
                if fits(&est, &limits) {
                    corner_fits[i] = true;
                    continue;
                }
                let short = shortfall(&est, &limits);
                if closest.as_ref().is_none_or(|c| (short, loss) < (c.0, c.1)) {
                    closest = Some((short, loss, s.clone()));
                }
                if (!s.is_sorted || req.is_sorted)
                    && alt_closest
                        .as_ref()
                        .is_none_or(|c| (short, loss) < (c.0, c.1))
                {
                    alt_closest = Some((short, loss, s));
                }
            }
        }
        for f in &free {
            let preprocessing = f.is_sorted && !req.is_sorted;
            if !corner_fits[usize::from(preprocessing)] {
                continue;
            }
            if !searching_best && (preprocessing || !searching_alt) {
                continue;
            }
            let s = Settings {
                batch_size: batch,
                fanout: fanout.clone(),
                ..f.clone()
            };
            out.count += 1;
            let est = estimate_with(job, &s, coeffs, &bm, false);
            let verified = if fits(&est, &limits) {
                match verify.as_mut() {
                    Some(v) => v(&s),
                    None => Some(s.clone()),
                }
            } else {
                None
            };
            let Some(s) = verified else {
                // Judged on tensors alone, a setting the simulation refuses
                // reads as fitting: it is at least a little short.
                let short = shortfall(&est, &limits).max(1.0 + 1e-9);
                if closest.as_ref().is_none_or(|c| (short, loss) < (c.0, c.1)) {
                    closest = Some((short, loss, s.clone()));
                }
                if !preprocessing
                    && alt_closest
                        .as_ref()
                        .is_none_or(|c| (short, loss) < (c.0, c.1))
                {
                    alt_closest = Some((short, loss, s));
                }
                continue;
            };
            let secs = epoch_cost(job, &s, &bm.train, est.dataset.edges);
            let key: Key = (
                level,
                preprocessing,
                changes(req, &s),
                (secs * 1e6).round() as i64,
                peaks(&est).0,
            );
            let found = Found { settings: s, key };
            if !preprocessing && searching_alt {
                alt_level = Some(level);
                out.without_preprocessing.push(found.clone());
            }
            if searching_best {
                best_level = Some(level);
                out.fitting.push(found);
            }
        }
    }
    out.fitting.sort_by_key(|f| f.key);
    out.without_preprocessing.sort_by_key(|f| f.key);
    // The alternative matters only where the best needs preprocessing.
    if out.fitting.first().is_none_or(|b| !b.key.1) {
        out.without_preprocessing.clear();
    }
    let best_needs_sorting = out.fitting.first().is_some_and(|b| b.key.1);
    let lean = |(short, _, s): (f64, f64, Settings)| {
        (
            without_needless(job, coeffs, &prep, &limits, &free, req, s),
            short,
        )
    };
    if out.fitting.is_empty() {
        out.closest = closest.map(lean);
    } else if best_needs_sorting && out.without_preprocessing.is_empty() {
        out.closest_without_preprocessing = alt_closest.map(lean);
    }
    out
}

/// The closest settings less the free changes that bring them no nearer
/// (the least-memory corner takes every one; a shared sampler where a
/// single loader samples saves nothing): each is put back to the user's
/// value where the shortfall does not grow and the result is still a
/// setting the search may give.
fn without_needless(
    job: &Job,
    coeffs: &Coefficients,
    prep: &Prepared,
    limits: &Limits,
    free: &[Settings],
    req: &Settings,
    mut s: Settings,
) -> Settings {
    let bm = BatchModel::new(job, &s, prep);
    let short = |t: &Settings| shortfall(&estimate_with(job, t, coeffs, &bm, false), limits);
    let undo: [fn(&mut Settings, &Settings); 7] = [
        |s, r| s.shared_sampler = r.shared_sampler,
        |s, r| s.is_sorted = r.is_sorted,
        |s, r| s.gc_collect = r.gc_collect,
        |s, r| s.pin_memory = r.pin_memory,
        |s, r| s.prefetch_factor = r.prefetch_factor,
        |s, r| s.persistent_workers = r.persistent_workers,
        |s, r| s.eval_loaders = r.eval_loaders,
    ];
    let mut now = short(&s);
    for put_back in undo {
        let mut t = s.clone();
        put_back(&mut t, req);
        let allowed = free.iter().any(|f| {
            Settings {
                batch_size: t.batch_size,
                fanout: t.fanout.clone(),
                ..f.clone()
            } == t
        });
        if t == s || !allowed {
            continue;
        }
        let then = short(&t);
        if then <= now {
            (s, now) = (t, then);
        }
    }
    s
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
