//! One training step as the caching-allocator simulator sees it: the tensors
//! of `gpu`'s model in the order PyTorch creates and frees them, at the mean
//! batch, with the coefficient of variation the simulator scales batches by.

use super::fanout::SampleStats;
use super::gpu::{
    GENERIC_LAYERS, backward_scratch, float_copy, gnn_layer_params, layer_activations,
    layer_shapes, output_grad,
};
use super::host::batch_tensors;
use super::step_parts::{backward_parts, saved_parts, transient_parts};
use crate::spec::{Job, ModelKind};

/// Parameter tensors' bytes, one per layer (float32).
fn layer_params(job: &Job) -> Vec<u64> {
    match &job.model {
        ModelKind::Gnn {
            conv,
            layers,
            hidden,
            heads,
            relations,
        } => {
            let d = &job.dataset;
            gnn_layer_params(
                *conv, *layers, d.features, *hidden, *heads, d.classes, *relations,
            )
            .into_iter()
            .map(|p| 4 * p)
            .collect()
        }
        ModelKind::Generic { params, .. } => vec![4 * params],
    }
}

/// One training step as the allocator sees it, at the mean batch of `stats`:
/// parameters, the batch's tensors, each layer's saved activations with its
/// message-passing transient, gradients, optimizer state. The simulator scales
/// the per-batch tensors by each batch's size factor (cv = sd / mean).
pub fn step_shape(job: &Job, stats: &SampleStats, seeds: u64) -> crate::alloc::GnnStepShape {
    let params = layer_params(job);
    let state_per_param = job.optimizer.state_per_param() as usize;
    let optimizer = params
        .iter()
        .flat_map(|&p| std::iter::repeat_n(p, state_per_param))
        .collect();
    let (s, es) = (stats.mean_nodes, stats.mean_edges);
    // `batch.to(device)` moves every tensor the loader built.
    // A float32 model's copy of half or double features (`x.float()`) is
    // pushed below, alive from the forward's start like the batch (both
    // half-precision jobs of tests/fixtures/gpu/step-peak-h200-2611261.txt
    // held it at their peak); empty tensors are dropped after.
    let bytes = |v: Vec<f64>| -> Vec<u64> { v.into_iter().map(|b| b.max(1.0) as u64).collect() };
    let (mut t_parts, mut b_parts) = (Vec::new(), Vec::new());
    let (mut s_parts, mut s_after, mut g_parts) = (Vec::new(), Vec::new(), Vec::new());
    let mut batch_inputs: Vec<f64> = batch_tensors(job, seeds as f64, s, es).to_vec();
    let (saved, transients, backward) = match &job.model {
        ModelKind::Gnn {
            conv,
            layers,
            hidden,
            heads,
            ..
        } => {
            batch_inputs.push(float_copy(job, s));
            let (mut saved, mut transients, mut backward) = (Vec::new(), Vec::new(), Vec::new());
            let shapes = layer_shapes(job, *conv, *layers, *hidden, *heads);
            for (l, layer) in shapes.into_iter().enumerate() {
                let (sv, tr) = layer_activations(*conv, s, es, layer, job.dropout);
                saved.push(sv);
                transients.push(tr);
                t_parts.push(bytes(transient_parts(*conv, s, es, layer)));
                let (before, after) = saved_parts(*conv, s, es, layer, job.dropout);
                s_parts.push(bytes(before));
                s_after.push(bytes(after));
                // The output's gradient where it is not the saved tensors' size:
                // one tensor, or none (GAT's).
                let g = output_grad(*conv, sv);
                let g_tensors = if g > 0.0 { vec![g] } else { vec![] };
                g_parts.push((g != sv).then(|| bytes(g_tensors)));
                // As the estimate's backward moment (gnn_activations).
                let b = backward_scratch(*conv, l, s, es, layer, tr);
                backward.push(b);
                b_parts.push(bytes(backward_parts(*conv, s, es, layer, b)));
            }
            (saved, transients, backward)
        }
        ModelKind::Generic {
            activation_bytes_per_sample,
            ..
        } => {
            // Layers unknown: the activations as equal tensors in forward order.
            let act = *activation_bytes_per_sample as f64 * s / GENERIC_LAYERS;
            (vec![act; GENERIC_LAYERS as usize], vec![], vec![])
        }
    };
    batch_inputs.retain(|&b| b > 0.0);
    crate::alloc::GnnStepShape {
        parameters: params.clone(),
        optimizer_state_first_step: optimizer,
        batch_inputs: bytes(batch_inputs),
        saved_activations: bytes(saved),
        transients: bytes(transients),
        backward_transients: backward.into_iter().map(|b| b as u64).collect(),
        transient_parts: t_parts,
        backward_parts: b_parts,
        saved_parts: s_parts,
        saved_after: s_after,
        grad_parts: g_parts,
        param_grads: params,
        retained_outputs: vec![],
        steps_per_epoch: 0,
        size_cv: if stats.mean_nodes > 0.0 {
            stats.sd_nodes / stats.mean_nodes
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{AllocConf, DeviceMemory, run_trace, training_trace_with};
    use crate::estimate::{BatchModel, Prepared, gpu_breakdown};

    /// The simulated step reaches the tensors the estimate counts: before,
    /// the simulation left out the float32 copy of half-precision features
    /// and the backward's message gradients, and its allocated peak was 23 %
    /// under the estimate's (and a real H200 step's) for a GCN job.
    #[test]
    fn the_simulated_step_holds_the_estimates_tensors_for_every_conv() {
        for conv in ["sage", "gcn", "gat", "gin"] {
            let text = format!(
                "dataset: ogbn-arxiv\nmodel: {{conv: {conv}, layers: 3, hidden: 64}}\nloader: {{batch_size: 1024, fanout: [15, 10, 5]}}\n"
            );
            let mut spec = crate::spec::from_text(&text, "test").unwrap().spec;
            spec.budget.gpu = Some("h100".into());
            let mut job = Job::from_spec(&spec).unwrap();
            job.dataset.feature_dtype = crate::profiles::Dtype::Bfloat16;
            let bm = BatchModel::new(&job, &job.settings, &Prepared::new(&job));
            let g = gpu_breakdown(&job, &bm.train, &bm.eval, 1024, 1024);
            let shape = step_shape(&job, &bm.train, 1024);
            let out = run_trace(
                training_trace_with(&shape, [1.0, 1.0].into_iter()),
                &AllocConf::default(),
                &DeviceMemory::new(80 << 30, 0),
            );
            let est = (g.params + g.grads + g.optimizer + g.batch + g.activations_mean) as f64;
            let sim = out.peak_allocated_bytes as f64;
            eprintln!("{conv}: simulated / estimated = {:.3}", sim / est);
            // Never below (the simulated reserve is built on it); a little
            // above (up to 18 % for GCN), where the trace holds a layer's
            // output gradient beside its saved tensors.
            assert!(
                (0.97..1.25).contains(&(sim / est)),
                "{conv}: simulated {sim} B, estimated {est} B"
            );
        }
    }

    /// GAT jobs' real batches, in their real order, through the simulated
    /// step reach what PyTorch's allocator measured: five development jobs
    /// on an H200 (tests/fixtures/gpu/gat-steps-h200-2611290.json, their first
    /// 4-8 steps; the histories the GAT parts were read from). With a layer's
    /// saved tensors as one block and its output's gradient as large, the
    /// reserve was about +48 %, 0 %, -33 %, -38 % and +12 % off and the
    /// allocated peak -18 % to +12 %; now -2.4 %, +1.6 %, -0.7 %, -27.7 %
    /// and +4.0 %, and +0.6 % to +3.8 % (GiB-rounded figures, examples/step_replay.rs).
    #[test]
    fn gat_steps_in_their_real_order_reach_the_measured_peaks() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/gpu/gat-steps-h200-2611290.json"
        );
        let jobs: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut reserve_errors = Vec::new();
        for j in &jobs {
            let id = j["id"].as_str().unwrap();
            let text = serde_json::to_string(&j["job"]).unwrap();
            let job = Job::from_spec(&crate::spec::from_text(&text, id).unwrap().spec).unwrap();
            let sizes: Vec<(f64, f64)> = j["train_sizes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
                .collect();
            let n = sizes.len() as f64;
            let (mn, me) = sizes
                .iter()
                .fold((0.0, 0.0), |a, b| (a.0 + b.0 / n, a.1 + b.1 / n));
            let shape = step_shape(&job, &SampleStats::fixed(mn, me), job.settings.batch_size);
            let factors = sizes.iter().map(|&(a, b)| (a + b) / (mn + me));
            let out = run_trace(
                training_trace_with(&shape, factors),
                &AllocConf::default(),
                &DeviceMemory::new(140 << 30, 0),
            );
            let m = &j["measured"];
            // cuBLAS's workspaces (64 MiB on an H200) come from the caching
            // allocator too; plan counts them in its context figure.
            let err = |sim: u64, real: &serde_json::Value| {
                (sim + (64 << 20)) as f64 / real.as_f64().unwrap() - 1.0
            };
            let alloc = err(out.peak_allocated_bytes, &m["allocated_peak"]);
            assert!(
                alloc.abs() < 0.08,
                "{id}: allocated {:+.1} %",
                100.0 * alloc
            );
            reserve_errors.push(err(out.peak_reserved_bytes, &m["reserved_peak"]));
        }
        assert_eq!(reserve_errors.len(), 5);
        reserve_errors.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
        let median = reserve_errors[2].abs();
        assert!(
            median < 0.10,
            "median reserve error {:.1} %",
            100.0 * median
        );
    }
}
