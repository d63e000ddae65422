//! Embedded profiles: datasets, GPUs and example job specs, compiled into the
//! binary from `profiles/` by build.rs, looked up by name or alias with
//! nearest-name suggestions when a name is unknown.

pub mod cli;
mod dataset;
mod degree_histogram;
mod gpu;

pub use dataset::{
    DatasetProfile, DegreeHistogram, DegreeShape, Dtype, Splits, all_datasets, dataset,
    dataset_names,
};
pub use gpu::{GpuProfile, all_gpus, resolve_gpu};

use crate::error::{Error, Result};

include!(concat!(env!("OUT_DIR"), "/profiles.rs"));

/// The kinds of embedded profile, as the folder names under `profiles/`.
pub const KINDS: [&str; 4] = ["datasets", "gpus", "jobs", "calibrations"];

/// Names of every embedded profile of `kind`.
pub fn names(kind: &str) -> impl Iterator<Item = &'static str> + '_ {
    EMBEDDED
        .iter()
        .filter(move |(k, _, _)| *k == kind)
        .map(|(_, n, _)| *n)
}

/// The YAML text of the embedded profile `kind`/`name`, exact name only.
pub fn text(kind: &str, name: &str) -> Option<&'static str> {
    EMBEDDED
        .iter()
        .find(|(k, n, _)| *k == kind && *n == name)
        .map(|(_, _, t)| *t)
}

/// Lower-cases and unifies separators so `ogbn_papers100M` finds `ogbn-papers100m`.
pub fn normalize(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(['_', ' '], "-")
}

/// Up to three known names closest to `wanted`, for "did you mean" lines.
pub fn nearest<'a>(wanted: &str, known: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let wanted = normalize(wanted);
    let mut scored: Vec<(f64, &str)> = known
        .map(|k| (strsim::jaro_winkler(&wanted, &normalize(k)), k))
        .filter(|(s, _)| *s > 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(3).map(|(_, k)| k).collect()
}

/// The error for an unknown profile name, with suggestions.
pub fn unknown(kind_label: &str, wanted: &str, known: Vec<&str>) -> Error {
    let near = nearest(wanted, known.iter().copied());
    let hint = if near.is_empty() {
        format!("known: {}", known.join(", "))
    } else {
        format!("did you mean {}?", near.join(", "))
    };
    Error::bad(format!(
        "unknown {kind_label} '{wanted}': {hint} (see `headroom profiles`)"
    ))
}

/// Parses one embedded profile; a broken embedded file is a headroom bug.
fn parse_embedded<T: serde::de::DeserializeOwned>(kind: &str, name: &str, text: &str) -> Result<T> {
    crate::yaml::from_str(text)
        .map_err(|e| Error::Internal(format!("embedded profile {kind}/{name} is invalid: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_profile_parses() {
        for (kind, name, text) in EMBEDDED {
            match *kind {
                "datasets" => {
                    let d: DatasetProfile = parse_embedded(kind, name, text).unwrap();
                    d.validate().unwrap();
                    assert_eq!(&d.name, name, "file name and name: field differ");
                }
                "gpus" => {
                    let g: GpuProfile = parse_embedded(kind, name, text).unwrap();
                    assert!(g.memory_mib > 1024, "{name}: implausible memory");
                }
                _ => {}
            }
        }
    }

    #[test]
    fn suggestions_find_typos() {
        let known = ["ogbn-papers100m", "ogbn-products", "reddit"];
        assert_eq!(
            nearest("ogbn-paper100m", known.into_iter())[0],
            "ogbn-papers100m"
        );
        assert!(nearest("zzzz", known.into_iter()).is_empty());
    }
}
