//! A launch file read by its own words, when the Python program it runs is
//! not there to read: the python arguments by their usual names
//! (`--dataset`, `--batch_size`, `--num_neighbors`...), else the variables
//! the file sets (`DATASET=`), each traced to its line; a variable the
//! python line contradicts is reported (seeds/000's "BATCH_SIZE=512 but
//! --batch_size 1024" mistake). Fields it does not say are listed as
//! assumed, the dataset excepted (there is no default dataset).

use std::collections::HashMap;

use super::infer::Ledger;
use super::py::{Found, Value};
use crate::error::{Error, Result};
use crate::output::shown;
use crate::spec::{DatasetRef, JobSpec};

/// The spec the words of `argv` (at `at`) and `vars` say; `source` names the file.
pub fn read(
    argv: &[String],
    at: &str,
    vars: &HashMap<String, Found>,
    source: &str,
) -> Result<Ledger> {
    let args = python_args(argv);
    let mut l = Ledger {
        spec: JobSpec::for_dataset("unknown"),
        inferred: vec![],
        assumed: vec![],
        missing: vec![],
        warnings: vec![],
    };
    let find = |names: &[&str]| -> Option<(String, String)> {
        if let Some(v) = find_arg(&args, names) {
            return Some((v, at.to_string()));
        }
        names.iter().find_map(|n| {
            let f = vars.get(&n.to_ascii_uppercase())?;
            match &f.value {
                Value::Str(s) => Some((s.clone(), f.origin())),
                _ => None,
            }
        })
    };
    match find(&["dataset", "dataset_name", "data", "name"]) {
        Some((d, from)) => {
            l.spec.dataset = DatasetRef::Name(d.clone());
            l.spec.name = Some(source.to_string());
            l.read("dataset", d.into(), from);
        }
        None => l.missing.push((
            "dataset".into(),
            "the launch line passes no --dataset and sets no DATASET=".into(),
        )),
    }
    let bad = |what: &str, v: &str| {
        Error::bad(format!(
            "{}: {what} '{}' is not a whole number",
            shown(source),
            shown(v)
        ))
    };
    if let Some((v, from)) = find(&["batch_size", "batch-size", "bs"]) {
        l.spec.loader.batch_size = v.trim().parse().map_err(|_| bad("batch size", &v))?;
        l.read("loader.batch_size", l.spec.loader.batch_size.into(), from);
    }
    if let Some((v, from)) = find(&[
        "num_neighbors",
        "fanout",
        "fanouts",
        "neighbors",
        "num_neighbours",
    ]) {
        l.spec.loader.fanout = crate::spec::parse_fanout(&v)
            .map_err(|e| Error::bad(format!("{}: {}", shown(source), shown(&e))))?;
        l.read(
            "loader.fanout",
            serde_json::json!(l.spec.loader.fanout),
            from,
        );
    }
    if let Some((v, from)) = find(&["num_workers", "workers"]) {
        l.spec.loader.num_workers = v.trim().parse().map_err(|_| bad("num_workers", &v))?;
        l.read("loader.num_workers", l.spec.loader.num_workers.into(), from);
    }
    if let Some((v, from)) = find(&["hidden", "hidden_channels", "hidden_dim"]) {
        l.spec.model.hidden = v.trim().parse().map_err(|_| bad("hidden", &v))?;
        l.read("model.hidden", l.spec.model.hidden.into(), from);
    }
    if let Some((v, from)) = find(&["num_layers", "layers"]) {
        l.spec.model.layers = v.trim().parse().map_err(|_| bad("layers", &v))?;
        l.read("model.layers", l.spec.model.layers.into(), from);
    }
    if let Some((v, from)) = find(&["epochs", "num_epochs"]) {
        l.spec.epochs = v.trim().parse().map_err(|_| bad("epochs", &v))?;
        l.read("epochs", l.spec.epochs.into(), from);
    }
    if let Some((v, from)) = find(&["persistent_workers"]) {
        l.spec.loader.persistent_workers =
            matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "");
        l.read(
            "loader.persistent_workers",
            l.spec.loader.persistent_workers.into(),
            from,
        );
    }
    let said: Vec<String> = l.inferred.iter().map(|i| i.field.clone()).collect();
    let spec = serde_json::to_value(&l.spec).unwrap_or_default();
    for field in [
        "loader.batch_size",
        "loader.fanout",
        "loader.num_workers",
        "model.conv",
        "model.hidden",
        "model.layers",
        "epochs",
    ] {
        if !said.iter().any(|s| s == field) {
            let value = field
                .split('.')
                .try_fold(&spec, |v, k| v.get(k))
                .cloned()
                .unwrap_or_default();
            l.assume(
                field,
                value,
                format!("{at}: the launch line does not say it and its script is not read"),
            );
        }
    }
    l.warnings.extend(contradictions(vars, &args));
    Ok(l)
}

/// `--batch_size 512 --num_neighbors 10 5 --flag` → [(batch_size, 512), (num_neighbors, "10 5"), (flag, "")].
fn python_args(words: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for word in words {
        if let Some(opt) = word.strip_prefix("--") {
            match opt.split_once('=') {
                Some((k, v)) => out.push((k.to_string(), v.to_string())),
                None => out.push((opt.to_string(), String::new())),
            }
        } else if let Some(last) = out.last_mut() {
            if !last.1.is_empty() {
                last.1.push(' ');
            }
            last.1.push_str(word);
        }
    }
    out
}

fn norm(key: &str) -> String {
    key.to_ascii_lowercase().replace('-', "_")
}

fn find_arg(args: &[(String, String)], names: &[&str]) -> Option<String> {
    args.iter()
        .rev()
        .find(|(k, _)| names.iter().any(|n| norm(k) == norm(n)))
        .map(|(_, v)| v.clone())
}

/// Variables like BATCH_SIZE=512 whose python argument says something else.
fn contradictions(vars: &HashMap<String, Found>, args: &[(String, String)]) -> Vec<String> {
    let pairs = [
        ("BATCH_SIZE", "batch_size"),
        ("NUM_NEIGHBORS", "num_neighbors"),
        ("NUM_WORKERS", "num_workers"),
        ("HIDDEN_DIM", "hidden_dim"),
    ];
    let mut out = Vec::new();
    for (var, arg) in pairs {
        if let (Some(Value::Str(v)), Some(a)) =
            (vars.get(var).map(|f| &f.value), find_arg(args, &[arg]))
            && v.split_whitespace().ne(a.split_whitespace())
        {
            out.push(format!(
                "{var}={v} in the script, but python gets --{arg} {a}: headroom plans what python gets"
            ));
        }
    }
    out
}
