//! A synthetic power-law graph built in memory as CSC, the way PyG's
//! NeighborSampler holds it: `colptr` (N+1) and `row` (E) as int64. In-degrees
//! are drawn from the same degree table the estimators use; each edge's source
//! is drawn with probability proportional to its node's weight (a Chung-Lu
//! graph), so a sampled neighbor is degree-biased, as on an undirected graph.

use super::rng::Rng;
use crate::estimate::degree::DegreeTable;
use crate::profiles::DegreeShape;

/// A graph in CSC form plus its node features.
#[derive(Debug)]
pub struct Graph {
    /// Column pointers: in-edges of node v are row[colptr[v]..colptr[v+1]].
    pub colptr: Vec<i64>,
    /// Source node of each in-edge.
    pub row: Vec<i64>,
    /// Number of nodes.
    pub nodes: usize,
}

/// A borrowed CSC (the owned [`Graph`], or one mapped from shared memory).
#[derive(Debug, Clone, Copy)]
pub struct CscView<'a> {
    /// Column pointers.
    pub colptr: &'a [i64],
    /// Source node of each in-edge.
    pub row: &'a [i64],
}

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct GraphSpec {
    /// Nodes.
    pub nodes: usize,
    /// Mean in-degree.
    pub mean_degree: f64,
    /// Degree shape (exponent, isolated share, maximum).
    pub shape: DegreeShape,
    /// Seed.
    pub seed: u64,
}

/// Walker's alias table: O(1) draws from a discrete distribution.
struct Alias {
    prob: Vec<f64>,
    alias: Vec<u32>,
}

impl Alias {
    fn new(weights: &[f64]) -> Alias {
        let n = weights.len();
        let total: f64 = weights.iter().sum();
        let mut prob: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut alias = vec![0u32; n];
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| prob[i] < 1.0);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            alias[s] = l as u32;
            prob[l] -= 1.0 - prob[s];
            if prob[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        Alias { prob, alias }
    }

    fn draw(&self, rng: &mut Rng) -> usize {
        let i = rng.below(self.prob.len() as u64) as usize;
        if rng.next_f64() < self.prob[i] {
            i
        } else {
            self.alias[i] as usize
        }
    }
}

impl Graph {
    /// Generates the graph described by `spec`.
    pub fn generate(spec: &GraphSpec) -> Graph {
        let table = DegreeTable::new(&spec.shape, spec.mean_degree);
        let mut rng = Rng::new(spec.seed);
        // Each node's weight is a draw from the table (isolated nodes weigh 0);
        // its in-degree is the weight, stochastically rounded.
        let bins: Vec<f64> = table.prob.clone();
        let isolated = 1.0 - bins.iter().sum::<f64>();
        let mut bin_weights = bins;
        bin_weights.push(isolated.max(0.0));
        let bin_alias = Alias::new(&bin_weights);
        let mut weight = vec![0.0f64; spec.nodes];
        let mut colptr = Vec::with_capacity(spec.nodes + 1);
        colptr.push(0i64);
        for w in weight.iter_mut() {
            let b = bin_alias.draw(&mut rng);
            *w = table.degree.get(b).copied().unwrap_or(0.0);
            let d = w.floor() as i64 + i64::from(rng.next_f64() < w.fract());
            let last = colptr.last().copied().unwrap_or(0);
            colptr.push(last + d);
        }
        let edges = colptr.last().copied().unwrap_or(0) as usize;
        let sources = Alias::new(&weight);
        let row = (0..edges).map(|_| sources.draw(&mut rng) as i64).collect();
        Graph {
            colptr,
            row,
            nodes: spec.nodes,
        }
    }

    /// The CSC borrowed.
    pub fn view(&self) -> CscView<'_> {
        CscView {
            colptr: &self.colptr,
            row: &self.row,
        }
    }

    /// In-edges of `v`.
    pub fn neighbors(&self, v: usize) -> &[i64] {
        &self.row[self.colptr[v] as usize..self.colptr[v + 1] as usize]
    }

    /// Bytes of the CSC arrays (colptr + row, int64 like PyG's).
    pub fn csc_bytes(&self) -> u64 {
        8 * (self.colptr.len() + self.row.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_has_the_mean_degree_and_isolated_share_asked_for() {
        let spec = GraphSpec {
            nodes: 50_000,
            mean_degree: 12.0,
            shape: DegreeShape {
                exponent: 2.3,
                zero_fraction: 0.3,
                max: 2_000,
            },
            seed: 1,
        };
        let g = Graph::generate(&spec);
        let mean = g.row.len() as f64 / g.nodes as f64;
        // Heavy tail: the sample mean of 50,000 draws wanders; 5 % is generous.
        assert!((mean - 12.0).abs() / 12.0 < 0.05, "mean {mean}");
        let isolated =
            (0..g.nodes).filter(|&v| g.neighbors(v).is_empty()).count() as f64 / g.nodes as f64;
        assert!((isolated - 0.3).abs() < 0.02, "isolated {isolated}");
        assert!(g.row.iter().all(|&u| (u as usize) < g.nodes));
        assert_eq!(g.csc_bytes(), 8 * (50_001 + g.row.len() as u64));
    }

    #[test]
    fn alias_draws_follow_the_weights() {
        let a = Alias::new(&[1.0, 3.0, 0.0, 6.0]);
        let mut rng = Rng::new(3);
        let mut c = [0u32; 4];
        for _ in 0..100_000 {
            c[a.draw(&mut rng)] += 1;
        }
        // Expected 10,000 / 30,000 / 0 / 60,000.
        assert_eq!(c[2], 0);
        assert!(
            (c[0] as i64 - 10_000).abs() < 600 && (c[3] as i64 - 60_000).abs() < 800,
            "{c:?}"
        );
    }
}
