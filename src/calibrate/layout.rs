//! Where each array lives in the shared regions of the calibration workload,
//! computed the same way by the parent and by its workers.
//!
//! The graph region holds one loader's CSC as PyG keeps it (colptr, row,
//! perm, int64); the data region the dataset's tensors the workers read
//! (features float32, labels int64, the train split's node ids). A batch slot
//! holds one sampled batch as the DataLoader hands it over: a three-number
//! header (nodes S, edges Es, seeds), then n_id (S), the seed ids, y (S),
//! row, col and e_id (Es each) as int64 and x (S·F float32): exactly the
//! tensors `estimate::host::batch_tensors` counts.

use super::shm::align8;

/// Array offsets of the graph and data regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Nodes.
    pub nodes: usize,
    /// Edges.
    pub edges: usize,
    /// Features per node.
    pub features: usize,
    /// Train split nodes.
    pub train: usize,
}

impl Layout {
    /// Byte offset of `row` in the graph region (colptr starts at 0).
    pub fn row_at(&self) -> usize {
        (self.nodes + 1) * 8
    }
    /// Byte offset of `perm` in the graph region.
    pub fn perm_at(&self) -> usize {
        self.row_at() + self.edges * 8
    }
    /// Bytes of the graph region: one CSC.
    pub fn graph_len(&self) -> usize {
        self.perm_at() + self.edges * 8
    }
    /// Byte offset of the labels in the data region (features start at 0).
    pub fn labels_at(&self) -> usize {
        align8(self.nodes * self.features * 4)
    }
    /// Byte offset of the train ids in the data region.
    pub fn train_at(&self) -> usize {
        self.labels_at() + self.nodes * 8
    }
    /// Bytes of the data region.
    pub fn data_len(&self) -> usize {
        self.train_at() + self.train * 8
    }
}

/// Byte offsets inside one batch slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLayout {
    /// Sampled nodes S.
    pub nodes: usize,
    /// Sampled edges Es.
    pub edges: usize,
    /// Seed nodes.
    pub seeds: usize,
    /// Features per node.
    pub features: usize,
}

impl SlotLayout {
    /// The header's three numbers come first.
    pub const HEADER: usize = 24;
    /// n_id.
    pub fn n_id(&self) -> usize {
        Self::HEADER
    }
    /// Seed ids.
    pub fn input(&self) -> usize {
        self.n_id() + self.nodes * 8
    }
    /// Labels of the sampled nodes.
    pub fn y(&self) -> usize {
        self.input() + self.seeds * 8
    }
    /// Local sources.
    pub fn row(&self) -> usize {
        self.y() + self.nodes * 8
    }
    /// Local destinations.
    pub fn col(&self) -> usize {
        self.row() + self.edges * 8
    }
    /// Edge ids.
    pub fn e_id(&self) -> usize {
        self.col() + self.edges * 8
    }
    /// Features.
    pub fn x(&self) -> usize {
        self.e_id() + self.edges * 8
    }
    /// Bytes of the slot.
    pub fn len(&self) -> usize {
        self.x() + self.nodes * self.features * 4
    }
    /// Whether the batch is empty (never, for a real batch).
    pub fn is_empty(&self) -> bool {
        self.nodes == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_by_hand() {
        // 10 nodes, 30 edges, 3 features, 4 train nodes:
        // colptr 11·8 = 88, row 240 → perm at 328, graph 568;
        // features 10·3·4 = 120 → labels at 120, train at 200, data 232.
        let l = Layout {
            nodes: 10,
            edges: 30,
            features: 3,
            train: 4,
        };
        assert_eq!((l.row_at(), l.perm_at(), l.graph_len()), (88, 328, 568));
        assert_eq!((l.labels_at(), l.train_at(), l.data_len()), (120, 200, 232));
        // S = 5, Es = 4, 2 seeds, F = 3: 24 + 5·8 + 2·8 + 5·8 + 3·4·8 + 5·3·4 = 276.
        let s = SlotLayout {
            nodes: 5,
            edges: 4,
            seeds: 2,
            features: 3,
        };
        assert_eq!(s.len(), 276);
        assert_eq!(s.x(), 216);
    }
}
