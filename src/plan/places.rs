//! Where each field of a job was read, as GitHub places annotations: the
//! script reader's `file:line` ledger (or, for an sbatch script whose
//! training script is not there, its own `#SBATCH` and launch lines), with
//! each file's label turned back into a path relative to the repository.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::output::Place;
use crate::script::ScriptReading;

/// Where each job-spec field was read (`budget.host` → `run.sbatch:3`), in
/// the places GitHub draws annotations on. Empty for a profile or a YAML
/// spec: their annotations carry no place.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// By job-spec field.
    pub fields: HashMap<String, Place>,
    /// The training loader's call, where a loader setting with no line of
    /// its own belongs.
    pub loader: Option<Place>,
    /// Fields the command line gave: no line of a file sets them.
    pub overridden: Vec<String>,
}

impl Places {
    /// The places of a script's ledger: each field with the `file:line`
    /// places that decided it (the first one counts: `train.sbatch:12,
    /// train.py:66` is set on the launch line), the training loader's
    /// call, and `file_of` to turn a label (`train.py`) into its path.
    pub fn from_ledger<'a>(
        fields: impl IntoIterator<Item = (&'a str, &'a str)>,
        loader_at: Option<&str>,
        file_of: impl Fn(&str) -> Option<String>,
    ) -> Places {
        let place = |from: &str| {
            let first = from.split([',', ' ']).next()?;
            let (label, line) = first.rsplit_once(':')?;
            Some(Place {
                file: file_of(label)?,
                line: line.parse().ok()?,
            })
        };
        Places {
            fields: fields
                .into_iter()
                .filter_map(|(field, from)| Some((field.to_string(), place(from)?)))
                .collect(),
            loader: loader_at.and_then(place),
            overridden: Vec::new(),
        }
    }

    /// These places less the fields a command-line flag set.
    pub fn overridden_by(mut self, fields: &[&str]) -> Places {
        for f in fields {
            self.fields.remove(*f);
            self.overridden.push(f.to_string());
        }
        self
    }

    /// The place of a field, None when no line of a file set it.
    pub fn of_field(&self, field: &str) -> Option<Place> {
        self.fields.get(field).cloned()
    }

    /// The place of a loader setting: its own line, else the loader's call.
    pub fn of_setting(&self, setting: &str) -> Option<Place> {
        let field = format!("loader.{setting}");
        // An environment variable, or a flag: no line of the job sets it.
        if setting == "expandable_segments" || self.overridden.contains(&field) {
            return None;
        }
        self.fields.get(&field).or(self.loader.as_ref()).cloned()
    }
}

/// The places of the job `job` (the JOB argument) as read: from the
/// reader's ledger when a script was followed; from the sbatch script's own
/// lines when its training script is not there; none for a profile or spec.
pub fn places_of(job: &str, reading: Option<&ScriptReading>) -> Places {
    let given = PathBuf::from(job);
    match reading {
        Some(r) => {
            let fields = r
                .inferred
                .iter()
                .map(|i| (i.field.as_str(), i.from.as_str()));
            let loader = r
                .loaders
                .iter()
                .find(|l| l.split == crate::script::loaders::Split::Train)
                .or(r.loaders.first())
                .map(|l| l.at.as_str());
            let read = vec![given, PathBuf::from(&r.script)];
            Places::from_ledger(fields, loader, file_resolver(read))
        }
        None => sbatch_places(&given).unwrap_or_default(),
    }
}

/// An sbatch script's own places: its memory and GPU directives and the
/// launch line, which carries the settings python gets.
fn sbatch_places(path: &Path) -> Option<Places> {
    let text = crate::input::read_text(path, "an sbatch script", false).ok()?;
    let launch = crate::script::launch::follow(&text, path)?;
    let mut fields: Vec<(&str, &str)> = Vec::new();
    for (key, _, at) in &launch.directives {
        let field = match key.as_str() {
            "mem" | "mem-per-cpu" | "mem-per-gpu" => "budget.host",
            "gres" | "gpus-per-node" | "gpus" | "G" => "budget.gpu",
            _ => continue,
        };
        fields.push((field, at));
    }
    for field in ["loader.batch_size", "loader.fanout", "loader.num_workers"] {
        fields.push((field, &launch.at));
    }
    Some(Places::from_ledger(
        fields,
        None,
        file_resolver(vec![path.to_path_buf()]),
    ))
}

/// Turns the labels of `file:line` places (a file's name) back into paths
/// GitHub can place: the files read (the sbatch script as given, the
/// training script), or a file of that name beside them (a config file),
/// relative to the current directory when under it (GitHub's paths are
/// relative to the repository's root, where a CI job runs).
pub fn file_resolver(read: Vec<std::path::PathBuf>) -> impl Fn(&str) -> Option<String> {
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| std::fs::canonicalize(d).ok());
    move |label: &str| {
        let named = read
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == label))
            .cloned();
        let beside = || {
            read.iter()
                .filter_map(|p| Some(p.parent()?.join(label)))
                .find(|p| p.is_file())
        };
        let path = named.or_else(beside)?;
        let absolute = std::fs::canonicalize(&path).unwrap_or(path.clone());
        let shown = match cwd.as_deref().and_then(|c| absolute.strip_prefix(c).ok()) {
            Some(rel) => rel.to_path_buf(),
            None => path,
        };
        Some(shown.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_place_of_a_field_is_where_it_is_set() {
        let p = Places::from_ledger(
            [
                ("loader.fanout", "train.sbatch:12, train.py:66"),
                (
                    "loader.is_sorted",
                    "train.py:33 (not given: the library default)",
                ),
                ("load.to_undirected", "no to_undirected / ToUndirected call"),
                ("budget.gpu", "train.sbatch:5 (--gpus-per-node=h100:4)"),
            ],
            Some("train.py:33"),
            |label| Some(format!("jobs/{label}")),
        );
        let at = |f: &str| p.fields.get(f).map(|p| (p.file.as_str(), p.line));
        assert_eq!(at("loader.fanout"), Some(("jobs/train.sbatch", 12)));
        assert_eq!(at("loader.is_sorted"), Some(("jobs/train.py", 33)));
        assert_eq!(at("budget.gpu"), Some(("jobs/train.sbatch", 5)));
        assert_eq!(at("load.to_undirected"), None);
        // A setting with no line of its own belongs to the loader's call.
        assert_eq!(p.of_setting("shared_sampler").map(|p| p.line), Some(33));
        assert_eq!(p.of_setting("expandable_segments"), None);
        // A flag wins over the script: its field has no line.
        let p = p.overridden_by(&["loader.fanout", "loader.shared_sampler"]);
        assert_eq!(p.of_setting("fanout"), None);
        assert_eq!(p.of_setting("shared_sampler"), None);
        assert_eq!(p.of_setting("is_sorted").map(|p| p.line), Some(33));
    }
}
