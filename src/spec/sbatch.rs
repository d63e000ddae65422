//! Reading an sbatch script as a job spec: `#SBATCH --mem/--gres/--cpus-per-task/
//! --ntasks-per-node`, shell variables, and the arguments the script passes to
//! python (with `$VAR` substituted). A variable the python line contradicts
//! is reported: seeds/000's "BATCH_SIZE=512 but --batch_size 1024" mistake.

use std::collections::HashMap;

use super::types::{DatasetRef, JobSpec};
use crate::error::{Error, Result};
use crate::limits::{self, MAX_VARIABLE_BYTES};
use crate::output::shown;

/// Parses `text`; returns the spec and warnings for the user.
pub fn parse(text: &str, source: &str) -> Result<(JobSpec, Vec<String>)> {
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut directives: Vec<(String, String)> = Vec::new();
    let mut args: Vec<(String, String)> = Vec::new();
    let mut warnings = Vec::new();
    // Shell continuation lines (`\` at the end) belong to one command.
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    for raw in joined.lines() {
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("#SBATCH") {
            let rest = rest.split(" #").next().unwrap_or(rest);
            if let Some((k, v)) = split_option(rest.trim()) {
                directives.push((k, v));
            }
        } else if line.starts_with('#') || line.is_empty() {
        } else if let Some((name, value)) = assignment(line) {
            let value = substitute(&value, &vars).map_err(|v| too_long(source, &name, &v))?;
            vars.insert(name, value);
        } else if is_python_launch(line) {
            let line =
                substitute(line, &vars).map_err(|v| too_long(source, "the python line", &v))?;
            args.extend(python_args(&line));
        }
    }
    let dataset = find_arg(&args, &["dataset", "dataset_name", "data", "name"])
        .or_else(|| find_var(&vars, &["DATASET", "DATASET_NAME", "DATA"]))
        .ok_or_else(|| {
            Error::bad(format!(
                "{source}: the script names no dataset (pass it to python as --dataset, or set DATASET=)"
            ))
        })?;
    let mut spec = JobSpec::for_dataset(&dataset);
    spec.name = Some(source.to_string());
    spec.dataset = DatasetRef::Name(dataset);
    let (request, notes) = super::slurm_request::read(&directives, source)?;
    warnings.extend(notes);
    spec.budget.host = request.host;
    spec.cpus = request.cpus_per_task;
    if let Some(r) = request.ranks_per_node {
        spec.ranks_per_node = r;
    }
    for (key, value) in &directives {
        if let "gres" | "gpus" | "gpus-per-node" | "gpus-per-task" = key.as_str()
            && let Some(gpu) = gpu_type(value)
        {
            // Site and MIG names map to profiles as in script/gres.rs.
            use crate::script::gres::{GpuName, profile_for};
            spec.budget.gpu = Some(match profile_for(&gpu) {
                GpuName::Exact(p) => p,
                GpuName::Assumed(p, why) => {
                    warnings.push(why);
                    p
                }
                GpuName::Unknown => gpu,
            });
        }
    }
    let num = |names: &[&str]| find_arg(&args, names);
    if let Some(v) = num(&["batch_size", "batch-size", "bs"]) {
        spec.loader.batch_size = parse_int(&v, "batch size", source)?;
    }
    if let Some(v) = num(&[
        "num_neighbors",
        "fanout",
        "fanouts",
        "neighbors",
        "num_neighbours",
    ]) {
        spec.loader.fanout = super::parse_fanout(&v)
            .map_err(|e| Error::bad(format!("{}: {}", shown(source), shown(&e))))?;
    }
    if let Some(v) = num(&["num_workers", "workers"]) {
        spec.loader.num_workers = parse_int(&v, "num_workers", source)?;
    }
    if let Some(v) = num(&["hidden", "hidden_channels", "hidden_dim"]) {
        spec.model.hidden = parse_int(&v, "hidden", source)?;
    }
    if let Some(v) = num(&["num_layers", "layers"]) {
        spec.model.layers = parse_int(&v, "layers", source)?;
    }
    if let Some(v) = num(&["epochs", "num_epochs"]) {
        spec.epochs = parse_int(&v, "epochs", source)?;
    }
    if let Some(v) = num(&["persistent_workers"]) {
        spec.loader.persistent_workers =
            matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "");
    }
    warnings.extend(contradictions(&vars, &args));
    Ok((spec, warnings))
}

/// `--mem=256G`, `--mem 256G`, `-c 8` → (key, value).
fn split_option(text: &str) -> Option<(String, String)> {
    let text = text.trim_start_matches('-');
    let (k, v) = text
        .split_once('=')
        .or_else(|| text.split_once(char::is_whitespace))?;
    Some((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
}

/// `NAME=value` / `export NAME="value"` → (NAME, value).
fn assignment(line: &str) -> Option<(String, String)> {
    let line = line.strip_prefix("export ").unwrap_or(line);
    let (name, value) = line.split_once('=')?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let value = value.split(" #").next().unwrap_or(value).trim();
    Some((
        name.to_string(),
        value.trim_matches(|c| c == '"' || c == '\'').to_string(),
    ))
}

fn is_python_launch(line: &str) -> bool {
    line.split_whitespace().any(|w| {
        w.starts_with("python")
            || w == "torchrun"
            || w.ends_with("/python")
            || w.ends_with("/python3")
    })
}

/// The error for a substitution past [`MAX_VARIABLE_BYTES`]: the value is
/// shown cut, never whole (it could be a quarter of a GiB).
fn too_long(source: &str, name: &str, value: &str) -> Error {
    limits::exceeded(
        &format!("{}: {} = {}", shown(source), shown(name), shown(value)),
        "the longest variable",
        format!("{MAX_VARIABLE_BYTES} bytes after substituting variables"),
    )
}

/// `$VAR` and `${VAR}` replaced by earlier assignments; the partial text as
/// the error once it grows past [`MAX_VARIABLE_BYTES`] (`A=$A$A` on 40
/// lines would make 2^40 bytes).
fn substitute(text: &str, vars: &HashMap<String, String>) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let (name, tail) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], &inner[end + 1..]),
                None => ("", after),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        match vars.get(name) {
            Some(v) if !name.is_empty() => out.push_str(v),
            _ => {
                out.push('$');
                out.push_str(&after[..after.len() - tail.len()]);
            }
        }
        rest = tail;
        if out.len() > MAX_VARIABLE_BYTES {
            return Err(out);
        }
    }
    out.push_str(rest);
    if out.len() > MAX_VARIABLE_BYTES {
        return Err(out);
    }
    Ok(out)
}

/// `--batch_size 512 --num_neighbors 10 5 --flag` → [(batch_size, 512), (num_neighbors, "10 5"), (flag, "")].
fn python_args(line: &str) -> Vec<(String, String)> {
    // Words as the shell splits them (quotes kept together, then removed);
    // an unbalanced quote falls back to whitespace with quotes trimmed.
    let words: Vec<String> = shlex::split(line).unwrap_or_else(|| {
        line.split_whitespace()
            .map(|w| {
                w.trim_matches(|c| c == '"' || c == '\'' || c == '\\')
                    .to_string()
            })
            .collect()
    });
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
            last.1.push_str(&word);
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

fn find_var(vars: &HashMap<String, String>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| vars.get(*n).cloned())
}

fn parse_int<T: std::str::FromStr>(text: &str, what: &str, source: &str) -> Result<T> {
    text.trim().parse().map_err(|_| {
        Error::bad(format!(
            "{}: {what} '{}' is not a whole number",
            shown(source),
            shown(text)
        ))
    })
}

/// `gpu:a40:1` → a40; `gpu:1` → none; `a100:2` → a100.
fn gpu_type(value: &str) -> Option<String> {
    let parts: Vec<&str> = value.split(':').collect();
    let candidate = match parts.as_slice() {
        ["gpu", t, _] | ["gpu", t] | [t, _] => *t,
        _ => return None,
    };
    (!candidate.chars().all(|c| c.is_ascii_digit())).then(|| candidate.to_string())
}

/// Variables like BATCH_SIZE=512 whose python argument says something else.
fn contradictions(vars: &HashMap<String, String>, args: &[(String, String)]) -> Vec<String> {
    let pairs = [
        ("BATCH_SIZE", "batch_size"),
        ("NUM_NEIGHBORS", "num_neighbors"),
        ("NUM_WORKERS", "num_workers"),
        ("HIDDEN_DIM", "hidden_dim"),
    ];
    let mut out = Vec::new();
    for (var, arg) in pairs {
        if let (Some(v), Some(a)) = (vars.get(var), find_arg(args, &[arg]))
            && v.split_whitespace().ne(a.split_whitespace())
        {
            out.push(format!(
                "{var}={v} in the script, but python gets --{arg} {a}: headroom plans what python gets"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    const SCRIPT: &str = "#!/bin/bash\n#SBATCH --mem=256G\n#SBATCH --cpus-per-task=8\n#SBATCH --gres=gpu:a40:1\n\
        BATCH_SIZE=512\nNUM_NEIGHBORS=\"10 5\"\nNUM_WORKERS=0\n\
        srun python Train_OGBN_HPC_MiniBatch.py --dataset ogbn-papers100M --batch_size 1024 \\\n  --num_neighbors $NUM_NEIGHBORS --num_workers ${NUM_WORKERS}\n";

    #[test]
    fn reads_directives_variables_and_python_arguments() {
        let (spec, warnings) = parse(SCRIPT, "train.sbatch").unwrap();
        assert_eq!(spec.budget.host, Some(Bytes(256 << 30)));
        assert_eq!(spec.budget.gpu.as_deref(), Some("a40"));
        assert_eq!(spec.cpus, Some(8));
        assert_eq!(spec.loader.batch_size, 1024, "python's argument wins");
        assert_eq!(spec.loader.fanout, vec![10, 5]);
        assert_eq!(spec.loader.num_workers, 0);
        assert!(matches!(&spec.dataset, DatasetRef::Name(n) if n == "ogbn-papers100M"));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("BATCH_SIZE=512"));
    }

    #[test]
    fn mem_as_sbatch_reads_it() {
        // Slurm's GB is GiB (str_to_mbytes); 0 is the whole node, kept as 0
        // for the resolver to refuse or replace with --node-mem.
        for (mem, bytes) in [("256GB", 256u64 << 30), ("0", 0), ("512K", 1 << 20)] {
            let text = format!("#SBATCH --mem={mem}\npython t.py --dataset reddit\n");
            let (spec, _) = parse(&text, "s").unwrap();
            assert_eq!(spec.budget.host, Some(Bytes(bytes)), "{mem}");
        }
        let err = parse("#SBATCH --mem=1.5G\npython t.py --dataset reddit\n", "s").unwrap_err();
        assert!(err.to_string().contains("sbatch accepts"), "{err}");
    }

    #[test]
    fn bare_mem_is_mebibytes_and_plain_gres_has_no_type() {
        let text = "#SBATCH --mem 4000\n#SBATCH --gres=gpu:2\npython t.py --dataset reddit\n";
        let (spec, _) = parse(text, "s").unwrap();
        assert_eq!(spec.budget.host, Some(Bytes(4000 << 20)));
        assert_eq!(spec.budget.gpu, None);
    }

    #[test]
    fn an_empty_fanout_hop_on_the_python_line_is_refused() {
        let text = "python t.py --dataset reddit --num_neighbors 15,,10\n";
        let err = parse(text, "s").unwrap_err().to_string();
        assert!(err.contains("hop 2 is empty"), "{err}");
    }

    #[test]
    fn quoted_words_stay_whole() {
        let args = python_args(
            "python t.py --dataset 'ogbn-products' --num_neighbors \"10 5\" --tag 'a b'",
        );
        assert_eq!(args[0], ("dataset".into(), "ogbn-products".into()));
        assert_eq!(args[1], ("num_neighbors".into(), "10 5".into()));
        assert_eq!(args[2], ("tag".into(), "a b".into()));
    }

    #[test]
    fn a_script_without_dataset_is_refused() {
        let err = parse("#SBATCH --mem=1G\npython t.py\n", "s").unwrap_err();
        assert!(err.to_string().contains("names no dataset"));
    }

    #[test]
    fn substitution_leaves_unknown_variables() {
        let mut vars = HashMap::new();
        vars.insert("A".to_string(), "1".to_string());
        assert_eq!(
            substitute("x $A ${A} $B ${C", &vars).unwrap(),
            "x 1 1 $B ${C"
        );
    }

    #[test]
    fn doubling_a_variable_stops_at_the_limit_with_a_short_message() {
        // The script of the issue: 40 doublings would be 2^40 bytes.
        let mut text = "#!/bin/bash\nA=xxxxxxxx\n".to_string();
        text.push_str(&"A=$A$A\n".repeat(40));
        text.push_str("python t.py --dataset $A\n");
        let err = parse(&text, "bomb.sbatch").unwrap_err().to_string();
        assert!(err.contains("longest variable"), "{err}");
        assert!(err.len() < 600, "the message is {} bytes", err.len());
    }
}
