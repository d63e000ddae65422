//! The in-degree distribution as a small discrete table, built once per job:
//! a fraction of isolated nodes and a power law truncated at the maximum
//! degree, scaled so its mean equals edges/nodes. Sampling arithmetic reads
//! expectations off this table.

use crate::profiles::{DegreeHistogram, DegreeShape};

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

    /// Builds the table from a measured log2 histogram, scaled to mean `mean`.
    /// Each bucket becomes two points around its mean (its degree sum over its
    /// count when given, else the bucket's geometric middle), a quarter of the
    /// bucket's width apart on either side, so a fanout inside a bucket caps
    /// part of it, as it does on the real graph.
    pub fn from_histogram(h: &DegreeHistogram, mean: f64) -> DegreeTable {
        let total: u64 = h.counts.iter().sum();
        if mean <= 0.0 || total == 0 {
            return DegreeTable::new(
                &DegreeShape {
                    exponent: 2.5,
                    zero_fraction: 0.0,
                    max: 1,
                },
                0.0,
            );
        }
        let (mut degree, mut prob) = (Vec::new(), Vec::new());
        for (k, &c) in h.counts.iter().enumerate().skip(1) {
            if c == 0 {
                continue;
            }
            let lo = (1u64 << (k - 1)) as f64;
            let hi = ((1u64 << k) - 1) as f64;
            let m = match &h.degree_sums {
                Some(s) => (s[k] as f64 / c as f64).clamp(lo, hi),
                None => (lo * hi).sqrt(),
            };
            let p = c as f64 / total as f64;
            let a = (m - (hi - lo) / 4.0).max(lo);
            let b = 2.0 * m - a;
            let (a, b) = if b > hi { (2.0 * m - hi, hi) } else { (a, b) };
            degree.extend([a, b]);
            prob.extend([p / 2.0, p / 2.0]);
        }
        let have: f64 = degree.iter().zip(&prob).map(|(d, p)| d * p).sum();
        if have > 0.0 {
            let scale = mean / have;
            degree.iter_mut().for_each(|d| *d *= scale);
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
    fn a_histogram_keeps_its_isolated_share_and_its_mean() {
        // 50 nodes of degree 0, 30 of degree 1, 20 in 2..3 with degree sum 50:
        // mean (30 + 50) / 100 = 0.8; E[min(D, 1)] = 0.5 (every non-isolated node).
        let h = DegreeHistogram {
            counts: vec![50, 30, 20],
            degree_sums: Some(vec![0, 30, 50]),
            ..DegreeHistogram::default()
        };
        let t = DegreeTable::from_histogram(&h, 0.8);
        let (e1, _) = t.capped_moments(Some(1.0), false);
        assert!((e1 - 0.5).abs() < 1e-9, "{e1}");
        let (all, _) = t.capped_moments(None, false);
        assert!((all - 0.8).abs() < 1e-9, "{all}");
        // The bucket becomes 2.25 and 2.75; a cap of 2 cuts both: E = 0.3 + 0.1·2 + 0.1·2.
        let (e2, _) = t.capped_moments(Some(2.0), false);
        assert!((e2 - 0.7).abs() < 1e-9, "{e2}");
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
