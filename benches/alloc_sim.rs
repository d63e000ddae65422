//! Speed target of issue 5: simulating 10,000 training steps of a 2-layer
//! GNN trace takes under a second, so `plan` stays interactive.
//! Run: cargo bench --bench alloc_sim

use criterion::{Criterion, criterion_group, criterion_main};
use headroom::alloc::workload::training_trace;
use headroom::alloc::{AllocConf, DeviceMemory, GnnStepShape, run_trace, simulate_training};

const MB: u64 = 1 << 20;

/// A 2-layer GraphSAGE-like step on ogbn-products-sized batches: inputs
/// (features, edge index, labels), per layer the linear output, the per-edge
/// messages, the aggregate and the activation; per-layer scratch.
fn two_layer_gnn() -> GnnStepShape {
    let (node, edge) = (96 * MB, 960 * MB);
    GnnStepShape {
        parameters: vec![MB / 2, MB / 2, MB / 4, MB / 4],
        optimizer_state_first_step: vec![
            MB / 2,
            MB / 2,
            MB / 2,
            MB / 2,
            MB / 4,
            MB / 4,
            MB / 4,
            MB / 4,
        ],
        batch_inputs: vec![200 * MB, 240 * MB, 2 * MB],
        saved_activations: vec![node, edge, node, node, node, edge, node, node],
        transients: vec![edge / 4, 1, node, 1, edge / 4, 1, node, 1],
        backward_transients: vec![],
        transient_parts: vec![],
        backward_parts: vec![],
        saved_parts: vec![],
        saved_after: vec![],
        grad_parts: vec![],
        param_grads: vec![MB / 2, MB / 2, MB / 4, MB / 4],
        retained_outputs: vec![],
        steps_per_epoch: 0,
        size_cv: 0.3,
    }
}

fn bench(c: &mut Criterion) {
    let shape = two_layer_gnn();
    let device = DeviceMemory::new(80 << 30, 500 * MB);
    let conf = AllocConf::default();
    let mut g = c.benchmark_group("alloc");
    g.sample_size(10);
    g.bench_function("10k_steps_2layer_segments", |b| {
        b.iter(|| run_trace(training_trace(&shape, 10_000, 1), &conf, &device))
    });
    g.bench_function("10k_steps_2layer_expandable", |b| {
        b.iter(|| {
            run_trace(
                training_trace(&shape, 10_000, 1),
                &conf.with_expandable(true),
                &device,
            )
        })
    });
    g.bench_function("10k_steps_2layer_both_modes", |b| {
        b.iter(|| simulate_training(&shape, 10_000, 1, &conf, &device))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
