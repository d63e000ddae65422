//! Host bytes of what loaders keep moving: sampled batches in flight (in the
//! main process, in workers, in /dev/shm), pinned copies, and the pages each
//! worker process owns or, under RSS-sum accounting, appears to own.

use super::fanout::SampleStats;
use crate::spec::Job;

/// One batch's host tensors: x (S·F·dtype), y (S·label), n_id (S·8),
/// edge_index (2·Es·8), e_id (Es·8) and the seed ids (seeds·8).
pub fn batch_tensors(job: &Job, seeds: f64, s: f64, es: f64) -> [f64; 5] {
    let d = &job.dataset;
    if let crate::spec::ModelKind::Generic {
        input_bytes_per_sample,
        ..
    } = job.model
    {
        // Generic jobs: `s` counts samples, each `input_bytes_per_sample` large.
        return [s * input_bytes_per_sample as f64, 0.0, 0.0, 0.0, 0.0];
    }
    [
        s * (d.features * d.feature_dtype.size()) as f64,
        s * d.label_dtype.size() as f64,
        s * 8.0 + seeds * 8.0,
        es * 16.0,
        es * 8.0,
    ]
}

/// PyTorch's CachingHostAllocator rounds each pinned block up to a power of two.
fn pinned(tensors: [f64; 5]) -> f64 {
    tensors
        .iter()
        .map(|&b| {
            if b < 1.0 {
                0.0
            } else {
                (b as u64).next_power_of_two() as f64
            }
        })
        .sum()
}

/// Batches alive at once and where they live.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct InFlight {
    /// Batch tensors in the main process's private memory (workers = 0).
    pub private: f64,
    /// Batch tensors in /dev/shm (workers > 0).
    pub shm: f64,
    /// Tensors and sampler scratch inside workers while they build a batch.
    pub in_workers: f64,
    /// Page-locked copies made for pin_memory.
    pub pinned: f64,
}

/// In-flight batches of one loader: one of them the run's largest, the rest mean-sized.
///
/// With no workers the main process holds the batch being used while it
/// samples the next. With W workers the loader keeps prefetch_factor·W batches
/// outstanding (in shared memory once sent) and the main process holds one
/// more; a worker builds each outstanding batch privately, with its sampler
/// scratch, and copies it into shared memory when it sends it.
///
/// No loader has more batches alive than its epoch has: the DataLoader puts
/// `prefetch_factor` indices per worker only while its sampler has any left
/// (`_try_put_index`), so a split of two batches has two in flight however
/// many workers wait, and workers without a batch build nothing.
pub fn in_flight(
    job: &Job,
    stats: &SampleStats,
    seeds: u64,
    q: Queue,
    pin: bool,
    scratch_per_node: u64,
) -> InFlight {
    let Queue {
        workers,
        prefetch,
        batches,
    } = q;
    let batches = batches.max(1) as f64;
    let mut tail = batch_tensors(job, seeds as f64, stats.tail_nodes, stats.tail_edges);
    let mut mean = batch_tensors(job, seeds as f64, stats.mean_nodes, stats.mean_edges);
    // The legacy NeighborSampler's batches carry the sampled adjacency only
    // (n_id and each hop's edge_index and e_id): the training loop gathers
    // x[n_id] and y[n_id[:batch_size]] in the main process, once a step.
    let gather = if job.loader_kind == crate::spec::LoaderKind::NeighborSampler {
        let g = tail[0] + tail[1];
        for b in [&mut tail, &mut mean] {
            b[0] = 0.0;
            b[1] = 0.0;
        }
        g
    } else {
        0.0
    };
    let (tail_b, mean_b): (f64, f64) = (tail.iter().sum(), mean.iter().sum());
    let scratch = stats.tail_nodes * scratch_per_node as f64;
    let pinned_count = if workers == 0 {
        2.0_f64.min(batches)
    } else {
        ((prefetch * workers) as f64 + 1.0).min(batches)
    };
    let pinned_bytes = if pin && job.device == crate::spec::Device::Cuda {
        pinned(tail) + (pinned_count - 1.0) * pinned(mean)
    } else {
        0.0
    };
    if workers == 0 {
        return InFlight {
            private: tail_b + (pinned_count - 1.0) * mean_b + scratch + gather,
            shm: 0.0,
            in_workers: 0.0,
            pinned: pinned_bytes,
        };
    }
    let queued = ((prefetch * workers) as f64 + 1.0).min(batches);
    InFlight {
        private: gather,
        shm: tail_b + (queued - 1.0) * mean_b,
        // A batch a worker is building is one of the prefetch·W outstanding, not
        // an extra one: workers add their sampler scratch, and one batch being
        // copied into shared memory (copies are staggered, one at a time).
        in_workers: (workers as f64).min(batches) * scratch + mean_b,
        pinned: pinned_bytes,
    }
}

/// A loader's queue: its workers, their prefetch factor and the batches
/// one pass over its split has.
#[derive(Debug, Clone, Copy)]
pub struct Queue {
    /// DataLoader worker processes.
    pub workers: u32,
    /// Batches each worker prepares ahead.
    pub prefetch: u32,
    /// Batches in one pass (ceil(split / batch size)).
    pub batches: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Job, JobSpec};

    fn arxiv() -> Job {
        Job::from_spec(&JobSpec::for_dataset("ogbn-arxiv")).unwrap()
    }

    #[test]
    fn one_batch_by_hand() {
        // arxiv: 128 float32 features, int64 labels. S = 1000, Es = 2000, 100 seeds:
        // x 1000·512 = 512,000; y 8,000; n_id + seeds 8,000 + 800; edge_index 32,000; e_id 16,000.
        let b = batch_tensors(&arxiv(), 100.0, 1000.0, 2000.0);
        assert_eq!(b, [512_000.0, 8_000.0, 8_800.0, 32_000.0, 16_000.0]);
        assert_eq!(b.iter().sum::<f64>(), 576_800.0);
    }

    #[test]
    fn workers_put_prefetch_times_workers_plus_one_batches_in_shm() {
        // 4 workers, prefetch 2: 9 batches in shm; the workers' scratch
        // (4 × 1000 nodes × 64 B) and one batch being copied: 256,000 + 576,800.
        let st = SampleStats::fixed(1000.0, 2000.0);
        let q = Queue {
            workers: 4,
            prefetch: 2,
            batches: 1000,
        };
        let f = in_flight(&arxiv(), &st, 100, q, false, 64);
        assert_eq!(f.shm, 9.0 * 576_800.0);
        assert_eq!(f.in_workers, 4.0 * 64_000.0 + 576_800.0);
        assert_eq!(f.private, 0.0);
    }

    #[test]
    fn a_split_of_two_batches_has_two_in_flight_however_many_workers() {
        // 8 workers, prefetch 1, but the split holds two batches: two in
        // shm, two workers with scratch, and the one being copied.
        let st = SampleStats::fixed(1000.0, 2000.0);
        let q = Queue {
            workers: 8,
            prefetch: 1,
            batches: 2,
        };
        let f = in_flight(&arxiv(), &st, 100, q, false, 64);
        assert_eq!(f.shm, 2.0 * 576_800.0);
        assert_eq!(f.in_workers, 2.0 * 64_000.0 + 576_800.0);
        // Without workers, a one-batch split holds one batch, not two.
        let solo = Queue {
            workers: 0,
            prefetch: 2,
            batches: 1,
        };
        let f = in_flight(&arxiv(), &st, 100, solo, false, 64);
        assert_eq!(f.private, 576_800.0 + 64_000.0);
    }

    #[test]
    fn pinning_rounds_each_tensor_up_to_a_power_of_two() {
        // no workers: two batches pinned; 512,000 → 524,288; 8,000 → 8,192; 8,800 → 16,384;
        // 32,000 → 32,768; 16,000 → 16,384: 598,016 per batch; twice = 1,196,032.
        let q = Queue {
            workers: 0,
            prefetch: 2,
            batches: 1000,
        };
        let f = in_flight(
            &arxiv(),
            &SampleStats::fixed(1000.0, 2000.0),
            100,
            q,
            true,
            64,
        );
        assert_eq!(f.pinned, 1_196_032.0);
    }
}
