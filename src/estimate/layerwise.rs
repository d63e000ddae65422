//! Layer-wise inference as PyG's own examples write it (examples/reddit.py,
//! ogbn_products_sage.py: `SAGE.inference(x_all, subgraph_loader)`): what the
//! host holds beyond the loaders while one layer runs over every node.
//!
//! ```python
//! for i, conv in enumerate(self.convs):
//!     xs = []
//!     for batch in subgraph_loader:
//!         x = conv(x_all[batch.n_id].to(device), batch.edge_index.to(device))
//!         xs.append(x[:batch.batch_size].cpu())
//!     x_all = torch.cat(xs, dim=0)
//! ```
//!
//! At the `torch.cat` of layer i three node-wide float32 tables are alive on
//! the host, whatever the device: the previous layer's `x_all` (the dataset's
//! own `x` for the first layer, already counted), the list `xs` of this
//! layer's rows and their concatenation. The subgraph loader itself (its own
//! CSC and `n_id = torch.arange(N)`) is counted with the other loaders.

use crate::spec::{Job, ModelKind};

/// Output width of each layer: hidden for all but the last, classes for it.
/// The spec's `hidden` is per head: an attention layer's output is its
/// heads concatenated, `hidden × heads` wide (PyG's `GAT(in, 1024, ..,
/// heads=2)` splits its 1024 into two heads of 512, the spec's hidden; the
/// last layer averages its heads into the classes).
fn layer_widths(job: &Job) -> Vec<u64> {
    match job.model {
        ModelKind::Gnn {
            layers,
            hidden,
            heads,
            ..
        } => (0..layers.max(1))
            .map(|i| {
                if i + 1 == layers.max(1) {
                    job.dataset.classes
                } else {
                    hidden * u64::from(heads.max(1))
                }
            })
            .collect(),
        ModelKind::Generic { .. } => Vec::new(),
    }
}

/// Bytes of the node-wide tables alive at the worst layer's `torch.cat`.
/// `forked_copies`: workers forked at the start of each layer (not
/// persistent) whose RSS maps the previous layer's `x_all` too (RSS-sum
/// accounting; 0 under cgroup accounting, where forked pages are shared).
pub fn layerwise_buffers(job: &Job, forked_copies: f64) -> f64 {
    let nodes = job.dataset.nodes as f64;
    let mut prev = 0.0_f64; // the first layer reads the dataset's x
    let mut worst = 0.0_f64;
    for width in layer_widths(job) {
        let out = width as f64 * 4.0 * nodes;
        worst = worst.max(prev * (1.0 + forked_copies) + 2.0 * out);
        prev = out;
    }
    worst
}

/// The subgraph loader's `n_id = torch.arange(N)` (int64), alive all run.
pub fn subgraph_node_ids(job: &Job) -> f64 {
    job.dataset.nodes as f64 * 8.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{EvalLoaders, JobSpec};

    fn job(layers: u32, hidden: u64) -> Job {
        let mut spec = JobSpec::for_dataset("ogbn-arxiv");
        spec.model.layers = layers;
        spec.model.hidden = hidden;
        spec.loader.eval_loaders = EvalLoaders::Layerwise;
        Job::from_spec(&spec).expect("job")
    }

    #[test]
    fn two_layers_peak_at_whichever_layer_holds_more() {
        let j = job(2, 64);
        let (n, c) = (j.dataset.nodes as f64, j.dataset.classes as f64);
        // layer 0: xs + cat, 64 wide; layer 1: x_all (64 wide) + xs + cat, classes wide.
        let l0 = 2.0 * 64.0 * 4.0 * n;
        let l1 = 64.0 * 4.0 * n + 2.0 * c * 4.0 * n;
        assert_eq!(layerwise_buffers(&j, 0.0), l0.max(l1));
    }

    #[test]
    fn three_wide_layers_hold_two_hidden_tables_and_the_cat() {
        let j = job(3, 256);
        let n = j.dataset.nodes as f64;
        assert_eq!(layerwise_buffers(&j, 0.0), 3.0 * 256.0 * 4.0 * n);
        // Two workers forked at each layer map the previous x_all (RSS sum).
        assert_eq!(layerwise_buffers(&j, 2.0), 5.0 * 256.0 * 4.0 * n);
    }

    #[test]
    fn an_attention_layer_outputs_its_heads_concatenated() {
        // sealed-layerwise-2611268-31: PyG's GAT(256, 1024, 2, 32, heads=2),
        // the spec's hidden 512 per head: layer 0 writes 1024 floats a node.
        let mut spec = JobSpec::for_dataset("ogbn-arxiv");
        spec.model.conv = crate::spec::Conv::Gat;
        spec.model.layers = 2;
        spec.model.hidden = 512;
        spec.model.heads = 2;
        spec.loader.eval_loaders = EvalLoaders::Layerwise;
        let j = Job::from_spec(&spec).expect("job");
        let (n, c) = (j.dataset.nodes as f64, j.dataset.classes as f64);
        let l0 = 2.0 * 1024.0 * 4.0 * n;
        let l1 = 1024.0 * 4.0 * n + 2.0 * c * 4.0 * n;
        assert_eq!(layerwise_buffers(&j, 0.0), l0.max(l1));
    }

    #[test]
    fn node_ids_are_int64_per_node() {
        let j = job(2, 64);
        assert_eq!(subgraph_node_ids(&j), 8.0 * j.dataset.nodes as f64);
    }
}
