//! A Hydra config: the script's `@hydra.main(config_path=..., config_name=...)`
//! function gets the YAML file `config_path/config_name.yaml` (beside the
//! script), its `defaults:` list merged (`- model: sage_model` reads
//! `config_path/model/sage_model.yaml` under `model`; `_self_` and
//! `override hydra/...` entries change nothing the plan needs), and the
//! launch line's overrides applied (`data.batch_size=512`, `+key=value`,
//! `++key=value`). Values keep their file's lines (eval_names.rs traces a
//! key to its line; a group's keys to the group's file).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::eval::Eval;
use super::py::{Found, Value, call_args};
use crate::error::{Error, Result};

/// The config a Hydra script runs with.
pub struct Hydra {
    /// The merged config.
    pub config: Found,
    /// (label, text) of every file read.
    pub files: Vec<(String, String)>,
    /// Top-level key → the label of the group file merged under it.
    pub groups: HashMap<String, String>,
}

/// The Hydra config of the script `ev` reads, if it has a `@hydra.main`.
pub fn config(ev: &Eval, argv: &[String]) -> Result<Option<Hydra>> {
    let src = ev.main();
    let Some(deco) = ev.project.indexes[0].calls.iter().copied().find(|c| {
        ev.text(*c).starts_with("hydra.main")
            && ev.parent(*c).is_some_and(|p| p.kind() == "decorator")
    }) else {
        return Ok(None);
    };
    let a = call_args(src, deco);
    let get = |k: &str, pos: usize| -> Option<String> {
        let n = a
            .keywords
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| *v)
            .or(a.positional.get(pos).copied())?;
        match ev.eval(n)?.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    };
    let dir = src
        .path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let cdir = dir.join(get("config_path", 0).unwrap_or_default());
    let Some(name) = get("config_name", 1) else {
        return Ok(None);
    };
    let mut files = Vec::new();
    let mut groups = HashMap::new();
    let mut merged: Vec<(String, Value)> = Vec::new();
    let primary = cdir.join(yaml_name(&name));
    let (main_label, main) = if primary.is_file() {
        read(&cdir, &name, &mut files)?
    } else {
        // A primary config registered in Hydra's ConfigStore (Python), not
        // a file: the groups the launch line chooses are still read below.
        let label = format!(
            "{} (not there: the primary config {} names is not a file)",
            yaml_name(&name),
            ev.at(deco)
        );
        // Kept as an empty file, so that the chosen groups' values are
        // named at their own files' lines.
        files.push((label.clone(), String::new()));
        (label, Value::Dict(Vec::new()))
    };
    let defaults = main.get("defaults").cloned();
    if let Some(Value::List(items)) = defaults {
        for item in items {
            let Value::Dict(entry) = item else { continue };
            for (group, choice) in entry {
                let Value::Str(choice) = choice else { continue };
                if group.starts_with("override") || group.contains('/') {
                    continue;
                }
                let (label, v) = read(&cdir.join(&group), &choice, &mut files)?;
                groups.insert(group.clone(), label);
                merged.push((group, v));
            }
        }
    }
    if let Value::Dict(own) = main {
        for (k, v) in own {
            if k != "defaults" {
                merged.retain(|(m, _)| *m != k);
                merged.push((k, v));
            }
        }
    }
    // `loader=big` on the launch line chooses conf/loader/big.yaml for
    // the group, in place of its default: the file, not the word.
    let mut overrides = Vec::new();
    for w in argv {
        let Some((group, choice)) = group_choice(&cdir, w) else {
            overrides.push(w);
            continue;
        };
        let (label, v) = read(&cdir.join(group), choice, &mut files)?;
        groups.insert(group.to_string(), label);
        merged.retain(|(m, _)| m != group);
        merged.push((group.to_string(), v));
    }
    let mut config = Value::Dict(merged);
    for w in overrides {
        let w = w.trim_start_matches('+');
        if let Some((path, value)) = w.split_once('=')
            && !path.starts_with('-')
            && path
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            let v: serde_json::Value =
                crate::yaml::from_str(value).unwrap_or(serde_json::Value::String(value.into()));
            set(
                &mut config,
                &path.split('.').collect::<Vec<_>>(),
                Value::from_yaml(&v),
            );
        }
    }
    Ok(Some(Hydra {
        config: Found::at(config, main_label),
        files,
        groups,
    }))
}

/// `group=choice` where `choice` is a file of the config group's directory.
fn group_choice<'w>(cdir: &Path, w: &'w str) -> Option<(&'w str, &'w str)> {
    let (group, choice) = w.split_once('=')?;
    let plain = !group.is_empty()
        && group
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (plain && !group.starts_with('-') && cdir.join(group).join(yaml_name(choice)).is_file())
        .then_some((group, choice))
}

/// `name` as Hydra looks for it: `name.yaml` unless it has its suffix.
fn yaml_name(name: &str) -> String {
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        name.to_string()
    } else {
        format!("{name}.yaml")
    }
}

/// `dir/name.yaml` as a value; its (label, text) kept.
fn read(dir: &Path, name: &str, files: &mut Vec<(String, String)>) -> Result<(String, Value)> {
    let path = dir.join(yaml_name(name));
    let text = crate::input::read_text(&path, "a Hydra config", false)?;
    crate::spec::check_yaml_depth(&text, &path.display().to_string())?;
    let v: serde_json::Value = crate::yaml::config_from_str(&text).map_err(|e| {
        Error::bad(format!(
            "{}: {}",
            path.display(),
            e.to_string().replace('\n', " ")
        ))
    })?;
    let label = path
        .file_name()
        .map_or_else(|| yaml_name(name), |n| n.to_string_lossy().to_string());
    files.push((label.clone(), text));
    Ok((label, Value::from_yaml(&v)))
}

/// Sets `path` in `v` (a dict), creating dicts on the way.
fn set(v: &mut Value, path: &[&str], value: Value) {
    let Value::Dict(entries) = v else { return };
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let pos = entries.iter().position(|(k, _)| k == first);
    if rest.is_empty() {
        match pos {
            Some(i) => entries[i].1 = value,
            None => entries.push((first.to_string(), value)),
        }
        return;
    }
    let i = pos.unwrap_or_else(|| {
        entries.push((first.to_string(), Value::Dict(vec![])));
        entries.len() - 1
    });
    set(&mut entries[i].1, rest, value);
}
