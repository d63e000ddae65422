//! The in-degree distribution as a small discrete table, built once per job:
//! a fraction of isolated nodes and a power law truncated at the maximum
//! degree, scaled so its mean equals edges/nodes. Sampling arithmetic reads
//! expectations off this table.

use crate::profiles::DegreeShape;

/// Bins of the log-spaced table.
const BINS: usize = 48;

/// A discrete degree distribution: `(degree, probability)` pairs.
#[derive(Debug, Clone)]
pub struct DegreeTable {
    /// Representative degree of each bin (its conditional mean).
    pub degree: Vec<f64>,
    /// Probability of each bin (sums to 1 with the isolated nodes' share).
    pub prob: Vec<f64>,
    /// Mean degree over all nodes.
    pub mean: f64,
}

/// P(a ≤ D ≤ b) and E[D | a ≤ D ≤ b] for a density ∝ x^-alpha.
fn bin(alpha: f64, a: f64, b: f64) -> (f64, f64) {
    let mass = |x: f64| {
        if (alpha - 1.0).abs() < 1e-9 {
            x.ln()
        } else {
            x.powf(1.0 - alpha) / (1.0 - alpha)
        }
    };
    let first = |x: f64| {
        if (alpha - 2.0).abs() < 1e-9 {
            x.ln()
        } else {
            x.powf(2.0 - alpha) / (2.0 - alpha)
        }
    };
    let m = mass(b) - mass(a);
    (m, (first(b) - first(a)) / m)
}

/// Mean of the power law on [xmin, xmax].
fn mean_on(alpha: f64, xmin: f64, xmax: f64) -> f64 {
    bin(alpha, xmin, xmax).1
}

impl DegreeTable {
    /// Builds the table for `shape` with overall mean degree `mean`.
    pub fn new(shape: &DegreeShape, mean: f64) -> DegreeTable {
        if mean <= 0.0 {
            // A graph without edges: every node isolated.
            return DegreeTable {
                degree: vec![],
                prob: vec![],
                mean: 0.0,
            };
        }
        let alpha = shape.exponent;
        let nonzero = 1.0 - shape.zero_fraction;
        let target = (mean / nonzero).max(1e-9);
        let xmax = (shape.max as f64).max(target * 1.01).max(1.0);
        // The mean grows with xmin: bisect (in log space) for the xmin that gives `target`.
        let (mut lo, mut hi) = (1e-6_f64.ln(), xmax.ln());
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if mean_on(alpha, mid.exp(), xmax) < target {
                lo = mid
            } else {
                hi = mid
            }
        }
        let xmin = (0.5 * (lo + hi)).exp().min(xmax / 1.0001);
        let (total, _) = bin(alpha, xmin, xmax);
        let ratio = (xmax / xmin).powf(1.0 / BINS as f64);
        let mut degree = Vec::with_capacity(BINS);
        let mut prob = Vec::with_capacity(BINS);
        let mut a = xmin;
        for _ in 0..BINS {
            let b = a * ratio;
            let (m, mean_in_bin) = bin(alpha, a, b);
            degree.push(mean_in_bin);
            prob.push(nonzero * m / total);
            a = b;
        }
        DegreeTable { degree, prob, mean }
    }

    /// E[min(D, f)] and E[min(D, f)^2] over nodes (f = None: all neighbors).
    /// With `size_biased`, nodes are weighted by degree, as a node reached by
    /// following an edge of an undirected graph is.
    pub fn capped_moments(&self, f: Option<f64>, size_biased: bool) -> (f64, f64) {
        let (mut e1, mut e2, mut w) = (0.0, 0.0, 0.0);
        for (&d, &p) in self.degree.iter().zip(&self.prob) {
            let weight = if size_biased { p * d } else { p };
            let c = f.map_or(d, |f| d.min(f));
            e1 += weight * c;
            e2 += weight * c * c;
            w += weight;
        }
        if size_biased && w > 0.0 {
            // Isolated nodes are never reached, so the biased weights renormalise.
            (e1 / w, e2 / w)
        } else {
            (e1, e2)
        }
    }

    /// Expected distinct nodes among `draws` neighbor draws over `nodes` nodes,
    /// each node drawn with probability proportional to its degree.
    pub fn expected_unique(&self, draws: f64, nodes: f64) -> f64 {
        if self.mean <= 0.0 {
            return 0.0;
        }
        let per = draws / (nodes * self.mean);
        let hit: f64 = self
            .degree
            .iter()
            .zip(&self.prob)
            .map(|(&d, &p)| p * -(-per * d).exp_m1())
            .sum();
        nodes * hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(zero: f64) -> DegreeShape {
        DegreeShape {
            exponent: 2.3,
            zero_fraction: zero,
            max: 100_000,
        }
    }

    #[test]
    fn the_table_keeps_the_mean_and_the_isolated_share() {
        let t = DegreeTable::new(&shape(0.3), 14.55);
        let mass: f64 = t.prob.iter().sum();
        assert!((mass - 0.7).abs() < 1e-9, "non-isolated mass {mass}");
        let mean: f64 = t.degree.iter().zip(&t.prob).map(|(d, p)| d * p).sum();
        assert!((mean - 14.55).abs() / 14.55 < 1e-3, "mean {mean}");
    }

    #[test]
    fn a_cap_above_every_degree_changes_nothing() {
        let t = DegreeTable::new(&shape(0.0), 10.0);
        let (all, _) = t.capped_moments(None, false);
        let (capped, _) = t.capped_moments(Some(1e9), false);
        assert!((all - capped).abs() < 1e-9);
        assert!((all - 10.0).abs() < 0.01);
    }

    #[test]
    fn a_cap_of_one_counts_nodes_with_any_neighbor() {
        // min(D, 1) is 1 for every node whose degree is at least 1; with 30 %
        // isolated nodes and (nearly) all others above 1, E[min(D,1)] ≈ 0.7.
        let t = DegreeTable::new(&shape(0.3), 14.55);
        let (e1, _) = t.capped_moments(Some(1.0), false);
        assert!(e1 <= 0.7 + 1e-9 && e1 > 0.6, "{e1}");
    }

    #[test]
    fn few_draws_are_nearly_all_distinct_and_many_saturate() {
        let t = DegreeTable::new(&shape(0.0), 10.0);
        let n = 1e8;
        assert!((t.expected_unique(1000.0, n) - 1000.0).abs() < 1.0);
        let u = t.expected_unique(1e10, 1e6);
        assert!(u <= 1e6 && u > 0.9e6, "{u}");
    }
}
