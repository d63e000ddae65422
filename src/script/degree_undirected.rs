//! The degrees of a graph the job makes undirected after loading it
//! (`to_undirected`, `T.ToUndirected()`, `SparseTensor.to_symmetric()`): the
//! union of each stored edge and its reverse, coalesced, so a reciprocal
//! pair or a repeated edge counts once and a self-loop once. Degrees of the
//! stored file alone would be wrong on both sides: DGraphFin's stored
//! in-degrees miss every edge a node sends, and doubling them would count
//! its reciprocal pairs twice.
//!
//! Each edge becomes two keys `b << 32 | a` (the edge a → b and its
//! reverse; node ids fit 32 bits, degree_file::MAX_NODES); sorting and
//! dropping repeats is exactly PyG's coalesce, and a node's degree is the
//! length of its run of keys. A scatter into per-node lists instead took
//! twice as long on DGraphFin's 4.3M edges (random writes over the nodes).
//! The keys take 16 bytes an edge, so the stored list is read up to
//! `MAX_EDGES`.

use super::degree_file::{Buckets, EdgeList};
use crate::profiles::DegreeHistogram;

/// Stored edges read at most: their keys take 256 MiB of the planner's
/// own memory there.
pub const MAX_EDGES: u64 = 1 << 24;

/// The in-degree histogram of `list`'s graph made undirected. Its degree
/// sums add up to the edges after coalescing; an undirected graph's
/// out-degrees are its in-degrees and the reached degrees follow from them,
/// so those fields stay empty (estimate/batches.rs derives them).
pub fn histogram(list: &mut EdgeList) -> Result<DegreeHistogram, String> {
    if list.count > MAX_EDGES {
        return Err(format!(
            "{} edges: the degrees of a graph made undirected are read for up to {MAX_EDGES} stored edges",
            list.count
        ));
    }
    let mut keys: Vec<u64> = Vec::with_capacity(2 * list.count as usize);
    list.row(0, &mut |u| {
        keys.push(u as u64);
        Ok(())
    })?;
    let mut i = 0;
    list.row(1, &mut |v| {
        let u = keys[i];
        keys[i] = (v as u64) << 32 | u;
        keys.push(u << 32 | v as u64);
        i += 1;
        Ok(())
    })?;
    keys.sort_unstable();
    keys.dedup();
    // Runs of equal high halves: each node's distinct in-neighbours.
    let mut counts = Buckets::default();
    let mut seen = 0u64;
    let mut run = keys.chunk_by(|a, b| a >> 32 == b >> 32);
    for r in &mut run {
        seen += 1;
        counts.add(r.len() as u32);
    }
    // Nodes with no key have degree 0.
    (seen..list.nodes).for_each(|_| counts.add(0));
    Ok(DegreeHistogram {
        counts: counts.counts,
        degree_sums: Some(counts.sums),
        ..DegreeHistogram::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A C-order int64 `.npy` of shape (2, E) from sources and destinations.
    fn edges(dir: &Path, src: &[i64], dst: &[i64]) -> std::path::PathBuf {
        let dict = format!(
            "{{'descr': '<i8', 'fortran_order': False, 'shape': (2, {}), }}",
            src.len()
        );
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((dict.len() as u16).to_le_bytes());
        b.extend(dict.as_bytes());
        src.iter()
            .chain(dst)
            .for_each(|v| b.extend(v.to_le_bytes()));
        let p = dir.join("edge_index.npy");
        std::fs::write(&p, b).unwrap();
        p
    }

    fn read(p: &Path, nodes: u64) -> DegreeHistogram {
        let arrays = super::super::datafile::arrays(p).unwrap();
        super::super::degree_file::histogram(p, &arrays, nodes, true).unwrap()
    }

    #[test]
    fn reciprocal_and_repeated_edges_count_once_and_sent_edges_count() {
        let t = tempfile::tempdir().unwrap();
        // 0→1, 1→0 (reciprocal), 0→2 twice (repeated), 3→3 (self-loop),
        // 4→0 (sent only). Undirected: 0–1, 0–2, 0–4, 3–3: degrees 3, 1, 1,
        // 1, 1, seven edges after coalescing (twelve keys before).
        let p = edges(t.path(), &[0, 1, 0, 0, 3, 4], &[1, 0, 2, 2, 3, 0]);
        let h = read(&p, 5);
        // Buckets: degree 1 → 1, degrees 2..3 → 2.
        assert_eq!(h.counts, vec![0, 4, 1]);
        assert_eq!(h.degree_sums, Some(vec![0, 4, 3]));
        assert_eq!(h.out_counts, None);
        // The stored in-degrees (1, 1, 2, 1, 0) are another histogram.
        let directed = super::super::degree_file::histogram(
            &p,
            &super::super::datafile::arrays(&p).unwrap(),
            5,
            false,
        )
        .unwrap();
        assert_ne!(directed.counts, h.counts);
    }

    #[test]
    fn an_id_past_the_nodes_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let p = edges(t.path(), &[0, 1], &[1, 9]);
        let arrays = super::super::datafile::arrays(&p).unwrap();
        let e = super::super::degree_file::histogram(&p, &arrays, 3, true).unwrap_err();
        assert!(e.contains("node 9"), "{e}");
    }
}
