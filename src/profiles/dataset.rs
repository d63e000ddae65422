//! The dataset description the estimators need: sizes, dtypes, splits and
//! the shape of the in-degree distribution that drives neighbor sampling.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub use super::degree_histogram::DegreeHistogram;

/// Element types of feature and label tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// 2 bytes.
    Float16,
    /// 2 bytes.
    Bfloat16,
    /// 4 bytes.
    Float32,
    /// 8 bytes.
    Float64,
    /// 1 byte.
    Int8,
    /// 4 bytes.
    Int32,
    /// 8 bytes.
    Int64,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            Dtype::Int8 => 1,
            Dtype::Float16 | Dtype::Bfloat16 => 2,
            Dtype::Float32 | Dtype::Int32 => 4,
            Dtype::Float64 | Dtype::Int64 => 8,
        }
    }
}

/// Node counts of the train/valid/test splits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Splits {
    /// Training seed nodes.
    pub train: u64,
    /// Validation nodes.
    pub valid: u64,
    /// Test nodes.
    pub test: u64,
}

/// Shape of the in-degree distribution (neighbors a sampler can draw per node):
/// a fraction of nodes with none, the rest a power law truncated at `max`,
/// scaled so the mean matches edges/nodes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DegreeShape {
    /// Power-law exponent of the tail (P(D > x) ~ x^(1-exponent)); must be > 1.
    pub exponent: f64,
    /// Fraction of nodes with in-degree zero.
    #[serde(default)]
    pub zero_fraction: f64,
    /// Largest in-degree in the graph.
    pub max: u64,
}

/// A dataset: an embedded profile or a mapping in a job spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetProfile {
    /// Profile name.
    #[serde(default = "custom_name")]
    pub name: String,
    /// Other names users type.
    #[serde(default, skip_serializing)]
    pub aliases: Vec<String>,
    /// One line for people.
    #[serde(default)]
    pub description: String,
    /// Number of nodes.
    pub nodes: u64,
    /// Number of edges as stored in edge_index.
    pub edges: u64,
    /// Whether edge_index already holds both directions of every edge.
    #[serde(default)]
    pub undirected: bool,
    /// Feature dimension.
    pub features: u64,
    /// Nodes that carry features (heterogeneous graphs); defaults to all nodes.
    #[serde(default)]
    pub feature_nodes: Option<u64>,
    /// Feature element type.
    #[serde(default = "float32")]
    pub feature_dtype: Dtype,
    /// Number of classes.
    #[serde(default)]
    pub classes: u64,
    /// Label element type.
    #[serde(default = "int64")]
    pub label_dtype: Dtype,
    /// Split sizes; defaults to all nodes in train.
    #[serde(default)]
    pub splits: Option<Splits>,
    /// In-degree shape; defaults to exponent 2.5, no isolated nodes, max 1000x the mean.
    #[serde(default)]
    pub degree: Option<DegreeShape>,
    /// The measured in-degree histogram; wins over `degree` when given.
    #[serde(default)]
    pub degree_histogram: Option<DegreeHistogram>,
    /// Edges after `to_undirected` (coalescing drops duplicate and reciprocal
    /// edges); defaults to twice `edges`, the most it can be.
    #[serde(default)]
    pub undirected_edges: Option<u64>,
    /// A heterogeneous graph's edge types as stored (what `data.metadata()`
    /// lists: a `to_hetero` model keeps weights for each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relations: Option<u32>,
    /// Edge types after `T.ToUndirected()` (a reverse type for each type
    /// between two different node types); defaults to `relations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relations_undirected: Option<u32>,
}

fn custom_name() -> String {
    "custom".into()
}
fn float32() -> Dtype {
    Dtype::Float32
}
fn int64() -> Dtype {
    Dtype::Int64
}

impl DatasetProfile {
    /// Splits, or every node in train when none were given.
    pub fn splits(&self) -> Splits {
        self.splits.unwrap_or(Splits {
            train: self.nodes,
            valid: 0,
            test: 0,
        })
    }

    /// Degree shape, or a generic power law when none was given.
    pub fn degree(&self) -> DegreeShape {
        self.degree.unwrap_or(DegreeShape {
            exponent: 2.5,
            zero_fraction: 0.0,
            max: ((self.edges as f64 / self.nodes.max(1) as f64) * 1000.0).max(1.0) as u64,
        })
    }

    /// Rejects impossible datasets with a message naming the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::bad(format!("dataset '{}': {m}", self.name)));
        if self.nodes == 0 {
            return bad("nodes must be positive".into());
        }
        if self.nodes > 1 << 40 || self.edges > 1 << 44 || self.features > 1 << 20 {
            return bad("nodes, edges or features are absurdly large".into());
        }
        if self.feature_nodes.is_some_and(|f| f > self.nodes) {
            return bad("feature_nodes exceeds nodes".into());
        }
        let s = self.splits();
        if s.train + s.valid + s.test > self.nodes {
            return bad(format!(
                "splits ({} nodes) exceed the {} nodes",
                s.train + s.valid + s.test,
                self.nodes
            ));
        }
        if s.train == 0 {
            return bad("the train split is empty".into());
        }
        let d = self.degree();
        if !(d.exponent > 1.0 && d.exponent < 10.0) {
            return bad(format!(
                "degree exponent {} must be between 1 and 10",
                d.exponent
            ));
        }
        if !(0.0..1.0).contains(&d.zero_fraction) {
            return bad("degree zero_fraction must be in [0, 1)".into());
        }
        if let Some(h) = &self.degree_histogram {
            h.validate(self.nodes, self.edges)
                .map_err(|m| Error::bad(format!("dataset '{}': {m}", self.name)))?;
        }
        if let Some(u) = self.undirected_edges
            && (u == 0 || u > 2 * self.edges)
        {
            return bad(format!(
                "undirected_edges {u} must be in 1..=2·edges ({})",
                2 * self.edges
            ));
        }
        Ok(())
    }
}

/// Every embedded dataset profile.
pub fn all_datasets() -> Result<Vec<DatasetProfile>> {
    super::EMBEDDED
        .iter()
        .filter(|(k, _, _)| *k == "datasets")
        .map(|(k, n, t)| super::parse_embedded(k, n, t))
        .collect()
}

/// Names of the embedded dataset profiles.
pub fn dataset_names() -> impl Iterator<Item = &'static str> {
    super::names("datasets")
}

/// The embedded dataset called `name` (or with that alias).
pub fn dataset(name: &str) -> Result<DatasetProfile> {
    let wanted = super::normalize(name);
    let all = all_datasets()?;
    if let Some(d) = all
        .iter()
        .find(|d| d.name == wanted || d.aliases.iter().any(|a| super::normalize(a) == wanted))
    {
        return Ok(d.clone());
    }
    Err(super::unknown(
        "dataset",
        name,
        all.iter().map(|d| d.name.as_str()).collect(),
    ))
}
