//! The measured degree histogram a dataset may carry: in-degrees, and on a
//! directed graph the out-degrees (where neighbor draws land) and the
//! in-degree of each edge's source (how far the next hop fans out).

use serde::{Deserialize, Serialize};

/// The in-degree histogram of the graph the sampler samples (after
/// `to_undirected` when the job does it), in log2 buckets: bucket 0 counts
/// nodes of degree 0, bucket k ≥ 1 nodes of degree 2^(k-1) .. 2^k − 1. One
/// line of PyTorch computes it (docs/plan.md, "Degree shape").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DegreeHistogram {
    /// Nodes per bucket.
    pub counts: Vec<u64>,
    /// Sum of the degrees of each bucket's nodes (optional: sharpens the
    /// bucket means; without it they are placed so the mean is edges/nodes).
    #[serde(default)]
    pub degree_sums: Option<Vec<u64>>,
    /// The out-degree histogram in the same buckets (directed graphs): a
    /// sampled neighbor is an edge's source, so out-degrees decide how often
    /// draws repeat a node. Without it a directed graph's sources are taken
    /// as uniform, which gives the most distinct nodes (the safe side).
    #[serde(default)]
    pub out_counts: Option<Vec<u64>>,
    /// Degree sums of the out-degree buckets.
    #[serde(default)]
    pub out_degree_sums: Option<Vec<u64>>,
    /// The in-degree of the node each edge comes from, one count per edge,
    /// in the same buckets: what a neighbor draw reaches and will expand at
    /// the next hop. On graphs whose in- and out-degrees go together (R-MAT,
    /// web and citation graphs) it is far above the plain in-degree. Without
    /// it every hop after the first is taken as degree-biased (the safe side).
    #[serde(default)]
    pub reached_counts: Option<Vec<u64>>,
    /// Degree sums of the reached buckets.
    #[serde(default)]
    pub reached_degree_sums: Option<Vec<u64>>,
}

impl DegreeHistogram {
    /// The out-degree histogram, when given.
    pub fn out(&self) -> Option<DegreeHistogram> {
        self.out_counts.as_ref().map(|c| DegreeHistogram {
            counts: c.clone(),
            degree_sums: self.out_degree_sums.clone(),
            ..DegreeHistogram::default()
        })
    }

    /// The reached-in-degree histogram, when given.
    pub fn reached(&self) -> Option<DegreeHistogram> {
        self.reached_counts.as_ref().map(|c| DegreeHistogram {
            counts: c.clone(),
            degree_sums: self.reached_degree_sums.clone(),
            ..DegreeHistogram::default()
        })
    }

    /// The mean of the histogram's values, from its degree sums when given.
    pub fn mean(&self) -> Option<f64> {
        let n: u64 = self.counts.iter().sum();
        let sums = self.degree_sums.as_ref()?;
        (n > 0).then(|| sums.iter().sum::<u64>() as f64 / n as f64)
    }

    /// Checks the histogram against the dataset's `nodes` and `edges`; the
    /// message names the field.
    pub fn validate(&self, nodes: u64, edges: u64) -> Result<(), String> {
        let total: u64 = self.counts.iter().sum();
        if self.counts.len() > 48 || total == 0 {
            return Err("degree_histogram.counts must hold 1 to 48 buckets with some nodes".into());
        }
        if total.abs_diff(nodes) > nodes / 100 {
            return Err(format!(
                "degree_histogram counts {total} nodes, the dataset has {}",
                nodes
            ));
        }
        if self
            .degree_sums
            .as_ref()
            .is_some_and(|s| s.len() != self.counts.len())
        {
            return Err("degree_histogram.degree_sums must have one entry per bucket".into());
        }
        if let Some(o) = &self.out_counts {
            let out: u64 = o.iter().sum();
            if o.len() > 48 || out.abs_diff(nodes) > nodes / 100 {
                return Err(format!(
                    "degree_histogram.out_counts counts {out} nodes, the dataset has {}",
                    nodes
                ));
            }
            if self
                .out_degree_sums
                .as_ref()
                .is_some_and(|s| s.len() != o.len())
            {
                return Err(
                    "degree_histogram.out_degree_sums must have one entry per bucket".into(),
                );
            }
        }
        if let Some(r) = &self.reached_counts {
            let per_edge: u64 = r.iter().sum();
            if r.len() > 48 || per_edge.abs_diff(edges) > edges / 100 + 1 {
                return Err(format!(
                    "degree_histogram.reached_counts counts {per_edge} edges, the dataset has {}",
                    edges
                ));
            }
            if self.reached_degree_sums.as_ref().map(|s| s.len()) != Some(r.len()) {
                return Err(
                    "degree_histogram.reached_counts needs reached_degree_sums, one per bucket"
                        .into(),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(counts: Vec<u64>) -> DegreeHistogram {
        DegreeHistogram {
            counts,
            ..DegreeHistogram::default()
        }
    }

    #[test]
    fn a_histogram_must_count_the_datasets_nodes_and_edges() {
        assert!(h(vec![10, 80, 10]).validate(100, 500).is_ok());
        let e = h(vec![10, 10]).validate(100, 500).unwrap_err();
        assert!(e.contains("counts 20 nodes") && e.contains("100"), "{e}");
        assert!(h(vec![]).validate(100, 500).is_err());
        let mut r = h(vec![10, 80, 10]);
        r.reached_counts = Some(vec![100, 400]);
        let e = r.validate(100, 500).unwrap_err();
        assert!(e.contains("reached_degree_sums"), "{e}");
        r.reached_degree_sums = Some(vec![0, 900]);
        assert!(r.validate(100, 500).is_ok());
        r.reached_counts = Some(vec![1, 1]);
        assert!(r.validate(100, 500).unwrap_err().contains("counts 2 edges"));
    }

    #[test]
    fn the_mean_comes_from_the_degree_sums() {
        let mut x = h(vec![2, 2]);
        assert_eq!(x.mean(), None);
        x.degree_sums = Some(vec![0, 6]);
        assert_eq!(x.mean(), Some(1.5));
    }
}
