//! Where a plan's numbers come from: each coefficient it used with its
//! value and provenance, and the assumptions it made where the job is silent
//! (degree shape, edges after to_undirected).

use serde::Serialize;

use crate::estimate::Coefficients;
use crate::spec::Job;

/// One coefficient a plan used.
#[derive(Debug, Clone, Serialize)]
pub struct CoefficientSource {
    /// The coefficient's name as in a calibration file.
    pub name: &'static str,
    /// Its value (bytes, bytes per node or element, or a ratio).
    pub value: f64,
    /// What the value counts.
    pub unit: crate::estimate::coeff_table::Unit,
    /// What it was measured from, and when.
    pub source: String,
}

/// Every coefficient `job`'s estimate used (those whose rise moves one of
/// its phases, on the host or the GPU), with its value and provenance.
pub fn coefficient_sources(job: &Job, c: &Coefficients) -> Vec<CoefficientSource> {
    let phases = |c: &Coefficients| -> Vec<u64> {
        crate::estimate::estimate(job, &job.settings, c)
            .phases
            .iter()
            .flat_map(|p| [p.host_bytes, p.gpu_bytes])
            .collect()
    };
    crate::estimate::coeff_table::used_by(c, phases)
        .into_iter()
        .map(|k| CoefficientSource {
            name: k.name,
            unit: k.unit,
            value: if k.name == "cuda_context_bytes" {
                crate::estimate::cuda_context_bytes(job, c) as f64
            } else {
                (k.get)(c)
            },
            source: c.provenance_of(k.name),
        })
        .collect()
}

/// The assumptions an estimate of `job` rests on where the job is silent.
pub fn assumptions(job: &Job) -> Vec<String> {
    let mut out = Vec::new();
    let d = &job.dataset;
    if matches!(job.model, crate::spec::ModelKind::Gnn { .. }) {
        match &d.degree_histogram {
            None if d.degree.is_none() => {
                let prep = crate::estimate::Prepared::new(job);
                let s = &job.settings;
                let seeds = s.batch_size;
                let split = d.splits().train;
                let top = prep.stats(job, seeds, &s.fanout, split);
                let shaped = prep.shaped_stats(job, seeds, &s.fanout, split);
                out.push(format!(
                    "degrees: {} gives no degree_histogram and no degree shape, so a training batch may hold from about {:.0} nodes and {:.0} edges (a generic power law) up to {:.0} nodes and {:.0} edges (every node drawing its whole fanout); planned at the top of that range; give degree_histogram (or degree: {{exponent, max}}) to narrow it (docs/plan.md, \"Degree shape\")",
                    d.name, shaped.tail_nodes, shaped.tail_edges, top.tail_nodes, top.tail_edges
                ));
            }
            None => out.push(format!(
                "degree shape: {}'s power law (no measured degree_histogram){}; batch sizes follow from it (docs/plan.md, \"Degree shape\")",
                d.name,
                if d.undirected || job.load.to_undirected {
                    ""
                } else {
                    ", with uniform sources and degree-biased later hops, which give the most nodes"
                }
            )),
            Some(h) if !(d.undirected || job.load.to_undirected) && h.reached_counts.is_none() => {
                out.push("degree shape: measured, but without reached_counts later hops are taken as degree-biased (the most nodes)".into())
            }
            Some(_) => {}
        }
        if job.load.to_undirected && !d.undirected && d.undirected_edges.is_none() {
            out.push("to_undirected keeps all 2E edges (no undirected_edges given: duplicates would make it fewer)".into());
        }
        let s = &job.settings;
        if s.eval_loaders == crate::spec::EvalLoaders::OnDemand
            && !s.gc_collect
            && !s.shared_sampler
        {
            out.push(format!(
                "on-demand evaluation loaders are deleted without gc.collect(): each stays alive with its CSC for the rest of the run (CPython's oldest generation is not collected in a training loop), {} of them by the last evaluation{}; gc_collect: true in the job spec if the script calls gc.collect() after del",
                2 * (job.epochs.saturating_sub(1) / job.eval_every.max(1)) + 1,
                if job.eval_every > 1 {
                    format!(" (one every {} epochs)", job.eval_every)
                } else {
                    String::new()
                }
            ));
        }
    }
    out
}

/// Ways a job is known to go wrong that the figures do not cover, measured
/// on real runs.
/// `eval` is the evaluation loader's batches at the job's own settings.
pub fn risks(job: &Job, eval: &crate::estimate::SampleStats) -> Vec<String> {
    let s = &job.settings;
    let mut out = Vec::new();
    if let Some(tensor) = crate::estimate::layerwise_heap_risk(job, s, eval) {
        // crate::estimate::layerwise_heap's measurements; docs/accuracy.md.
        let seeds = job.eval_batch_size.unwrap_or(s.batch_size).max(1);
        let larger =
            (seeds as f64 * crate::estimate::LAYERWISE_RISK_BELOW / tensor.max(1.0)).ceil() as u64;
        out.push(format!(
            "glibc's heap: CPU layer-wise inference in batches of about {:.0} nodes ({} tensors; glibc mmaps only those over 32 MiB) can grow the heap beyond this plan by an amount it does not bound (one real job, 7 runs unchanged: its heap 0.3 to 2.0 GB); an evaluation batch of {} or more seeds (tensors over 64 MiB) or MALLOC_MMAP_THRESHOLD_=65536 (evaluation 2.9x slower) avoids it",
            eval.mean_nodes,
            crate::units::fmt_bytes(tensor as u64),
            larger.next_power_of_two(),
        ));
    }
    let we = job.eval_num_workers.unwrap_or(s.num_workers);
    if crate::estimate::lingering_workers_per_loader(s, we) > 0.0 {
        // benches/pyg, tests/fixtures/pyg/sealed-linger-2611265*.jsonl;
        // the bound: estimate/lingering.rs.
        out.push(
            format!(
                "deleted on-demand loaders keep their persistent workers alive without gc.collect(): this plan counts those of the last {} evaluations, with the old heap pages each loader's workers keep once training rewrites them (copy-on-write), a bound (collections shut some down at times no script shows, so the real peak may be well below it), and of 10 such real jobs 5 died or hung as workers were shut down; call gc.collect() after `del loader`",
                crate::estimate::LINGERING_EVALUATIONS_MAX
            ),
        );
    }
    out
}
