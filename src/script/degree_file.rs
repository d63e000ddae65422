//! The degree histogram of a graph whose edge list is on disk, read from the
//! file's own values without Python: the `edge_index` of a PyG processed
//! `data.pt` (its storage member), of an `.npz`, or of an `.npy`. The
//! sampler's draws depend on the degrees, and without them the plan takes
//! the top of the range that a generic power law and "every node draws its
//! whole fanout" span (docs/plan.md, "Degree shape"). On the Flickr-shaped
//! graph of the ARGO end-to-end run that top was 794k edges per batch
//! against the 580k the sampler drew, which alone put the plan 18 % high.
//!
//! In-degrees count `edge_index[1]` (NeighborLoader samples a node's
//! incoming edges), out-degrees `edge_index[0]`, and each edge's source's
//! in-degree gives the reached histogram: the fields of
//! `profiles::DegreeHistogram`, in its log2 buckets.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::datafile::{Array, elem_size, zip_members};
use crate::profiles::DegreeHistogram;

/// Graphs above this many nodes are not read here: the two per-node counts
/// would take more than 256 MiB of the planner's own memory.
pub const MAX_NODES: u64 = 1 << 25;

/// Elements read per chunk.
const CHUNK: u64 = 1 << 20;

/// The degree histogram of the edge list among `arrays` (read from `path`),
/// on a graph of `nodes` nodes; with `undirected`, of the graph after
/// `to_undirected`/`to_symmetric` (degree_undirected.rs).
pub fn histogram(
    path: &Path,
    arrays: &[(String, Array)],
    nodes: u64,
    undirected: bool,
) -> Result<DegreeHistogram, String> {
    let mut list = EdgeList::open(path, arrays, nodes)?;
    if undirected {
        return super::degree_undirected::histogram(&mut list);
    }
    let mut indeg = vec![0u32; nodes as usize];
    let mut outdeg = vec![0u32; nodes as usize];
    list.row(1, &mut |v| {
        indeg[v] = indeg[v].saturating_add(1);
        Ok(())
    })?;
    let mut reached = Buckets::default();
    list.row(0, &mut |u| {
        outdeg[u] = outdeg[u].saturating_add(1);
        reached.add(indeg[u]);
        Ok(())
    })?;
    let (mut counts, mut out) = (Buckets::default(), Buckets::default());
    indeg.iter().for_each(|d| counts.add(*d));
    outdeg.iter().for_each(|d| out.add(*d));
    Ok(DegreeHistogram {
        counts: counts.counts,
        degree_sums: Some(counts.sums),
        out_counts: Some(out.counts),
        out_degree_sums: Some(out.sums),
        reached_counts: Some(reached.counts),
        reached_degree_sums: Some(reached.sums),
    })
}

/// An edge list located in its file, its layout checked: row 0 holds the
/// sources, row 1 the destinations.
pub struct EdgeList {
    f: std::fs::File,
    /// File offset of element (0, 0).
    base: u64,
    elem: u64,
    /// Elements between rows, and between one edge and the next.
    row_stride: u64,
    edge_stride: u64,
    /// Edges.
    pub count: u64,
    /// Nodes of the graph: every id must be below it.
    pub nodes: u64,
}

impl EdgeList {
    /// Finds the edge list among `arrays` and checks that its layout and
    /// extent are readable from `path`.
    pub fn open(path: &Path, arrays: &[(String, Array)], nodes: u64) -> Result<EdgeList, String> {
        if nodes == 0 || nodes > MAX_NODES {
            return Err(format!(
                "{nodes} nodes: degrees are read for graphs of 1 to {MAX_NODES} nodes"
            ));
        }
        let (_, e) = arrays
            .iter()
            .find(|(n, _)| {
                let last = n.rsplit('/').next().unwrap_or(n);
                matches!(last, "edge_index" | "edges" | "edge_list")
            })
            .ok_or("no edge_index among its arrays")?;
        let elem = elem_size(&e.dtype).ok_or_else(|| format!("an edge list of {}", e.dtype))?;
        let at = e
            .data
            .as_ref()
            .ok_or("the edge list's data is not located")?;
        // Element (row r, edge i) lies at r * rs + i * is.
        let (count, rs, is) = match (e.shape.as_slice(), at.strides.as_slice()) {
            ([2, m], [s0, s1]) => (*m, *s0, *s1),
            ([m, 2], [s0, s1]) => (*m, *s1, *s0),
            _ => return Err(format!("an edge list of shape {:?}", e.shape)),
        };
        // The layouts torch and numpy write: rows contiguous, or pairs side by
        // side. Any other stride (a view saved as is) is not followed, and no
        // stride from the file can make a read larger than a chunk of pairs.
        let layout_ok = (is == 1 && rs >= count) || (is == 2 && rs == 1);
        if !layout_ok {
            return Err(format!(
                "an edge list with strides {:?} (only contiguous rows or pairs are read)",
                at.strides
            ));
        }
        // Bytes to the end of the last element, row 1's last edge.
        let end = count
            .saturating_sub(1)
            .checked_mul(is)
            .and_then(|n| n.checked_add(rs.checked_add(1)?))
            .and_then(|n| n.checked_mul(elem))
            .and_then(|n| n.checked_add(at.offset))
            .ok_or("an edge list too long")?;
        let mut f =
            std::fs::File::open(path).map_err(|err| format!("{}: {err}", path.display()))?;
        let short = "the edge list ends before its shape says".to_string();
        let base = match &at.member {
            None => {
                let len = f.metadata().map_err(|err| err.to_string())?.len();
                if end > len {
                    return Err(short);
                }
                at.offset
            }
            Some(name) => {
                let members = zip_members(&mut f)?;
                let m = members
                    .iter()
                    .find(|m| m.name == *name || m.name.ends_with(&format!("/{name}")))
                    .ok_or_else(|| format!("no member {name}"))?;
                if m.method != 0 {
                    return Err(format!("{} is compressed", m.name));
                }
                if end > m.size {
                    return Err(short);
                }
                m.data_start(&mut f)? + at.offset
            }
        };
        Ok(EdgeList {
            f,
            base,
            elem,
            row_stride: rs,
            edge_stride: is,
            count,
            nodes,
        })
    }

    /// Visits the node ids of row `r` (0: sources, 1: destinations), each
    /// checked to be a node of the graph.
    pub fn row(
        &mut self,
        r: u64,
        visit: &mut dyn FnMut(usize) -> Result<(), String>,
    ) -> Result<(), String> {
        let nodes = self.nodes;
        read_row(
            &mut self.f,
            self.base,
            self.elem,
            r * self.row_stride,
            self.edge_stride,
            self.count,
            &mut |v| {
                if v >= nodes {
                    return Err(format!(
                        "the edge list names node {v} of a graph of {nodes}"
                    ));
                }
                visit(v as usize)
            },
        )
    }
}

/// Log2 buckets: 0 for degree 0, k for degrees 2^(k-1) .. 2^k - 1.
#[derive(Default)]
pub struct Buckets {
    /// Nodes (or edges) per bucket.
    pub counts: Vec<u64>,
    /// The sum of the degrees in each bucket.
    pub sums: Vec<u64>,
}

impl Buckets {
    /// Counts one degree.
    pub fn add(&mut self, d: u32) {
        let k = (32 - d.leading_zeros()) as usize;
        if self.counts.len() <= k {
            self.counts.resize(k + 1, 0);
            self.sums.resize(k + 1, 0);
        }
        self.counts[k] += 1;
        self.sums[k] += u64::from(d);
    }
}

/// Visits the `count` little-endian integers of one row, which starts
/// `first` elements past `base` with `step` elements between them.
fn read_row(
    f: &mut std::fs::File,
    base: u64,
    elem: u64,
    first: u64,
    step: u64,
    count: u64,
    visit: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<(), String> {
    let mut buf = Vec::new();
    let mut i = 0;
    while i < count {
        let n = CHUNK.min(count - i);
        let span = ((n - 1) * step + 1) * elem;
        f.seek(SeekFrom::Start(base + (first + i * step) * elem))
            .map_err(|e| e.to_string())?;
        buf.resize(span as usize, 0);
        f.read_exact(&mut buf)
            .map_err(|_| "the edge list ends before its shape says".to_string())?;
        for j in 0..n {
            let at = (j * step * elem) as usize;
            let v = match elem {
                8 => {
                    let b: [u8; 8] = buf[at..at + 8].try_into().map_err(|_| "a short read")?;
                    i64::from_le_bytes(b)
                }
                _ => {
                    let b: [u8; 4] = buf[at..at + 4].try_into().map_err(|_| "a short read")?;
                    i64::from(i32::from_le_bytes(b))
                }
            };
            visit(u64::try_from(v).map_err(|_| format!("a negative node id {v}"))?)?;
        }
        i += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` of int64 `rows`, C order, with `shape` in its header.
    fn npy(dir: &Path, shape: &str, values: &[i64], fortran: bool) -> std::path::PathBuf {
        let dict = format!(
            "{{'descr': '<i8', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((dict.len() as u16).to_le_bytes());
        b.extend(dict.as_bytes());
        values.iter().for_each(|v| b.extend(v.to_le_bytes()));
        let p = dir.join("edge_index.npy");
        std::fs::write(&p, b).unwrap();
        p
    }

    fn read(p: &Path, nodes: u64) -> Result<DegreeHistogram, String> {
        let arrays = super::super::datafile::arrays(p)?;
        histogram(p, &arrays, nodes, false)
    }

    #[test]
    fn both_orders_of_a_two_by_e_array_give_the_same_degrees() {
        let t = tempfile::tempdir().unwrap();
        // Edges 0->1, 0->2, 1->2: in-degrees 0, 1, 2.
        let c = read(&npy(t.path(), "(2, 3)", &[0, 0, 1, 1, 2, 2], false), 3).unwrap();
        assert_eq!(c.counts, vec![1, 1, 1]);
        assert_eq!(c.degree_sums, Some(vec![0, 1, 2]));
        // The same array in Fortran order: columns are the edges' pairs.
        let f = read(&npy(t.path(), "(2, 3)", &[0, 1, 0, 2, 1, 2], true), 3).unwrap();
        assert_eq!(f, c);
    }

    #[test]
    fn a_truncated_file_and_an_id_past_the_nodes_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let e = read(&npy(t.path(), "(2, 3)", &[0, 0, 1, 1, 2], false), 3).unwrap_err();
        assert!(e.contains("ends before"), "{e}");
        let e = read(&npy(t.path(), "(2, 3)", &[0, 0, 1, 1, 2, 7], false), 3).unwrap_err();
        assert!(e.contains("node 7"), "{e}");
        let e = read(&npy(t.path(), "(2, 3)", &[0, 0, 1, 1, 2, 2], false), 0).unwrap_err();
        assert!(e.contains("0 nodes"), "{e}");
    }
}
