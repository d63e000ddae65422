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
}

impl DatasetBytes {
    /// Everything resident once loading is done.
    pub fn resident(&self) -> u64 {
        self.features + self.labels + self.edge_index + self.splits
    }
}

/// Dataset bytes for `job` (workers > 0 decides whether the CSC moves to /dev/shm).
pub fn dataset_bytes(job: &Job, workers: u32, is_sorted: bool) -> DatasetBytes {
    let d = &job.dataset;
    let n = d.nodes;
    let stored = d.edges;
    let doubles = job.load.to_undirected && !d.undirected;
    let edges = if doubles { 2 * stored } else { stored };
    let features = d.feature_nodes.unwrap_or(n) * d.features * d.feature_dtype.size();
    let labels = n * d.label_dtype.size();
    let s = d.splits();
    let splits = (s.train + s.valid + s.test) * 8;
    // A plain DataLoader (generic models) builds no CSC.
    let gnn = matches!(job.model, crate::spec::ModelKind::Gnn { .. });
    let csc = if gnn {
        (n + 1) * 8 + edges * 8 + if is_sorted { 0 } else { edges * 8 }
    } else {
        0
    };
    let csc_build_extra = if gnn && (!is_sorted || workers > 0) {
        edges * 8
    } else {
        0
    };
    // First processing (InMemoryDataset.collate of the raw arrays) holds the
    // raw tensors and their collated copy at once: one extra copy of each.
    let processing = if job.load.first_processing {
        features + labels + 16 * stored
    } else {
        0
    };
    // to_undirected (PyG utils): the original edge_index (16E) stays referenced
    // while cat() builds row and col (32E), stack() the pair (32E), coalesce()
    // its key (16E) and sort permutation (16E), and edge_index[:, perm] the
    // result (32E): 144E at the worst moment, against 32E once done.
    let undirected = if doubles {
        144 * stored - 32 * stored
    } else {
        0
    };
    let (load_extra, load_extra_cause) = if processing == 0 && undirected == 0 {
        (0, "the dataset loaded")
    } else if undirected >= processing {
        (
            undirected,
            "to_undirected: cat, stack, sort key and permuted copy alive at once",
        )
    } else {
        (
            processing,
            "first processing: raw arrays and their collated copy",
        )
    };
    DatasetBytes {
        features,
        labels,
        edge_index: 16 * edges,
        splits,
        edges,
        csc,
        csc_build_extra,
        load_extra,
        load_extra_cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Job, JobSpec};

    fn papers(to_undirected: bool, workers: u32) -> DatasetBytes {
        let mut spec = JobSpec::for_dataset("ogbn-papers100m");
        spec.load.to_undirected = to_undirected;
        dataset_bytes(&Job::from_spec(&spec).unwrap(), workers, false)
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
    fn to_undirected_doubles_edges_and_costs_112e_while_running() {
        let b = papers(true, 0);
        assert_eq!(b.edges, 2 * 1_615_685_872);
        assert_eq!(b.load_extra, 112 * 1_615_685_872);
    }

    #[test]
    fn sorted_input_keeps_no_perm() {
        let spec = JobSpec::for_dataset("ogbn-arxiv");
        let b = dataset_bytes(&Job::from_spec(&spec).unwrap(), 0, true);
        // colptr (169,343+1)·8 + row 1,166,243·8
        assert_eq!(b.csc, 169_344 * 8 + 1_166_243 * 8);
        assert_eq!(b.csc_build_extra, 0);
    }
}
