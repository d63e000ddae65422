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
//!
//! Each row chunk `x[:batch_size]` under glibc's 32 MiB mmap ceiling comes
//! from the heap, and freeing the list leaves that heap resident: the next
//! layer's chunks reuse it, workers forked at the next layer map it, and it
//! outlives the pass (DGraphFin's end-to-end run, 3.7M nodes, hidden 128,
//! batch 4096: the main process held 2.08 GiB before the first pass and
//! 3.78 GiB after it, the 1.77 GiB of layer 0's rows; each of the 12 workers
//! forked at layer 1 had 5.3 GiB of RSS, the main process's 5.8).

use super::heap_share::MMAP_THRESHOLD_MAX;
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

/// The heap a layer's row chunks leave resident once freed: the whole
/// table when each chunk (`seeds` rows of `width` floats) is under glibc's
/// mmap ceiling, nothing when each was its own mapping.
fn rows_kept(nodes: f64, width: u64, seeds: u64) -> f64 {
    let chunk = (seeds * width * 4) as f64;
    if chunk < MMAP_THRESHOLD_MAX {
        nodes * width as f64 * 4.0
    } else {
        0.0
    }
}

/// Bytes alive at the worst layer's `torch.cat`, in evaluation batches of
/// `seeds` seeds: the main process's tables and, for `forked_copies`
/// workers forked at the start of each layer (not persistent; RSS-sum
/// accounting, 0 under a cgroup, where forked pages are shared), what each
/// maps of the main process's: the previous `x_all` and the heap earlier
/// layers' rows left. A layer whose chunks come from the heap reuses that
/// heap for its own `xs`. With `passes_before`, an earlier pass left its
/// rows' heap (`rows_kept_after`) before the first layer.
pub fn layerwise_buffers(job: &Job, forked_copies: f64, seeds: u64, passes_before: bool) -> f64 {
    let nodes = job.dataset.nodes as f64;
    let mut prev = 0.0_f64; // the first layer reads the dataset's x
    let mut kept = if passes_before {
        rows_kept_after(job, seeds)
    } else {
        0.0
    };
    let mut worst = 0.0_f64;
    for width in layer_widths(job) {
        let out = width as f64 * 4.0 * nodes;
        let own = rows_kept(nodes, width, seeds);
        let xs = if own > 0.0 { out.max(kept) } else { out + kept };
        worst = worst.max(prev + xs + out + forked_copies * (prev + kept));
        kept = kept.max(own);
        prev = out;
    }
    worst
}

/// The heap the rows of a whole pass leave resident after it, in batches of
/// `seeds`: the largest layer's table whose chunks came from the heap (the
/// layers reuse one region). Training epochs after an evaluation run beside
/// it, and workers forked for them map it.
pub fn rows_kept_after(job: &Job, seeds: u64) -> f64 {
    let nodes = job.dataset.nodes as f64;
    layer_widths(job)
        .into_iter()
        .map(|w| rows_kept(nodes, w, seeds))
        .fold(0.0, f64::max)
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

    /// Evaluation batches whose row chunks are each their own mapping
    /// (a million seeds), and ones whose chunks come from the heap.
    const MAPPED: u64 = 1 << 20;
    const HEAPED: u64 = 1024;

    #[test]
    fn two_layers_peak_at_whichever_layer_holds_more() {
        let j = job(2, 64);
        let (n, c) = (j.dataset.nodes as f64, j.dataset.classes as f64);
        // layer 0: xs + cat, 64 wide; layer 1: x_all (64 wide) + xs + cat, classes wide.
        let l0 = 2.0 * 64.0 * 4.0 * n;
        let l1 = 64.0 * 4.0 * n + 2.0 * c * 4.0 * n;
        assert_eq!(layerwise_buffers(&j, 0.0, MAPPED, false), l0.max(l1));
        // Heap-sized chunks: layer 0's freed rows stay resident under
        // layer 1's narrower ones, which reuse them.
        assert!(c < 64.0);
        let l1_heaped = 2.0 * 64.0 * 4.0 * n + c * 4.0 * n;
        assert_eq!(layerwise_buffers(&j, 0.0, HEAPED, false), l0.max(l1_heaped));
        assert!(l1_heaped > l0);
    }

    #[test]
    fn three_wide_layers_hold_two_hidden_tables_and_the_cat() {
        let j = job(3, 256);
        let t = 256.0 * 4.0 * j.dataset.nodes as f64;
        assert_eq!(layerwise_buffers(&j, 0.0, MAPPED, false), 3.0 * t);
        // Two workers forked at each layer map the previous x_all (RSS sum).
        assert_eq!(layerwise_buffers(&j, 2.0, MAPPED, false), 5.0 * t);
        // The main process is the same when the rows come from the heap
        // (layer 1's reuse layer 0's), but each worker forked at layer 1
        // maps layer 0's kept rows too.
        assert_eq!(layerwise_buffers(&j, 0.0, HEAPED, false), 3.0 * t);
        assert_eq!(layerwise_buffers(&j, 2.0, HEAPED, false), 7.0 * t);
    }

    #[test]
    fn a_later_pass_forks_its_first_layer_beside_the_last_ones_rows() {
        // One layer: its workers map nothing of the pass's own rows, but a
        // second pass's map the first's.
        let j = job(1, 64);
        let c = 4.0 * j.dataset.classes as f64 * j.dataset.nodes as f64;
        assert_eq!(layerwise_buffers(&j, 3.0, HEAPED, false), 2.0 * c);
        assert_eq!(layerwise_buffers(&j, 3.0, HEAPED, true), 5.0 * c);
        assert_eq!(layerwise_buffers(&j, 3.0, MAPPED, true), 2.0 * c);
    }

    #[test]
    fn the_heap_a_pass_leaves_is_its_widest_heap_sized_table() {
        let j = job(3, 256);
        let n = j.dataset.nodes as f64;
        assert_eq!(rows_kept_after(&j, HEAPED), 256.0 * 4.0 * n);
        assert_eq!(rows_kept_after(&j, MAPPED), 0.0);
        // 32,768 seeds of 256 floats are exactly 32 MiB: mapped. The last
        // layer's 40 classes are 5 MiB a chunk: from the heap.
        let c = j.dataset.classes as f64;
        assert_eq!(rows_kept_after(&j, 32_768), c * 4.0 * n);
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
        assert_eq!(layerwise_buffers(&j, 0.0, MAPPED, false), l0.max(l1));
    }

    #[test]
    fn node_ids_are_int64_per_node() {
        let j = job(2, 64);
        assert_eq!(subgraph_node_ids(&j), 8.0 * j.dataset.nodes as f64);
    }
}
