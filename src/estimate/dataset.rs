//! Host bytes of the dataset tensors, of one loader's CSC copy, and of the
//! transients while loading (first processing, to_undirected) and while a
//! NeighborLoader sorts the graph into CSC.

use serde::Serialize;

use crate::spec::Job;

/// Byte sizes derived from the dataset and how it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DatasetBytes {
    /// Node features: feature_nodes · F · dtype.
    pub features: u64,
    /// A second copy of the features the script computes while the dataset
    /// object keeps the first (`load.replaces_features`), else 0.
    pub features_replaced: u64,
    /// Labels: N · label dtype.
    pub labels: u64,
    /// edge_index after loading: 2 · E' · 8 (int64 COO).
    pub edge_index: u64,
    /// Split index tensors: (train + valid + test) · 8.
    pub splits: u64,
    /// Edges after loading (E' = 2E when to_undirected doubles them).
    pub edges: u64,
    /// One loader's CSC: colptr (N+1)·8 + row E'·8 + perm E'·8 (no perm when sorted).
    pub csc: u64,
    /// Extra bytes while a loader builds its CSC (the sorted col, E'·8) or
    /// moves it to shared memory (the largest tensor twice, E'·8).
    pub csc_build_extra: u64,
    /// Bytes above the loaded dataset at the worst moment of loading.
    pub load_extra: u64,
    /// What causes `load_extra`.
    pub load_extra_cause: &'static str,
    /// edge_index's storage is moved into /dev/shm by the loaders
    /// (is_sorted with workers: the CSC's `row` is a view of it).
    pub edge_index_shared: bool,
}

impl DatasetBytes {
    /// Everything resident once loading is done.
    pub fn resident(&self) -> u64 {
        self.features + self.features_replaced + self.labels + self.edge_index + self.splits
    }
}

/// Edges in edge_index once loading is done: doubled by `to_undirected` less
/// the duplicates coalescing removes (`undirected_edges`, else 2E).
pub fn loaded_edges(job: &Job) -> u64 {
    let d = &job.dataset;
    if job.load.to_undirected && !d.undirected {
        d.undirected_edges.unwrap_or(2 * d.edges)
    } else {
        d.edges
    }
}

/// Dataset bytes for `job` (workers > 0 decides whether the CSC moves to
/// /dev/shm); `sort_moment` is the bytes per element alive at a sort's worst
/// moment (`Coefficients::sort_bytes_per_element`, 32 for torch's CPU sort).
pub fn dataset_bytes(job: &Job, workers: u32, is_sorted: bool, sort_moment: u64) -> DatasetBytes {
    let d = &job.dataset;
    let n = d.nodes;
    let stored = d.edges;
    let doubles = job.load.to_undirected && !d.undirected;
    let edges = loaded_edges(job);
    let features = d.feature_nodes.unwrap_or(n) * d.features * d.feature_dtype.size();
    let labels = n * d.label_dtype.size();
    let features_replaced = if job.load.replaces_features {
        features
    } else {
        0
    };
    let s = d.splits();
    let splits = (s.train + s.valid + s.test) * 8;
    // A plain DataLoader (generic models) builds no CSC.
    let gnn = matches!(job.model, crate::spec::ModelKind::Gnn { .. });
    // PyG's to_csc: with is_sorted the loader's `row` is a view of edge_index
    // (no copy) and only colptr is new; otherwise sort_csc makes row[perm]
    // and keeps perm.
    let sampler = job.loader_kind == crate::spec::LoaderKind::NeighborSampler;
    let csc = if !gnn {
        0
    } else if sampler {
        // The legacy NeighborSampler keeps SparseTensor(row, col,
        // value=arange(E)).t(): row, col and the edge ids (24 B an edge)
        // and rowptr, in the main process (workers fork it, nothing moves
        // to shared memory).
        (n + 1) * 8 + 24 * edges
    } else {
        (n + 1) * 8 + if is_sorted { 0 } else { 16 * edges }
    };
    // The worst moment of building one loader, above its finished CSC:
    // unsorted, the sort of col (values, perm and scratch: 32 B an edge
    // against the 16 kept), or, with workers, share_memory_() copying row
    // while the sorted col is still referenced (8 + 8); sorted with workers,
    // share_memory_() on the view moves edge_index's whole storage (16 B an
    // edge) into shared memory, once.
    let csc_build_extra = match (gnn, is_sorted, workers > 0) {
        (false, _, _) => 0,
        // SparseTensor sorts by (row, col) on building and again on `.t()`:
        // the sort and the permuted copies of the three edge tensors.
        _ if sampler => (sort_moment + 24) * edges,
        (true, false, _) => sort_moment.saturating_sub(16) * edges,
        (true, true, true) => 16 * edges,
        (true, true, false) => 0,
    };
    // First processing (InMemoryDataset.collate of the raw arrays) holds the
    // raw tensors and their collated copy at once: one extra copy of each.
    let processing = if job.load.first_processing {
        features + labels + 16 * stored
    } else {
        0
    };
    // to_undirected (PyG 2.8 utils/undirected.py and _coalesce.py), E stored
    // edges becoming E' after coalescing: the caller's edge_index (16E), the
    // cat()'d row and col (32E), their stack (32E), coalesce's key idx (16E),
    // its sort (2E elements), then the permuted copy (32E) with perm (16E),
    // and at `edge_index[:, mask]` the mask (2E), the kept indices (8E') and
    // the result (16E'): 146E + 24E' at that moment, 16E' once done.
    let undirected = if doubles {
        let at_sort = (16 + 32 + 32 + 16) * stored + 2 * stored * sort_moment;
        let at_mask = 146 * stored + 24 * edges;
        at_sort.max(at_mask) - 16 * edges
    } else {
        0
    };
    // Sorting edge_index in the script (edge_index[:, argsort(edge_index[1])])
    // before is_sorted=True: the old edge_index beside the sort (E elements),
    // then beside perm (8E) and the permuted copy (16E).
    let sorting = if job.load.sort_edges {
        (16 + sort_moment).max(16 + 8 + 16) * edges - 16 * edges
    } else {
        0
    };
    let (load_extra, load_extra_cause) = [
        (
            processing,
            "first processing: raw arrays and their collated copy",
        ),
        (
            undirected,
            "to_undirected: cat, stack, coalesce's key, sort and permuted copy alive at once",
        ),
        (
            sorting,
            "sorting edge_index by destination: the sort beside the old edge_index",
        ),
        // `(x - mean) / std`: the old, the temporary and the new at once.
        (
            features_replaced,
            "replacing the features: the original, a temporary and the new copy at once",
        ),
    ]
    .into_iter()
    .fold((0, "the dataset loaded"), |best, c| {
        if c.0 > best.0 { c } else { best }
    });
    DatasetBytes {
        features,
        features_replaced,
        labels,
        edge_index: 16 * edges,
        splits,
        edges,
        csc,
        csc_build_extra,
        load_extra,
        load_extra_cause,
        edge_index_shared: gnn && is_sorted && workers > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Job, JobSpec};

    /// torch's sort moment, the default coefficient.
    const TORCH: u64 = 32;

    fn papers(to_undirected: bool, workers: u32) -> DatasetBytes {
        let mut spec = JobSpec::for_dataset("ogbn-papers100m");
        spec.load.to_undirected = to_undirected;
        dataset_bytes(&Job::from_spec(&spec).unwrap(), workers, false, TORCH)
    }

    #[test]
    fn papers100m_as_published() {
        let b = papers(false, 0);
        // 111,059,956 · 128 · 4 = 56,862,697,472 (the seeds' "56.9 GB")
        assert_eq!(b.features, 56_862_697_472);
        // 2 · 1,615,685,872 · 8 = 25,850,973,952
        assert_eq!(b.edge_index, 25_850_973_952);
        // colptr 111,059,957·8 = 888,479,656; row and perm 1,615,685,872·8 = 12,925,486,976 each
        assert_eq!(b.csc, 888_479_656 + 2 * 12_925_486_976);
        // features + edge_index ≈ 82.7 GB: the seeds' "OGB object is about 79 GB" is of this order.
        assert!((b.features + b.edge_index) as f64 / 1e9 > 79.0);
    }

    #[test]
    fn to_undirected_peaks_at_coalesces_mask_moment() {
        // E = 1,615,685,872 stored, E' = 2E (no duplicates given): at
        // `edge_index[:, mask]` 146E + 24E' = 194E are alive; the sort moment
        // is 96E + 2E·32 = 160E. Above the finished 16E' = 32E: 162E.
        let b = papers(true, 0);
        assert_eq!(b.edges, 2 * 1_615_685_872);
        assert_eq!(b.load_extra, 162 * 1_615_685_872);
        // With the duplicates coalescing removes (E' = 1.5E): 146E + 36E − 24E = 158E,
        // still above the sort moment (160E − 24E = 136E).
        let mut spec = JobSpec::for_dataset("ogbn-papers100m");
        spec.load.to_undirected = true;
        let mut job = Job::from_spec(&spec).unwrap();
        job.dataset.undirected_edges = Some(3 * 1_615_685_872 / 2);
        assert_eq!(
            dataset_bytes(&job, 0, false, TORCH).load_extra,
            158 * 1_615_685_872
        );
    }

    #[test]
    fn sorting_in_the_script_costs_the_sort_beside_the_old_edge_index() {
        // old 16E + values, indices and scratch 32E = 48E, 32E above the result.
        let mut spec = JobSpec::for_dataset("ogbn-arxiv");
        spec.load.sort_edges = true;
        let b = dataset_bytes(&Job::from_spec(&spec).unwrap(), 0, true, TORCH);
        assert_eq!(b.load_extra, 32 * 1_166_243);
    }

    #[test]
    fn sorted_input_makes_row_a_view_of_edge_index() {
        let spec = JobSpec::for_dataset("ogbn-arxiv");
        let job = Job::from_spec(&spec).unwrap();
        let b = dataset_bytes(&job, 0, true, TORCH);
        // colptr (169,343+1)·8 and nothing else: row is edge_index[0].
        assert_eq!(b.csc, 169_344 * 8);
        assert_eq!(b.csc_build_extra, 0);
        assert!(!b.edge_index_shared);
        // With workers, share_memory_() moves edge_index's storage into /dev/shm.
        let w = dataset_bytes(&job, 2, true, TORCH);
        assert_eq!(w.csc_build_extra, 16 * 1_166_243);
        assert!(w.edge_index_shared);
        // Unsorted: row and perm kept, the sort's 32 B an edge at its moment.
        let u = dataset_bytes(&job, 0, false, TORCH);
        assert_eq!(u.csc, 169_344 * 8 + 16 * 1_166_243);
        assert_eq!(u.csc_build_extra, 16 * 1_166_243);
    }
}
