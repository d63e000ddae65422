//! Who a later hop's frontier is. Neighbor draws land on a node at a rate
//! set by its out-degree, so the first hops reach the hubs, and a node is
//! expanded once, in the hop that first reaches it: where in- and
//! out-degrees go together (R-MAT, web and citation graphs, any undirected
//! graph) a third hop's frontier holds few hubs, and taking it as
//! degree-biased as the first planned up to 2.5 times the edges real runs
//! drew. Where the graph does not say how they go together, nothing changes.

use super::degree::DegreeTable;
use crate::profiles::DegreeHistogram;

/// How often draws land on the nodes of each point of a degree table: the
/// mean out-degree of its nodes, for a later hop's frontier.
#[derive(Debug, Clone, Default)]
pub struct PointReach {
    /// Mean out-degree of each point's nodes, in the table's order.
    pub out: Vec<f64>,
    /// Mean out-degree of the nodes of in-degree 0.
    pub zero_out: f64,
    /// Mean out-degree over all nodes (edges per node).
    pub mean: f64,
    /// Nodes in the graph.
    pub nodes: f64,
}

/// The mean out-degree of the nodes behind each point of the table that
/// `DegreeTable::from_histogram` builds from `h`'s reached histogram: the
/// draws that reach in-degree bucket k, over the nodes in it. Empty where
/// `h` has no reached histogram.
pub fn reached_out_degrees(h: &DegreeHistogram, mean: f64, nodes: f64) -> PointReach {
    let Some(reached) = &h.reached_counts else {
        return PointReach::default();
    };
    let per_node = |k: usize| {
        let (r, n) = (
            reached[k] as f64,
            h.counts.get(k).copied().unwrap_or(0) as f64,
        );
        if n > 0.0 { r / n } else { mean }
    };
    let mut out = Vec::new();
    for (k, &c) in reached.iter().enumerate().skip(1) {
        if c > 0 {
            // from_histogram makes two points of each non-empty bucket.
            out.extend([per_node(k), per_node(k)]);
        }
    }
    PointReach {
        out,
        zero_out: if reached.is_empty() { 0.0 } else { per_node(0) },
        mean,
        nodes,
    }
}

impl DegreeTable {
    /// `capped_moments` over the nodes that the draws between the `from`-th
    /// and the `to`-th reach first. A node is drawn at a rate proportional
    /// to its out-degree, so the hubs are reached by the first draws and a
    /// later frontier holds fewer of them. Each point's weight is multiplied
    /// by the share of its draws in that interval that land on it while it
    /// is not yet reached, (e^(−a·o) − e^(−b·o)) / ((b − a)·o), with o the
    /// mean out-degree of the point's nodes (`reach.out`) and a, b the draws
    /// per edge. With few draws the share is 1 and this is `capped_moments`.
    pub fn capped_moments_fresh(
        &self,
        f: Option<f64>,
        size_biased: bool,
        (from, to): (f64, f64),
        reach: &PointReach,
    ) -> (f64, f64) {
        let scale = reach.nodes * reach.mean;
        if scale <= 0.0
            || to <= from
            || reach.out.is_empty()
            || reach.out.len() != self.degree.len()
        {
            return self.capped_moments(f, size_biased);
        }
        let (a, b) = (from / scale, to / scale);
        let unreached = |o: f64| {
            if o > 0.0 {
                ((-a * o).exp() - (-b * o).exp()) / ((b - a) * o)
            } else {
                1.0
            }
        };
        // Unbiased, the nodes of in-degree 0 (the share the points leave
        // out) keep their weight: they are reached, and draw nothing.
        let zero = if size_biased {
            0.0
        } else {
            (1.0 - self.prob.iter().sum::<f64>()).max(0.0) * unreached(reach.zero_out)
        };
        let (mut e1, mut e2, mut w) = (0.0, 0.0, zero);
        for ((&d, &p), &o) in self.degree.iter().zip(&self.prob).zip(&reach.out) {
            let weight = if size_biased { p * d } else { p } * unreached(o);
            let c = f.map_or(d, |f| d.min(f));
            e1 += weight * c;
            e2 += weight * c * c;
            w += weight;
        }
        if w > 0.0 {
            (e1 / w, e2 / w)
        } else {
            (0.0, 0.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_frontier_holds_fewer_hubs() {
        // Half the nodes of degree 1, half of degree 99 (mean 50), on 10^6
        // nodes, symmetric. Biased by degree the frontier is 99 % hubs:
        // E[min(D, 10)] = 0.01·1 + 0.99·10 = 9.91.
        let t = DegreeTable {
            degree: vec![1.0, 99.0],
            prob: vec![0.5, 0.5],
            mean: 50.0,
        };
        let reach = PointReach {
            out: t.degree.clone(),
            zero_out: 0.0,
            mean: 50.0,
            nodes: 1e6,
        };
        let (first, _) = t.capped_moments(Some(10.0), true);
        assert!((first - 9.91).abs() < 1e-9, "{first}");
        // Ten draws over 5·10^7 edge ends: nothing is reached twice yet.
        let (few, _) = t.capped_moments_fresh(Some(10.0), true, (0.0, 10.0), &reach);
        assert!((few - first).abs() < 1e-6, "{few}");
        // After 5·10^7 draws (one per edge end) a hub has been drawn 99
        // times on average and is almost surely in the batch already; the
        // draws from 5·10^7 to 10^8 reach hubs at a share of
        // (e^-99 − e^-198)/99 ≈ 0 and degree-1 nodes at (e^-1 − e^-2)/1 =
        // 0.2325: the new frontier is nearly all degree-1 nodes.
        let (late, _) = t.capped_moments_fresh(Some(10.0), true, (5e7, 1e8), &reach);
        assert!((1.0..1.01).contains(&late), "{late}");
        // Without per-point reach (a directed graph that does not say how
        // its in- and out-degrees go together) nothing changes.
        let none = PointReach::default();
        let (same, _) = t.capped_moments_fresh(Some(10.0), true, (5e7, 1e8), &none);
        assert_eq!(same, first);
    }

    #[test]
    fn reached_out_degrees_follow_the_tables_points() {
        // In-degree buckets: 10 nodes of degree 0, 20 of 1, 10 of 2..3;
        // the draws that land on each bucket (edges whose source is there):
        // 5, 20, 60. Mean out-degree per bucket: 0.5, 1, 6; two points each.
        let h = DegreeHistogram {
            counts: vec![10, 20, 10],
            degree_sums: Some(vec![0, 20, 25]),
            reached_counts: Some(vec![5, 20, 60]),
            reached_degree_sums: Some(vec![0, 20, 150]),
            ..DegreeHistogram::default()
        };
        let r = reached_out_degrees(&h, 85.0 / 40.0, 40.0);
        assert_eq!(r.out, vec![1.0, 1.0, 6.0, 6.0]);
        assert_eq!(r.zero_out, 0.5);
        let reached = h.reached().unwrap();
        let t = DegreeTable::from_histogram(&reached, reached.mean().unwrap());
        assert_eq!(t.degree.len(), r.out.len());
    }
}
