//! Which of a CPU training step's tensors glibc serves from its heap (and
//! so can keep and fragment) rather than mmapping: the share `host_heap`
//! scales the kept heap by. Pure: sizes in, share out.

use crate::spec::Job;

/// glibc serves a request from its heap below the mmap threshold, which
/// rises with every freed mmapped chunk to at most 32 MiB
/// (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit, malloc/malloc.c).
pub(super) const MMAP_THRESHOLD_MAX: f64 = (32u64 << 20) as f64;

/// The widest float32 row a step's tensors have: the features or a hidden
/// layer's output (all heads together), whichever is wider.
pub(super) fn widest_input(job: &Job) -> u64 {
    match job.model {
        crate::spec::ModelKind::Gnn { hidden, heads, .. } => {
            (hidden * u64::from(heads.max(1))).max(job.dataset.features)
        }
        crate::spec::ModelKind::Generic { .. } => job.dataset.features,
    }
}

/// The share of a CPU training step's activation bytes that glibc serves
/// from its heap: the tensors under the mmap threshold. Larger ones are
/// mmapped and unmapped exactly when freed, so only this share can be kept
/// (and, once workers are forked from the heap, copied when rewritten).
/// The tensors are those `gpu::layer_activations` sums, one by one, at the
/// run's largest batch, and, when the main process samples (no workers),
/// the batch the sampler builds there.
pub(super) fn heap_resident_share(
    job: &Job,
    train: &super::SampleStats,
    seeds: f64,
    samples_in_main: bool,
) -> f64 {
    let crate::spec::ModelKind::Gnn {
        conv,
        layers,
        hidden,
        heads,
        ..
    } = job.model
    else {
        return 1.0;
    };
    let (s, es) = (train.tail_nodes, train.tail_edges);
    let (mut heap, mut all) = (0.0, 0.0);
    let mut add = |bytes: f64, count: f64| {
        all += bytes * count;
        if bytes < MMAP_THRESHOLD_MAX {
            heap += bytes * count;
        }
    };
    if samples_in_main {
        for b in super::host::batch_tensors(job, seeds, s, es) {
            add(b, 1.0);
        }
    }
    for layer in super::gpu::layer_shapes(job, conv, layers, hidden, heads) {
        let super::gpu::LayerShape {
            d_in,
            d_out,
            heads: h,
            last,
        } = layer;
        if !last {
            add(s * d_out * h * 4.0, 1.0);
        }
        match conv.family() {
            crate::spec::Conv::Sage => {
                add(s * d_in * 4.0, 2.0);
                add(es * d_in * 4.0, 1.0);
                add(s * d_out * 4.0, 2.0);
            }
            crate::spec::Conv::Gcn => {
                // Self-loops added per layer (gcn_norm), as in layer_activations.
                let es = es + s;
                add(s * d_out * 4.0, 2.0);
                add(es * 4.0, 1.0);
                add(es * 16.0, 1.0);
                add(es * d_out * 4.0, 2.0);
            }
            crate::spec::Conv::Gat => {
                let es = es + s;
                add(s * h * d_out * 4.0, 1.0);
                add(es * h * 4.0, 6.0);
                add(es * h * d_out * 4.0, 2.0);
            }
            _ => {
                add(s * d_in * 4.0, 1.0);
                add(s * d_out * 4.0, 3.0);
                add(es * d_in * 4.0, 1.0);
            }
        }
    }
    if all > 0.0 { heap / all } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::heap_resident_share;
    use crate::estimate::SampleStats;
    use crate::spec::{Job, JobSpec};

    fn arxiv() -> Job {
        Job::from_spec(&JobSpec::for_dataset("ogbn-arxiv")).unwrap()
    }

    #[test]
    fn small_steps_live_in_the_heap_and_large_ones_are_mmapped() {
        let job = arxiv();
        // 1,000 nodes: every tensor is a few MiB, all from the heap.
        assert_eq!(
            heap_resident_share(&job, &SampleStats::fixed(1e3, 1e4), 64.0, false),
            1.0
        );
        // 150,000 nodes x 256 channels x 4 B = 146 MiB a tensor: only the
        // output layer's (40 classes wide, 23 MiB) stay under 32 MiB.
        let big = heap_resident_share(&job, &SampleStats::fixed(1.5e5, 1.5e6), 1024.0, false);
        assert!(big > 0.0 && big < 0.1, "{big}");
        // Twice the nodes: the output layer's are mmapped too.
        assert_eq!(
            heap_resident_share(&job, &SampleStats::fixed(3e5, 3e6), 1024.0, false),
            0.0
        );
    }

    #[test]
    fn sampling_in_the_main_process_adds_the_batch_to_its_heap() {
        let job = arxiv();
        let s = SampleStats::fixed(1.5e5, 1e6);
        let in_workers = heap_resident_share(&job, &s, 1024.0, false);
        let in_main = heap_resident_share(&job, &s, 1024.0, true);
        assert!(in_main > in_workers, "{in_main} vs {in_workers}");
    }
}
