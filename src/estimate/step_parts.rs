//! The tensors the allocator simulation is given for a layer's step, where
//! a real step makes several where the estimate counts one figure: their sums
//! are the estimate's figures (`gpu::layer_activations`,
//! `gpu::backward_scratch`), so the parts move the simulated reserve, never
//! the tensors counted. Each is read off real H200 steps: the allocator's
//! recorded histories (`benches/gpu/replay_steps.py` with `HEADROOM_TRACE`).

use super::gpu::{F32, I64, LayerShape, layer_activations};
use crate::spec::Conv;

/// The tensors a layer's forward transient (`layer_activations`' second
/// figure) is made of, for the allocator simulation: their sum is that
/// figure. Read off real H200 steps (the allocator's recorded histories,
/// six of them in tests/fixtures/alloc/pyg-steps): GCN gathers x_j and weights it
/// into a second tensor of the same size, beside the linear output, the
/// scatter's sum and the self-looped edge_index; SAGE holds x_j beside the
/// scatter's sum (or its two linear outputs, where larger); the others one
/// per-edge tensor.
pub(super) fn transient_parts(conv: Conv, s: f64, es: f64, layer: LayerShape) -> Vec<f64> {
    let (d_in, d_out) = (layer.d_in, layer.d_out);
    match conv {
        Conv::Gcn => {
            let es = es + s;
            let (node, edge) = (s * d_out * F32, es * d_out * F32);
            vec![node, edge, edge, node, 2.0 * es * I64]
        }
        Conv::Sage if es * d_in + s * d_in >= 2.0 * s * d_out => {
            vec![es * d_in * F32, s * d_in * F32]
        }
        Conv::Sage => vec![s * d_out * F32; 2],
        _ => {
            let (_, tr) = layer_activations(conv, s, es, layer, false);
            vec![tr]
        }
    }
}

/// The tensors of `backward_scratch`: GCN's two message-sized gradients are
/// two tensors (both seen in the recorded histories), GAT's three per-edge
/// gradients Es'·h·d and one Es'·h (its `backward_scratch`); the rest one.
pub(super) fn backward_parts(
    conv: Conv,
    s: f64,
    es: f64,
    layer: LayerShape,
    scratch: f64,
) -> Vec<f64> {
    match conv {
        Conv::Gcn => vec![scratch / 2.0; 2],
        Conv::Gat if scratch > 0.0 => {
            let es = es + s;
            let edge = es * layer.heads * layer.d_out * F32;
            vec![edge, edge, edge, es * layer.heads * F32]
        }
        _ => vec![scratch],
    }
}

/// The tensors of a layer's saved activations (`layer_activations`' first
/// figure) as (made before its transient, made after it), where known; both
/// empty: one block. GATConv, from the histories of five development GAT
/// jobs (2026-11-27): the linear output (S·h·d), the per-edge attention
/// tensors (six Es'·h, Es' = Es + S with the self-loops), the gathered x_j
/// (Es'·h·d, which autograd keeps for the weighting's gradient), then, once
/// the weighted messages are summed and freed, the ReLU output (and
/// dropout's output and mask). Where the estimate counted one block of all
/// of them, the simulated allocator needed a segment of their sum.
pub(super) fn saved_parts(
    conv: Conv,
    s: f64,
    es: f64,
    layer: LayerShape,
    dropout: bool,
) -> (Vec<f64>, Vec<f64>) {
    let LayerShape {
        d_out, heads, last, ..
    } = layer;
    match conv {
        Conv::Gat => {
            let es = es + s;
            let node = s * heads * d_out;
            // The six kept per-edge tensors as one block: as six, a GAT
            // plan with advice took 2.9 times 5442236's time, as one 2.0,
            // and the 41 development rows' real batches in real order
            // (examples/step_replay.rs) moved from 3.6 % to 4.0 % median
            // reserve error (2.0 % to 2.0 % on those of 1 GiB or more).
            let before = vec![node * F32, 6.0 * es * heads * F32, es * heads * d_out * F32];
            let after = match (last, dropout) {
                (true, _) => vec![],
                (false, false) => vec![node * F32],
                (false, true) => vec![node * F32, node * F32, node],
            };
            (before, after)
        }
        _ => (vec![], vec![]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::gpu::backward_scratch;

    /// The simulation's parts of a layer's transients add up to the
    /// estimate's figures for every conv, layer and shape: the simulated step
    /// splits the tensors without adding or losing bytes.
    #[test]
    fn parts_add_up_to_the_estimates_figures() {
        let convs = [
            Conv::Sage,
            Conv::Gcn,
            Conv::Gat,
            Conv::Gin,
            Conv::Gine,
            Conv::Gatv2,
            Conv::Transformer,
            Conv::Rgcn,
            Conv::Rgat,
            Conv::Mlp,
        ];
        let shapes = [(128.0, 256.0, 1.0), (256.0, 64.0, 4.0), (1024.0, 16.0, 1.0)];
        for conv in convs {
            for (l, &(d_in, d_out, heads)) in shapes.iter().enumerate() {
                for (s, es) in [(1.0e5, 1.0e4), (2.6e5, 5.9e5), (5.0e4, 1.9e6)] {
                    let layer = LayerShape {
                        d_in,
                        d_out,
                        heads,
                        last: l == 2,
                    };
                    let (_, tr) = layer_activations(conv, s, es, layer, true);
                    for dropout in [false, true] {
                        let (sv, _) = layer_activations(conv, s, es, layer, dropout);
                        let (before, after) = saved_parts(conv, s, es, layer, dropout);
                        if before.is_empty() {
                            assert!(after.is_empty(), "{conv:?}: parts after, none before");
                            continue;
                        }
                        let sum: f64 = before.iter().chain(&after).sum();
                        assert!((sum - sv).abs() <= 1e-9 * sv, "{conv:?} {sum} {sv}");
                    }
                    let parts: f64 = transient_parts(conv, s, es, layer).iter().sum();
                    assert!(
                        (parts - tr).abs() <= 1e-9 * tr.max(1.0),
                        "{conv:?} {parts} {tr}"
                    );
                    let b = backward_scratch(conv, l, s, es, layer, tr);
                    let bparts: f64 = backward_parts(conv, s, es, layer, b).iter().sum();
                    assert!(
                        (bparts - b).abs() <= 1e-9 * b.max(1.0),
                        "{conv:?} {bparts} {b}"
                    );
                }
            }
        }
        // GAT's saved tensors are split (three before its messages, the ReLU's
        // output after them); GCN's transients are the five tensors a real
        // step holds (two of them per edge).
        let gat = LayerShape {
            d_in: 128.0,
            d_out: 64.0,
            heads: 4.0,
            last: false,
        };
        assert_eq!(saved_parts(Conv::Gat, 100.0, 900.0, gat, false).0.len(), 3);
        assert_eq!(saved_parts(Conv::Gat, 100.0, 900.0, gat, false).1.len(), 1);
        let layer = LayerShape {
            d_in: 128.0,
            d_out: 64.0,
            heads: 1.0,
            last: false,
        };
        assert_eq!(transient_parts(Conv::Gcn, 100.0, 900.0, layer).len(), 5);
    }
}
