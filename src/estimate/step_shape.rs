//! One training step as the caching-allocator simulator sees it: the tensors
//! of `gpu`'s model in the order PyTorch creates and frees them, at the mean
//! batch, with the coefficient of variation the simulator scales batches by.

use super::fanout::SampleStats;
use super::gpu::{GENERIC_LAYERS, gnn_layer_params, layer_activations, layer_shapes};
use super::host::batch_tensors;
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
    let batch_inputs: Vec<f64> = batch_tensors(job, seeds as f64, s, es)
        .into_iter()
        .filter(|&b| b > 0.0)
        .collect();
    let (saved, transients) = match &job.model {
        ModelKind::Gnn {
            conv,
            layers,
            hidden,
            heads,
            ..
        } => {
            let (mut saved, mut transients) = (Vec::new(), Vec::new());
            for layer in layer_shapes(job, *conv, *layers, *hidden, *heads) {
                let (sv, tr) = layer_activations(*conv, s, es, layer, job.dropout);
                saved.push(sv);
                transients.push(tr);
            }
            (saved, transients)
        }
        ModelKind::Generic {
            activation_bytes_per_sample,
            ..
        } => {
            // Layers unknown: the activations as equal tensors in forward order.
            let act = *activation_bytes_per_sample as f64 * s / GENERIC_LAYERS;
            (vec![act; GENERIC_LAYERS as usize], vec![])
        }
    };
    let bytes = |v: Vec<f64>| v.into_iter().map(|b| b.max(1.0) as u64).collect();
    crate::alloc::GnnStepShape {
        parameters: params.clone(),
        optimizer_state_first_step: optimizer,
        batch_inputs: bytes(batch_inputs),
        saved_activations: bytes(saved),
        transients: bytes(transients),
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
