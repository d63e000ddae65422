//! Sampled nodes and edges per batch from the fanout: hop by hop, each
//! frontier node draws min(degree, f_k) neighbors; the distinct new nodes are
//! those all draws so far reach, less those the earlier hops' draws reached
//! (draws land by out-degree), and a later frontier holds the nodes each hop
//! reached first (frontier.rs). The peak is set by the largest batch of the
//! run, so the tail matters as much as the mean.

use super::degree::DegreeTable;
use super::frontier::PointReach;

/// Sizes of one sampled mini-batch subgraph.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SampleStats {
    /// Mean distinct nodes per batch (seeds included).
    pub mean_nodes: f64,
    /// Mean sampled edges per batch.
    pub mean_edges: f64,
    /// Standard deviation of the node count.
    pub sd_nodes: f64,
    /// Standard deviation of the edge count.
    pub sd_edges: f64,
    /// Nodes in the largest batch expected in the run.
    pub tail_nodes: f64,
    /// Edges in the largest batch expected in the run.
    pub tail_edges: f64,
    /// How many standard deviations the largest of the run's batches sits above the mean.
    pub tail_z: f64,
}

#[cfg(test)]
impl SampleStats {
    /// Every batch exactly `nodes` nodes and `edges` edges (for tests).
    pub(crate) fn fixed(nodes: f64, edges: f64) -> SampleStats {
        SampleStats {
            mean_nodes: nodes,
            mean_edges: edges,
            sd_nodes: 0.0,
            sd_edges: 0.0,
            tail_nodes: nodes,
            tail_edges: edges,
            tail_z: 0.0,
        }
    }
}

/// Expected maximum of `n` draws of a normal variable, in standard deviations:
/// sqrt(2 ln n) (the Gumbel location), 0 for a single draw.
pub fn extreme_z(n: f64) -> f64 {
    if n <= 1.0 { 0.0 } else { (2.0 * n.ln()).sqrt() }
}

/// The degree tables sampling reads. A neighbor draw follows an in-edge to
/// its source, so the nodes draws land on are weighted by out-degree.
#[derive(Debug, Clone, Copy)]
pub struct SampledGraph<'a> {
    /// Nodes in the graph.
    pub nodes: f64,
    /// In-degrees of the seed nodes (all nodes).
    pub in_degree: &'a DegreeTable,
    /// In-degrees of the nodes reached after the first hop.
    pub hop: &'a DegreeTable,
    /// Whether `hop` is to be degree-biased (a node reached by an edge of an
    /// undirected graph), else taken as its own probabilities say (a
    /// measured in-degree-of-the-reached-node table).
    pub hop_biased: bool,
    /// Out-degrees (the in-degrees on an undirected graph): they decide how
    /// many draws are duplicates.
    pub reach: &'a DegreeTable,
    /// The mean out-degree of each `hop` point's nodes: how soon the draws
    /// reach them (empty: not known, every hop's frontier as `hop` says).
    pub hop_reach: &'a PointReach,
}

impl<'a> SampledGraph<'a> {
    /// A graph whose every table is `t` (in-degree = out-degree).
    pub fn symmetric(t: &'a DegreeTable, nodes: f64, hop_biased: bool) -> SampledGraph<'a> {
        SampledGraph {
            nodes,
            in_degree: t,
            hop: t,
            hop_biased,
            reach: t,
            hop_reach: &NO_REACH,
        }
    }
}

/// No per-point reach: later frontiers as the hop table says.
static NO_REACH: PointReach = PointReach {
    out: Vec::new(),
    zero_out: 0.0,
    mean: 0.0,
    nodes: 0.0,
};

/// Statistics of batches of `seeds` seed nodes sampled with `fanout` on `g`,
/// over `batches_in_run` batches.
pub fn sample_stats(
    g: &SampledGraph,
    seeds: f64,
    fanout: &[i64],
    batches_in_run: f64,
) -> SampleStats {
    let nodes = g.nodes;
    let (mut frontier, mut frontier_var) = (seeds.min(nodes), 0.0_f64);
    let (mut total, mut sd_total) = (frontier, 0.0_f64);
    let (mut edges, mut sd_edges) = (0.0_f64, 0.0_f64);
    let (seeds_in, mut drawn, mut reached_before) = (frontier, 0.0_f64, 0.0_f64);
    // The draws that reached the current frontier first (none for the seeds).
    let mut frontier_drawn = (0.0_f64, 0.0_f64);
    for (hop, &f) in fanout.iter().enumerate() {
        let cap = (f >= 0).then_some(f as f64);
        let (e1, e2) = if hop == 0 {
            g.in_degree.capped_moments(cap, false)
        } else {
            g.hop
                .capped_moments_fresh(cap, g.hop_biased, frontier_drawn, g.hop_reach)
        };
        let draws = frontier * e1;
        let draws_var = frontier * (e2 - e1 * e1).max(0.0) + e1 * e1 * frontier_var;
        // Distinct new nodes: the nodes every draw so far reaches, less those
        // the earlier hops' draws reached, less the seeds among them.
        let reached = g.reach.expected_unique(drawn + draws, nodes);
        let fresh = (reached - reached_before).max(0.0) * (1.0 - seeds_in / nodes).max(0.0);
        frontier_drawn = (drawn, drawn + draws);
        drawn += draws;
        reached_before = reached;
        let keep = if draws > 0.0 { fresh / draws } else { 0.0 };
        edges += draws;
        sd_edges += draws_var.sqrt();
        frontier = fresh;
        frontier_var = keep * keep * draws_var;
        total += fresh;
        // Hops move together (a big frontier makes a big next hop): add sds, not variances.
        sd_total += frontier_var.sqrt();
    }
    let z = extreme_z(batches_in_run);
    // A node is in one hop's frontier only, so no edge is drawn twice: a
    // batch holds at most the graph's edges, whatever the fanout (-1 hops
    // on a power-law graph otherwise summed far past it: sealed-2611251-16,
    // fanout [-1, -1, 19], planned at 70 GiB against a 2.9 GiB peak).
    let graph_edges = nodes * g.in_degree.mean;
    SampleStats {
        mean_nodes: total,
        mean_edges: edges.min(graph_edges),
        sd_nodes: sd_total,
        sd_edges,
        tail_nodes: (total + z * sd_total).min(nodes),
        tail_edges: (edges + z * sd_edges).min(graph_edges),
        tail_z: z,
    }
}

/// The largest batch any graph of `nodes` nodes and `edges` edges can give
/// `seeds` seeds with `fanout`: every frontier node draws its whole fanout
/// (every edge for -1), no draw lands on a node already in the batch, and
/// no edge is drawn twice (a node is in one hop's frontier only). The
/// planner's batch for a dataset whose degrees it does not know: the top of
/// the range, since a generic degree shape may give smaller batches than the
/// graph has.
pub fn sample_bound(nodes: f64, edges: f64, seeds: f64, fanout: &[i64]) -> SampleStats {
    let mut frontier = seeds.min(nodes);
    let (mut total, mut drawn) = (frontier, 0.0_f64);
    for &f in fanout {
        let draws = if f < 0 { edges } else { frontier * f as f64 }.min(edges - drawn);
        let fresh = draws.min(nodes - total).max(0.0);
        drawn += draws;
        total += fresh;
        frontier = fresh;
    }
    SampleStats {
        mean_nodes: total,
        mean_edges: drawn,
        sd_nodes: 0.0,
        sd_edges: 0.0,
        tail_nodes: total,
        tail_edges: drawn,
        tail_z: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::DegreeShape;

    fn regular(degree: f64) -> DegreeTable {
        // Every node has the same degree: one bin, no variance.
        DegreeTable {
            degree: vec![degree],
            prob: vec![1.0],
            mean: degree,
        }
    }

    #[test]
    fn a_regular_graph_samples_exactly_the_fanout_product() {
        // Degree 20 ≥ every fanout, so each node draws exactly f neighbors:
        // edges = 100·10 + (100·10)·5 = 6,000; on 10^9 nodes duplicates are
        // negligible, so nodes ≈ 100 + 1,000 + 5,000 = 6,100, and no variance.
        let s = sample_stats(
            &SampledGraph::symmetric(&regular(20.0), 1e9, false),
            100.0,
            &[10, 5],
            1000.0,
        );
        // Duplicates among 1,000 draws over 10^9 nodes: about 1000²/(2·10^9) = 0.0005.
        assert!((s.mean_edges - 6000.0).abs() < 0.01, "{}", s.mean_edges);
        assert!((s.mean_nodes - 6100.0).abs() < 0.1, "{}", s.mean_nodes);
        assert_eq!(s.sd_nodes, 0.0);
        assert_eq!(s.tail_nodes, s.mean_nodes);
    }

    #[test]
    fn the_bound_draws_every_fanout_and_is_capped_by_the_graph() {
        // 100 seeds, fanout [10, 5] on a big graph: 100 + 1,000 + 5,000 nodes.
        let b = sample_bound(1e9, 1e10, 100.0, &[10, 5]);
        assert_eq!((b.tail_nodes, b.tail_edges), (6100.0, 6000.0));
        // On 3,000 nodes the batch cannot hold more than the graph.
        let small = sample_bound(3000.0, 1e6, 100.0, &[10, 5]);
        assert_eq!(small.tail_nodes, 3000.0);
        // -1 can draw every edge, once.
        let all = sample_bound(1e6, 5e6, 10.0, &[-1, -1]);
        assert_eq!(all.tail_edges, 5e6);
        // The bound is above what any degree table gives.
        let t = regular(20.0);
        let s = sample_stats(
            &SampledGraph::symmetric(&t, 1e6, true),
            512.0,
            &[25, 10],
            1e4,
        );
        let b = sample_bound(1e6, 2e7, 512.0, &[25, 10]);
        assert!(b.tail_nodes >= s.tail_nodes && b.tail_edges >= s.tail_edges);
    }

    #[test]
    fn a_batch_never_holds_more_edges_than_the_graph() {
        // Every node of degree 20 on 10,000 nodes: 200,000 edges. Three hops
        // of -1 from 5,000 seeds would draw 100,000 + 2·(frontier·20).
        let t = regular(20.0);
        let s = sample_stats(
            &SampledGraph::symmetric(&t, 1e4, true),
            5000.0,
            &[-1, -1, -1],
            1e3,
        );
        assert!(
            s.tail_edges <= 200_000.0 && s.mean_edges <= 200_000.0,
            "{s:?}"
        );
        assert!(s.tail_nodes <= 1e4);
    }

    #[test]
    fn low_degree_caps_the_draws() {
        // Degree 3 < fanout 10: each node draws all 3 neighbors: 50 + 150 nodes.
        let s = sample_stats(
            &SampledGraph::symmetric(&regular(3.0), 1e9, false),
            50.0,
            &[10],
            1.0,
        );
        assert!((s.mean_edges - 150.0).abs() < 1e-6);
    }

    #[test]
    fn a_small_graph_saturates() {
        // 1,000 nodes cannot give more than 1,000 distinct nodes however large the fanout.
        let s = sample_stats(
            &SampledGraph::symmetric(&regular(500.0), 1000.0, true),
            500.0,
            &[100, 100],
            1e6,
        );
        assert!(s.mean_nodes <= 1000.0 + 1e-9 && s.tail_nodes <= 1000.0);
    }

    #[test]
    fn the_tail_exceeds_the_mean_on_a_skewed_graph() {
        let shape = DegreeShape {
            exponent: 2.3,
            zero_fraction: 0.3,
            max: 100_000,
        };
        let t = DegreeTable::new(&shape, 14.55);
        let s = sample_stats(
            &SampledGraph::symmetric(&t, 1.1e8, false),
            1024.0,
            &[15, 10],
            1e5,
        );
        assert!(s.tail_nodes > s.mean_nodes * 1.01);
        assert!((s.tail_z - (2.0 * 1e5_f64.ln()).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn skewed_out_degrees_repeat_draws_and_uniform_ones_do_not() {
        // 100,000 draws over 10^6 nodes: a uniform out-degree gives
        // N·(1 − e^(−0.1)) = 95,162.58 distinct sources; half the nodes holding
        // every out-edge (out-degree 2 or 0) gives 5·10^5·(1 − e^(−0.2)) = 90,634.62.
        // Of those, the 90 % not among the 10^5 seeds are new.
        let uniform = regular(10.0);
        let half = DegreeTable {
            degree: vec![2.0],
            prob: vec![0.5],
            mean: 1.0,
        };
        let a = sample_stats(
            &SampledGraph::symmetric(&uniform, 1e6, false),
            1e5,
            &[1],
            1.0,
        );
        let skewed = SampledGraph {
            reach: &half,
            ..SampledGraph::symmetric(&uniform, 1e6, false)
        };
        let b = sample_stats(&skewed, 1e5, &[1], 1.0);
        assert!(
            (a.mean_nodes - 1e5 - 0.9 * 95_162.58).abs() < 1.0,
            "{}",
            a.mean_nodes
        );
        assert!(
            (b.mean_nodes - 1e5 - 0.9 * 90_634.62).abs() < 1.0,
            "{}",
            b.mean_nodes
        );
    }

    #[test]
    fn extreme_z_is_zero_for_one_batch() {
        assert_eq!(extreme_z(1.0), 0.0);
        // sqrt(2 ln 100) = sqrt(9.2103) = 3.0349
        assert!((extreme_z(100.0) - 3.0349).abs() < 1e-3);
    }
}
