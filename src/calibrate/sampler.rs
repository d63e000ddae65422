//! Neighbor sampling as PyG's NeighborSampler does it (pyg-lib's
//! `neighbor_sample`, directed, without replacement): per hop, each frontier
//! node draws min(degree, f) distinct in-edges uniformly; nodes are
//! de-duplicated into the batch in first-seen order; every drawn edge is kept.
//! Then the feature gather `x[n_id]`.

use std::collections::HashMap;

use super::graph::CscView;
use super::rng::Rng;

/// One sampled mini-batch.
#[derive(Debug, Default)]
pub struct Batch {
    /// Global ids of the batch's nodes, seeds first.
    pub n_id: Vec<i64>,
    /// Local source index of each sampled edge.
    pub row: Vec<i64>,
    /// Local destination index of each sampled edge.
    pub col: Vec<i64>,
    /// Global edge id (position in the CSC) of each sampled edge.
    pub e_id: Vec<i64>,
}

impl Batch {
    /// Bytes of the batch's index tensors (n_id, row, col, e_id as int64).
    pub fn index_bytes(&self) -> u64 {
        8 * (self.n_id.len() + self.row.len() + self.col.len() + self.e_id.len()) as u64
    }
}

/// Samples the subgraph around `seeds` with `fanout` (-1: every neighbor).
pub fn sample(g: CscView<'_>, seeds: &[i64], fanout: &[i64], rng: &mut Rng) -> Batch {
    sample_observed(g, seeds, fanout, rng, &mut |_| {})
}

/// [`sample`], calling `at_end` with the finished batch while the sampler's
/// scratch (its node map) is still alive: the sampler's own peak.
pub fn sample_observed(
    g: CscView<'_>,
    seeds: &[i64],
    fanout: &[i64],
    rng: &mut Rng,
    at_end: &mut dyn FnMut(&Batch),
) -> Batch {
    let mut b = Batch::default();
    let mut local: HashMap<i64, i64> = HashMap::with_capacity(seeds.len() * 8);
    for &s in seeds {
        local.entry(s).or_insert_with(|| {
            b.n_id.push(s);
            b.n_id.len() as i64 - 1
        });
    }
    let (mut begin, mut end) = (0usize, b.n_id.len());
    let mut picked: Vec<usize> = Vec::new();
    for &f in fanout {
        for i in begin..end {
            let v = b.n_id[i] as usize;
            let start = g.colptr[v] as usize;
            let degree = g.colptr[v + 1] as usize - start;
            picked.clear();
            if f < 0 || degree <= f as usize {
                picked.extend(0..degree);
            } else {
                floyd(degree, f as usize, rng, &mut picked);
            }
            for &k in &picked {
                let u = g.row[start + k];
                let next = b.n_id.len() as i64;
                let lu = *local.entry(u).or_insert(next);
                if lu == next {
                    b.n_id.push(u);
                }
                b.row.push(lu);
                b.col.push(i as i64);
                b.e_id.push((start + k) as i64);
            }
        }
        (begin, end) = (end, b.n_id.len());
    }
    at_end(&b);
    drop(local);
    b
}

/// Robert Floyd's algorithm: `k` distinct positions of `0..n`, uniformly.
fn floyd(n: usize, k: usize, rng: &mut Rng, out: &mut Vec<usize>) {
    for j in n - k..n {
        let t = rng.below(j as u64 + 1) as usize;
        if out.contains(&t) {
            out.push(j)
        } else {
            out.push(t)
        }
    }
}

/// `x[n_id]`: gathers `dim` float32 features per node from a row-major matrix.
pub fn gather(features: &[f32], dim: usize, n_id: &[i64], out: &mut Vec<f32>) {
    out.clear();
    out.reserve(n_id.len() * dim);
    for &v in n_id {
        let v = v as usize;
        out.extend_from_slice(&features[v * dim..(v + 1) * dim]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::graph::{Graph, GraphSpec};
    use crate::estimate::degree::DegreeTable;
    use crate::estimate::fanout::{SampledGraph, sample_stats};
    use crate::profiles::DegreeShape;

    fn line() -> Graph {
        // 0 ← 1 ← 2 ← 3: each node's only in-neighbor is the next one.
        Graph {
            colptr: vec![0, 1, 2, 3, 3],
            row: vec![1, 2, 3],
            nodes: 4,
        }
    }

    #[test]
    fn hops_follow_in_edges_and_keep_first_seen_order() {
        let b = sample(line().view(), &[0], &[5, 5], &mut Rng::new(1));
        assert_eq!(b.n_id, vec![0, 1, 2]);
        assert_eq!(
            (b.row.clone(), b.col.clone(), b.e_id.clone()),
            (vec![1, 2], vec![0, 1], vec![0, 1])
        );
        assert_eq!(b.index_bytes(), 8 * (3 + 2 + 2 + 2));
    }

    #[test]
    fn floyd_draws_distinct_positions() {
        let mut rng = Rng::new(9);
        for _ in 0..100 {
            let mut out = Vec::new();
            floyd(20, 7, &mut rng, &mut out);
            let mut s = out.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), 7);
            assert!(out.iter().all(|&p| p < 20));
        }
    }

    #[test]
    fn gather_copies_the_rows_in_order() {
        let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let mut out = Vec::new();
        gather(&x, 3, &[2, 0], &mut out);
        assert_eq!(out, vec![6.0, 7.0, 8.0, 0.0, 1.0, 2.0]);
    }

    #[test]
    fn the_fanout_model_predicts_the_real_sampler() {
        // The estimator's claim, checked against real sampling on a graph drawn
        // from the same degree table: mean sampled nodes and edges per batch.
        let shape = DegreeShape {
            exponent: 2.3,
            zero_fraction: 0.3,
            max: 2_000,
        };
        let spec = GraphSpec {
            nodes: 60_000,
            mean_degree: 12.0,
            shape,
            seed: 5,
        };
        let g = Graph::generate(&spec);
        let mut rng = Rng::new(11);
        let (batches, seeds_per) = (60, 256);
        let (mut nodes, mut edges, mut largest) = (0.0, 0.0, 0.0f64);
        for _ in 0..batches {
            let seeds: Vec<i64> = (0..seeds_per)
                .map(|_| rng.below(g.nodes as u64) as i64)
                .collect();
            let b = sample(g.view(), &seeds, &[10, 5], &mut rng);
            nodes += b.n_id.len() as f64;
            edges += b.row.len() as f64;
            largest = largest.max(b.n_id.len() as f64);
        }
        let (nodes, edges) = (nodes / batches as f64, edges / batches as f64);
        let mean = g.row.len() as f64 / g.nodes as f64;
        let table = DegreeTable::new(&shape, mean);
        // Sources are drawn by the same weights as in-degrees: out ~ in.
        let p = sample_stats(
            &SampledGraph::symmetric(&table, g.nodes as f64, true),
            seeds_per as f64,
            &[10, 5],
            batches as f64,
        );
        let err_n = (p.mean_nodes - nodes).abs() / nodes;
        let err_e = (p.mean_edges - edges).abs() / edges;
        eprintln!(
            "predicted {:.0} nodes / {:.0} edges / largest {:.0}, measured {nodes:.0} / {edges:.0} / {largest:.0}",
            p.mean_nodes, p.mean_edges, p.tail_nodes
        );
        assert!(
            err_n < 0.05 && err_e < 0.05,
            "predicted {:.0} nodes / {:.0} edges, measured {nodes:.0} / {edges:.0}",
            p.mean_nodes,
            p.mean_edges
        );
        // The largest of the batches: the model's tail is an upper estimate
        // (hops add standard deviations), so it must not fall below what was seen
        // and must stay within 10 % above it.
        assert!(
            p.tail_nodes >= largest * 0.98 && p.tail_nodes <= largest * 1.10,
            "tail {:.0} vs largest {largest:.0}",
            p.tail_nodes
        );
    }
}
