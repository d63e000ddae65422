//! GPU memory of one training step: context, parameters, gradients, optimizer
//! state, the batch, the activations message passing saves or gathers, and
//! the caching allocator's reserve (a fraction here; `alloc` simulates it).
//! PyG's NeighborLoader does not trim layers: every layer sees all S sampled
//! nodes and all Es sampled edges of the batch.

use serde::Serialize;

use super::Coefficients;
use super::fanout::SampleStats;
use super::host::batch_tensors;
use crate::spec::{Conv, Job, ModelKind};

/// Bytes of one float32 element.
pub(super) const F32: f64 = 4.0;
/// Bytes of an int64 (an edge_index entry).
pub(super) const I64: f64 = 8.0;

/// Layers assumed for a model given by size alone (`params`, bytes per sample).
pub(super) const GENERIC_LAYERS: f64 = 8.0;

/// GPU bytes by component, for training and for evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct GpuBreakdown {
    /// Parameters (float32).
    pub params: u64,
    /// Gradients, one per parameter.
    pub grads: u64,
    /// Optimizer state (Adam: two moments per parameter).
    pub optimizer: u64,
    /// The largest training batch's tensors.
    pub batch: u64,
    /// Activations saved for backward plus the largest transient, at the largest batch.
    pub activations: u64,
    /// Activations at the mean batch (what most steps need).
    pub activations_mean: u64,
    /// The largest evaluation batch's tensors.
    pub eval_batch: u64,
    /// Evaluation activations (no_grad: one layer at a time).
    pub eval_activations: u64,
}

/// Parameter count of each of `layers` layers from `f_in` features to
/// `classes` classes; `relations` > 1 keeps each layer's weights once per
/// relation (`to_hetero`, `HeteroConv`; R-GCN and R-GAT by their own formula).
/// The shapes are those PyG's docs give for each layer's constructor.
pub fn gnn_layer_params(
    conv: Conv,
    layers: u32,
    f_in: u64,
    hidden: u64,
    heads: u32,
    classes: u64,
    relations: u32,
) -> Vec<u64> {
    let mut out = Vec::with_capacity(layers as usize);
    let mut d_in = f_in;
    let r = u64::from(relations.max(1));
    for l in 0..layers {
        let last = l + 1 == layers;
        let d_out = if last { classes.max(1) } else { hidden };
        let h = if last && !keeps_heads(conv) {
            1
        } else {
            heads as u64
        };
        let one = match conv {
            // lin_l (d_in·d_out + bias) and lin_r (d_in·d_out)
            Conv::Sage => 2 * d_in * d_out + d_out,
            Conv::Gcn => d_in * d_out + d_out,
            // lin (d_in·h·d_out), att_src and att_dst (h·d_out each), bias (h·d_out)
            Conv::Gat => d_in * h * d_out + 3 * h * d_out,
            // 2-layer MLP: d_in·d_out + d_out + d_out·d_out + d_out
            Conv::Gin | Conv::Gine => d_in * d_out + d_out * d_out + 2 * d_out,
            // lin_l and lin_r (d_in·h·d_out + h·d_out each), att (h·d_out), bias (h·d_out)
            Conv::Gatv2 => 2 * d_in * h * d_out + 4 * h * d_out,
            // lin_key, lin_query, lin_value and lin_skip (d_in·h·d_out + h·d_out each)
            Conv::Transformer => 4 * (d_in * h * d_out + h * d_out),
            // one weight per relation, the root weight and the bias
            Conv::Rgcn => r * d_in * d_out + d_in * d_out + d_out,
            // one projection per relation, q and k (h·d_out each), bias
            Conv::Rgat => r * d_in * h * d_out + 3 * h * d_out,
            Conv::Mlp => d_in * d_out + d_out,
        };
        let per_relation = !matches!(conv, Conv::Rgcn | Conv::Rgat | Conv::Mlp);
        out.push(if per_relation { one * r } else { one });
        d_in = d_out * h;
    }
    out
}

/// Attention kinds keep their heads in the output layer (averaged, concat=False).
fn keeps_heads(conv: Conv) -> bool {
    matches!(
        conv,
        Conv::Gat | Conv::Gatv2 | Conv::Transformer | Conv::Rgat
    )
}

/// Parameter count of `layers` layers from `f_in` features to `classes` classes.
pub fn gnn_params(
    conv: Conv,
    layers: u32,
    f_in: u64,
    hidden: u64,
    heads: u32,
    classes: u64,
    relations: u32,
) -> u64 {
    gnn_layer_params(conv, layers, f_in, hidden, heads, classes, relations)
        .iter()
        .sum()
}

/// One message-passing layer's shape.
#[derive(Debug, Clone, Copy)]
pub(super) struct LayerShape {
    /// Input channels.
    pub d_in: f64,
    /// Output channels per head.
    pub d_out: f64,
    /// Attention heads (1 but for GAT's hidden layers).
    pub heads: f64,
    /// The output layer (no activation after it).
    pub last: bool,
}

/// Each message-passing layer's shape, input to output: hidden layers
/// `hidden` wide per head, the output layer `classes` wide (one head but
/// for GAT, which keeps its heads there and averages them).
pub(super) fn layer_shapes(
    job: &Job,
    conv: Conv,
    layers: u32,
    hidden: u64,
    heads: u32,
) -> Vec<LayerShape> {
    let mut d_in = job.dataset.features as f64;
    (0..layers)
        .map(|l| {
            let last = l + 1 == layers;
            let d_out = if last {
                job.dataset.classes.max(1) as f64
            } else {
                hidden as f64
            };
            let h = if last && !keeps_heads(conv) {
                1.0
            } else {
                heads as f64
            };
            let layer = LayerShape {
                d_in,
                d_out,
                heads: h,
                last,
            };
            d_in = d_out * h;
            layer
        })
        .collect()
}

/// (saved for backward, transient while computing) bytes of one layer at
/// `s` nodes and `es` edges; `dropout`: a dropout with p > 0 follows each
/// hidden layer.
pub(super) fn layer_activations(
    conv: Conv,
    s: f64,
    es: f64,
    layer: LayerShape,
    dropout: bool,
) -> (f64, f64) {
    let LayerShape {
        d_in,
        d_out,
        heads,
        last,
    } = layer;
    // ReLU output after every hidden layer, and dropout's output and mask
    // when p > 0 (with p = 0 torch returns its input: nothing is kept).
    let per_elem = F32 + if dropout { F32 + 1.0 } else { 0.0 };
    let act = if last {
        0.0
    } else {
        s * d_out * heads * per_elem
    };
    match conv {
        // Autograd keeps the mean aggregate (lin_l's input, S·d_in) and the
        // ReLU's output; lin_l's and lin_r's outputs (2·S·d_out) live only
        // until they are added, and the gathered messages x_j (Es·d_in) beside
        // the scatter's sum (S·d_in) only until the mean is formed. The last
        // layer's output (the logits) is kept for the loss.
        Conv::Sage => (
            s * d_in * F32 + act + if last { s * d_out * F32 } else { 0.0 },
            (es * d_in * F32 + s * d_in * F32).max(2.0 * s * d_out * F32),
        ),
        // GCNConv normalises with add_remaining_self_loops (PyG's gcn_norm,
        // on by default): Es + S edges, as for GAT. Autograd keeps only the
        // edge norm (one per edge; the product edge_norm·x_j needs no x_j
        // since the norm takes no gradient) and the ReLU's output. In
        // flight until propagate returns: the linear output (S·d_out), the
        // gathered messages x_j, their weighted copy (2·(Es + S)·d_out),
        // the scatter's sum (S·d_out) and the self-looped edge_index
        // (2·(Es + S) int64). Measured on CPU (benches/pyg/gcn_step.py):
        // the step's peak is in the forward pass, within 3 % of this.
        Conv::Gcn => {
            let es = es + s;
            (
                es * F32 + act,
                2.0 * s * d_out * F32 + 2.0 * es * d_out * F32 + 2.0 * es * I64,
            )
        }
        // projected nodes (S·h·d_out), the per-edge attention tensors (Es·h each)
        // and the weighted messages kept for backward (Es·h·d_out); gathered x_j transient.
        // GATConv adds a self-loop per node: Es + S edges. Per edge and
        // head: the gathered α_j and α_i, their sum, LeakyReLU's output,
        // softmax's exponent and its normalised output (six), and the
        // weighted messages.
        Conv::Gat => {
            let es = es + s;
            (
                s * heads * d_out * F32 + 6.0 * es * heads * F32 + es * heads * d_out * F32 + act,
                es * heads * d_out * F32,
            )
        }
        // GINConv: mlp((1 + eps)·x + Σ x_j), PyG's GIN building
        // MLP([d_in, d_out, d_out]). Autograd keeps the MLP's input (the sum,
        // S·d_in), its inner ReLU's output (S·d_out) and the outer ReLU's;
        // the aggregate and (1 + eps)·x live only until added, the first
        // linear's output only until its ReLU. The last layer's output (the
        // logits) is kept for the loss. A real H200 step of a 4-layer GIN
        // held 7 ReLU outputs (4 inner, 3 outer), one sum per layer and the
        // logits at its peak (tests/fixtures/gpu/step-peak-h200-2611261.txt);
        // 3·S·d_out for the MLP, as before, counted two tensors too many.
        Conv::Gin => (
            s * d_in * F32 + s * d_out * F32 + act + if last { s * d_out * F32 } else { 0.0 },
            es * d_in * F32,
        ),
        // As GIN, and the messages relu(x_j + edge_attr) (Es·d_in) are kept.
        Conv::Gine => (
            s * d_in * F32 + 3.0 * s * d_out * F32 + es * d_in * F32 + act,
            es * d_in * F32,
        ),
        // GATv2Conv (self-loops: Es + S edges): x_l and x_r (2·S·h·d_out),
        // per edge the sum x_i + x_j and its LeakyReLU (2·Es·h·d_out), the
        // scores, softmax's exponent and output (Es·h each, with the
        // gathered score: four), the weighted messages (Es·h·d_out).
        Conv::Gatv2 => {
            let es = es + s;
            (
                2.0 * s * heads * d_out * F32
                    + 3.0 * es * heads * d_out * F32
                    + 4.0 * es * heads * F32
                    + act,
                es * heads * d_out * F32,
            )
        }
        // TransformerConv: q, k, v and the skip (4·S·h·d_out); per edge the
        // gathered q_i, k_j, v_j (3·Es·h·d_out), the scores and softmax
        // (3·Es·h) and the weighted values (Es·h·d_out).
        Conv::Transformer => (
            4.0 * s * heads * d_out * F32
                + 4.0 * es * heads * d_out * F32
                + 3.0 * es * heads * F32
                + act,
            es * heads * d_out * F32,
        ),
        // RGCNConv: the aggregate of each relation's messages (S·d_in per
        // relation, taken as the relations' share of the edges: S·d_in
        // overall) and the summed output (S·d_out); messages transient.
        Conv::Rgcn => (s * d_in * F32 + s * d_out * F32 + act, es * d_in * F32),
        // RGATConv: as GAT over the relation-projected nodes.
        Conv::Rgat => {
            let es = es + s;
            (
                2.0 * s * heads * d_out * F32
                    + 6.0 * es * heads * F32
                    + es * heads * d_out * F32
                    + act,
                es * heads * d_out * F32,
            )
        }
        // Linear layers: the input of each (S·d_in) is kept; no messages.
        Conv::Mlp => (
            s * d_in * F32 + act + if last { s * d_out * F32 } else { 0.0 },
            0.0,
        ),
    }
}

/// The gradient of a layer's output as the backward pass holds it at its
/// peak: about one more copy of the layer's saved tensors (`sv`), but none
/// for GATConv: in the recorded H200 histories of five development jobs its
/// S·h·d output gradient is freed as the first of its per-edge gradients
/// (`backward_scratch`) is made, before the others.
pub(super) fn output_grad(conv: Conv, sv: f64) -> f64 {
    match conv {
        Conv::Gat => 0.0,
        _ => sv,
    }
}

/// Bytes a layer's backward holds beside the saved tensors and its output's
/// gradient: GCN's two message-sized gradients (of the weighted messages and
/// of x_j, Es + S rows each, measured by benches/pyg/gcn_step.py); GAT's
/// per-edge gradients (below); for SAGE and GIN the gradient of the gathered
/// messages (Es·d_in), for the others the layer's own transient (`tr`); none
/// in the first layer, whose messages get no gradient (GCN's and GAT's still
/// do: their messages are built from the linear output, which does).
pub(super) fn backward_scratch(
    conv: Conv,
    l: usize,
    s: f64,
    es: f64,
    layer: LayerShape,
    tr: f64,
) -> f64 {
    match conv {
        Conv::Gcn => 2.0 * (es + s) * layer.d_out * F32,
        // GATConv, every layer (x_j is the linear output's, which takes a
        // gradient): the weighted messages' gradient, its product with x_j
        // and x_j's gradient (Es'·h·d each, Es' = Es + S) and the attention
        // weights' gradient (Es'·h), alive together in the recorded H200
        // histories of five development jobs.
        Conv::Gat => {
            let es = es + s;
            3.0 * es * layer.heads * layer.d_out * F32 + es * layer.heads * F32
        }
        _ if l == 0 => 0.0,
        Conv::Sage | Conv::Gin => es * layer.d_in * F32,
        _ => tr,
    }
}

/// The bytes of the float32 copy a float32 model makes of half or double
/// features (`x.float()`) at `s` nodes: the first linear layer saves it.
pub(super) fn float_copy(job: &Job, s: f64) -> f64 {
    if job.dataset.feature_dtype == crate::profiles::Dtype::Float32 {
        0.0
    } else {
        s * job.dataset.features as f64 * F32
    }
}

/// (training, evaluation) activation peaks of a GNN at `s` nodes and `es` edges.
///
/// Training memory peaks at one of two kinds of moment (the calibration's
/// step, on the CPU and through the device allocator, showed both):
/// - forward through layer l: the saved tensors of layers up to l and layer
///   l's message transient (x_j gathered, not yet scattered);
/// - backward through layer l: the saved tensors of layers up to l (later
///   layers' are freed by then) and the gradients being formed: about one
///   more copy of layer l's saved tensors, plus the messages' gradient
///   (transient-sized) where the layer's input needs a gradient (not the
///   first layer's: the features do not).
fn gnn_activations(
    job: &Job,
    conv: Conv,
    layers: u32,
    hidden: u64,
    heads: u32,
    s: f64,
    es: f64,
) -> (f64, f64) {
    let (mut saved, mut peak, mut eval_max) = (0.0_f64, 0.0_f64, 0.0_f64);
    // GATConv's backward as the recorded H200 histories hold it (per-edge
    // gradients, no output-sized one) is the GPU's. A CPU job keeps the
    // figure glibc's kept-heap ratios were fitted with: its measured CPU
    // step is higher still (docs/accuracy.md, "GATConv's CPU training
    // step"), but raised alone it makes whole CPU GAT jobs worse (the 41
    // GAT rows of the real-run corpora: 3 -> 1 more than 5 % low, +6.5
    // points on average, the band's cgroup p90 +0.380 -> +0.464).
    let cpu_gat = matches!(conv, Conv::Gat) && job.device != crate::spec::Device::Cuda;
    for (l, layer) in layer_shapes(job, conv, layers, hidden, heads)
        .into_iter()
        .enumerate()
    {
        let d_in = layer.d_in;
        let (sv, tr) = layer_activations(conv, s, es, layer, job.dropout);
        saved += sv;
        if l == 0 {
            // A float32 model converts half or double features first
            // (`x.float()`): the copy is lin_r's saved input.
            saved += float_copy(job, s);
        }
        // GCN's layer output (the ReLU's, which it saves) is formed after
        // its transients are gone: its forward moment has the earlier
        // layers' saved tensors only. Its backward holds the two
        // message-sized gradients (of the weighted messages and of x_j,
        // Es + S rows each) beside the earlier layers' saved tensors: below
        // the forward moment, as measured (benches/pyg/gcn_step.py).
        let gcn = matches!(conv, Conv::Gcn);
        let forward = if gcn { saved - sv + tr } else { saved + tr };
        // The first layer's aggregate of the input features gets no
        // gradient, and (but for GCN's and GAT's) neither do its messages.
        let input_aggregate = if l == 0 && matches!(conv, Conv::Sage | Conv::Gin) {
            s * d_in * F32
        } else {
            0.0
        };
        let backward = if gcn {
            saved - sv + backward_scratch(conv, l, s, es, layer, tr)
        } else if cpu_gat {
            saved + sv + if l == 0 { 0.0 } else { tr }
        } else {
            saved + output_grad(conv, sv) - input_aggregate
                + backward_scratch(conv, l, s, es, layer, tr)
        };
        peak = peak.max(forward).max(backward);
        // no_grad: a layer's input, its output and its transient at once.
        // GIN's `out + (1 + eps) * x_r` (PyG's GINConv and GINEConv.forward)
        // holds the aggregate, the scaled input and their sum beside the
        // input: 3·S·d_in, more than the messages' moment where a batch has
        // fewer than two edges a node (measured: benches/pyg/gin_eval_step.py).
        let combine = if matches!(conv, Conv::Gin | Conv::Gine) {
            3.0 * s * d_in * F32
        } else {
            0.0
        };
        eval_max = eval_max.max(s * d_in * F32 + (sv + tr).max(combine));
    }
    (peak, eval_max)
}

/// GPU components for `job` with training and evaluation batch statistics.
pub fn gpu_breakdown(
    job: &Job,
    train: &SampleStats,
    eval: &SampleStats,
    train_seeds: u64,
    eval_seeds: u64,
) -> GpuBreakdown {
    let params = match &job.model {
        ModelKind::Gnn {
            conv,
            layers,
            hidden,
            heads,
            relations,
        } => gnn_params(
            *conv,
            *layers,
            job.dataset.features,
            *hidden,
            *heads,
            job.dataset.classes,
            *relations,
        ),
        ModelKind::Generic { params, .. } => *params,
    };
    let p = params * 4;
    let optimizer = job.optimizer.state_per_param() * p;
    // `batch.to(device)` moves every tensor the loader built, as on the host.
    let batch_at = |seeds: u64, st: &SampleStats| -> f64 {
        batch_tensors(job, seeds as f64, st.tail_nodes, st.tail_edges)
            .iter()
            .sum()
    };
    let (activations, activations_mean, eval_activations) = match &job.model {
        ModelKind::Gnn {
            conv,
            layers,
            hidden,
            heads,
            ..
        } => {
            let act =
                |s: f64, es: f64| gnn_activations(job, *conv, *layers, *hidden, *heads, s, es);
            (
                act(train.tail_nodes, train.tail_edges).0,
                act(train.mean_nodes, train.mean_edges).0,
                act(eval.tail_nodes, eval.tail_edges).1,
            )
        }
        ModelKind::Generic {
            activation_bytes_per_sample,
            ..
        } => {
            // `nodes` count samples. Layers unknown: eight equal ones, as in
            // the allocator's step shape; no_grad holds one layer's input and output.
            let act = *activation_bytes_per_sample as f64;
            (
                act * train.tail_nodes,
                act * train.mean_nodes,
                act * eval.tail_nodes * 2.0 / GENERIC_LAYERS,
            )
        }
    };
    let (batch, eval_batch) = (batch_at(train_seeds, train), batch_at(eval_seeds, eval));
    GpuBreakdown {
        params: p,
        grads: p,
        optimizer,
        batch: batch as u64,
        activations: activations as u64,
        activations_mean: activations_mean as u64,
        eval_batch: eval_batch as u64,
        eval_activations: eval_activations as u64,
    }
}

/// The CUDA context as NVML sees it: the GPU profile's figure (PyTorch's
/// context on that card), else the coefficient. A context calibration
/// measured (headroom's own CUDA process, fewer kernels than PyTorch loads)
/// raises the profile's figure when larger, never lowers it.
pub fn cuda_context_bytes(job: &Job, coeffs: &Coefficients) -> u64 {
    let profile = job
        .gpu
        .as_ref()
        .and_then(|p| p.context_mib)
        .map(|m| m << 20);
    match (profile, coeffs.cuda_context_measured) {
        (Some(p), true) => p.max(coeffs.cuda_context_bytes),
        (Some(p), false) => p,
        (None, _) => coeffs.cuda_context_bytes,
    }
}

/// Allocator reserve on top of the per-batch allocations.
pub fn reserve(coeffs: &Coefficients, dynamic: u64) -> u64 {
    (dynamic as f64 * coeffs.allocator_reserve_fraction) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_context_only_raises_the_gpu_profiles() {
        let mut spec = crate::spec::JobSpec::for_dataset("ogbn-arxiv");
        spec.budget.gpu = Some("h100-80gb".into());
        let job = Job::from_spec(&spec).unwrap();
        // The H100 profile's figure (806 MiB, measured with torch 2.11); an
        // unmeasured coefficient does not override it.
        let profile = job.gpu.as_ref().and_then(|g| g.context_mib).unwrap() << 20;
        let mut c = Coefficients {
            cuda_context_bytes: 321 << 20,
            ..Coefficients::default()
        };
        assert_eq!(cuda_context_bytes(&job, &c), profile);
        // A calibration on an older stack can read less: a smaller measured
        // context does not lower the profile's, a larger one raises it.
        c.cuda_context_measured = true;
        assert_eq!(cuda_context_bytes(&job, &c), profile);
        c.cuda_context_bytes = profile + (100 << 20);
        assert_eq!(cuda_context_bytes(&job, &c), profile + (100 << 20));
        // Without a profile the measured figure is all there is.
        let raw = Job::from_spec(&crate::spec::JobSpec::for_dataset("ogbn-arxiv")).unwrap();
        assert_eq!(cuda_context_bytes(&raw, &c), profile + (100 << 20));
    }

    /// One GCN training step on the CPU, measured by benches/pyg/gcn_step.py
    /// (PyG 2.8.1's `GCN`, torch 2.15, every tensor its own mapping so that
    /// the RSS high-water mark is the live tensors): (S, Es, features,
    /// hidden, layers, the step's peak in MiB, which is its forward pass).
    /// Without GCNConv's self-loops the model said 34 % low on the first.
    /// The job the benches/pyg step scripts measure: `features` wide, 32
    /// classes, no dropout.
    fn measured_job(features: u64) -> Job {
        let mut job = Job::from_spec(&crate::spec::JobSpec::for_dataset("ogbn-arxiv")).unwrap();
        job.dataset.features = features;
        job.dataset.classes = 32;
        job.dropout = false;
        job
    }

    #[test]
    fn gcn_step_peak_is_within_four_percent_of_a_measured_cpu_step() {
        let measured = [
            (200_000.0, 200_000.0, 64, 256, 2, 1195.0),
            (200_000.0, 1_000_000.0, 64, 256, 2, 2797.0),
            (400_000.0, 200_000.0, 64, 256, 2, 1989.0),
            (200_000.0, 400_000.0, 128, 512, 3, 3560.0),
            (100_000.0, 1_000_000.0, 256, 128, 2, 1228.0),
        ];
        for (s, es, features, hidden, layers, mib) in measured {
            let job = measured_job(features);
            let (train, _) = gnn_activations(&job, Conv::Gcn, layers, hidden, 1, s, es);
            let err = (train / (1u64 << 20) as f64 - mib) / mib;
            assert!(err.abs() < 0.04, "S {s}, Es {es}: {err:+.3}");
        }
    }

    #[test]
    fn gin_no_grad_pass_is_at_most_five_percent_low_on_a_measured_cpu_pass() {
        // PyG's GIN(F, H, L, 32) run once under no_grad on the CPU, every
        // tensor its own mapping (`MALLOC_MMAP_THRESHOLD_=65536
        // benches/pyg/.venv/bin/python benches/pyg/gin_eval_step.py S Es F H L
        // 32`, twice each, equal within 0.1 %): the RSS high-water over x and
        // edge_index. The estimate's evaluation moment counts the layer's
        // input too, so x (S·F·4) is added to the measurement.
        let measured = [
            (20_000.0, 20_000.0, 1024, 1024, 1, 245_669_888.0),
            (20_000.0, 20_000.0, 256, 256, 2, 82_427_904.0),
            (20_000.0, 60_000.0, 512, 128, 2, 166_010_880.0),
            (40_000.0, 20_000.0, 128, 64, 3, 61_358_080.0),
            (30_000.0, 30_000.0, 64, 512, 2, 247_459_840.0),
        ];
        for (s, es, features, hidden, layers, bytes) in measured {
            let job = measured_job(features);
            let (_, eval) = gnn_activations(&job, Conv::Gin, layers, hidden, 1, s, es);
            let want = bytes + s * features as f64 * F32;
            let err = (eval - want) / want;
            // Before GIN's combine moment was counted: -23.4 %, -0.5 %, +8.8 %,
            // -12.4 %, -24.7 %. The one over is the messages' moment (Es = 3S),
            // where the MLP's outputs, counted, do not exist yet.
            assert!(
                (-0.05..0.10).contains(&err),
                "S {s}, Es {es}, F {features}, H {hidden}, L {layers}: {err:+.3}"
            );
        }
    }

    #[test]
    fn sage_parameters_by_hand() {
        // 2 layers, 128 → 256 → 172: layer 1: 2·128·256 + 256 = 65,792;
        // layer 2: 2·256·172 + 172 = 88,236; total 154,028.
        assert_eq!(gnn_params(Conv::Sage, 2, 128, 256, 1, 172, 1), 154_028);
    }

    #[test]
    fn gat_heads_widen_the_next_layer() {
        // layer 1: 100·(4·64) + 3·4·64 = 25,600 + 768 = 26,368;
        // layer 2 (in 256; PyG's GAT keeps 4 heads in its output layer and
        // averages them, 47 classes): 256·(4·47) + 3·4·47 = 48,128 + 564 = 48,692.
        assert_eq!(gnn_params(Conv::Gat, 2, 100, 64, 4, 47, 1), 75_060);
    }

    fn shape(d_in: f64, d_out: f64, last: bool) -> LayerShape {
        LayerShape {
            d_in,
            d_out,
            heads: 1.0,
            last,
        }
    }

    #[test]
    fn sage_layer_saves_the_aggregate_and_its_output() {
        // Last layer, S = 1000, Es = 10,000, 256 → 172:
        // saved = aggregate 1000·256·4 + logits 1000·172·4 = 1,024,000 + 688,000 = 1,712,000
        // transient = messages 10,000·256·4 + scatter sum 1000·256·4 = 11,264,000
        let (sv, tr) = layer_activations(
            Conv::Sage,
            1000.0,
            10_000.0,
            shape(256.0, 172.0, true),
            true,
        );
        assert_eq!((sv, tr), (1_712_000.0, 11_264_000.0));
        // A hidden layer 128 → 256: aggregate 512,000 + ReLU output 1,024,000,
        // and with dropout (p > 0) its output and mask: 1000·256·5 = 1,280,000 more.
        let hidden = |dropout| {
            layer_activations(
                Conv::Sage,
                1000.0,
                10_000.0,
                shape(128.0, 256.0, false),
                dropout,
            )
            .0
        };
        assert_eq!(hidden(false), 1_536_000.0);
        assert_eq!(hidden(true), 2_816_000.0);
    }
}
