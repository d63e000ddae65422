//! One reading of a training script (and the sbatch script that launches
//! it): parse, compute argparse values with the launch's command line and
//! a `--config` file, find what matters, and fill a job spec with its
//! ledger. The sbatch directives add the budget (`--mem`, the GPU by name),
//! `--cpus-per-task` and the ranks the launcher starts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::eval::Eval;
use super::gres::{GpuName, parse_request, profile_for};
use super::index::Index;
use super::infer::{Assumed, Inferred, Ledger};
use super::launch::follow;
use super::py::{Found, Source, Value};
use crate::error::{Error, Result};
use crate::spec::JobSpec;
use crate::units::Bytes;

/// One loader as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LoaderView {
    /// `train.py:57`.
    pub at: String,
    /// The variable it is assigned to.
    pub variable: Option<String>,
    /// The nodes it iterates.
    pub split: super::loaders::Split,
    /// resident or on_demand.
    pub placement: crate::spec::EvalLoaders,
    /// The arguments whose values are known.
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Arguments the reader could not compute.
    pub unknown: Vec<String>,
}

/// Everything the reader learned.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptReading {
    /// The job, in the job-spec schema.
    pub job: JobSpec,
    /// The training script read.
    pub script: String,
    /// The launch line followed, when read from an sbatch script.
    pub launch: Option<String>,
    /// The loaders.
    pub loaders: Vec<LoaderView>,
    /// Fields read, with their lines.
    pub inferred: Vec<Inferred>,
    /// Fields defaulted.
    pub assumed: Vec<Assumed>,
    /// Fields that matter and were not found, with what stands there.
    #[serde(skip)]
    pub missing: Vec<(String, String)>,
    /// A GPU type named in the directives that no profile fits.
    #[serde(skip)]
    pub gpu_unknown: Option<String>,
    /// Things to know.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Reads the sbatch script `text` at `path` and the Python program it
/// launches. `Ok(Err(why))` when there is no program to follow (no Python
/// launch line, or its script is not there).
pub fn read_sbatch(text: &str, path: &Path) -> Result<std::result::Result<ScriptReading, String>> {
    let Some(launch) = follow(text, path) else {
        return Ok(Err("no line of the script launches Python".into()));
    };
    if !launch.script.is_file() {
        return Ok(Err(format!(
            "{} launches {}, which is not there to read",
            launch.at,
            launch.script.display()
        )));
    }
    let mut r = read(
        &launch.script,
        &launch.argv,
        Some(&launch.at),
        launch.env.clone(),
        Some(&launch.cwd),
    )?;
    r.launch = Some(launch.at.clone());
    let mut l = Ledger {
        spec: r.job.clone(),
        inferred: vec![],
        assumed: vec![],
        missing: vec![],
        warnings: vec![],
    };
    // Memory, CPUs and ranks as the plain sbatch path reads them (Slurm's
    // units, --mem-per-cpu/--mem-per-gpu products, --mem=0 left for
    // --node-mem); GPU names here, with the line each came from.
    let pairs: Vec<(String, String)> = launch
        .directives
        .iter()
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();
    let (request, notes) = crate::spec::slurm_request::read(&pairs, &path.display().to_string())?;
    l.warnings.extend(notes);
    let at_of = |keys: &[&str]| {
        launch
            .directives
            .iter()
            .rev()
            .find(|(k, _, _)| keys.contains(&k.as_str()))
            .map(|(k, v, at)| (k.clone(), v.clone(), at.clone()))
    };
    if let Some(host) = request.host {
        l.spec.budget.host = Some(host);
        if let Some((k, v, at)) = at_of(&["mem", "mem-per-cpu", "mem-per-gpu"]) {
            // --mem as written; a per-CPU or per-GPU request as its product.
            let shown = if k == "mem" {
                v
            } else {
                crate::units::fmt_bytes(host.0)
            };
            l.read("budget.host", shown.into(), at);
        }
    }
    if let Some(c) = request.cpus_per_task {
        l.spec.cpus = Some(c);
        if let Some((_, _, at)) = at_of(&["c", "cpus-per-task"]) {
            l.read("cpus", c.into(), at);
        }
    }
    // A launcher's own count (torchrun --nproc_per_node) decides the ranks.
    if let Some(n) = request.ranks_per_node.filter(|_| launch.ranks.is_none()) {
        l.spec.ranks_per_node = n;
        if let Some((_, _, at)) = at_of(&["ntasks-per-node", "ntasks", "n"]) {
            l.read("ranks_per_node", n.into(), at);
        }
    }
    for (key, value, at) in &launch.directives {
        directive(&mut l, &mut r.gpu_unknown, key, value, at)?;
    }
    if let Some(f) = &launch.ranks
        && let Some(n) = f.value.as_int().and_then(|n| u32::try_from(n).ok())
    {
        l.spec.ranks_per_node = n;
        l.read("ranks_per_node", n.into(), f.origin());
    }
    r.job = l.spec;
    r.inferred.extend(l.inferred);
    r.assumed.extend(l.assumed);
    r.warnings.extend(l.warnings);
    Ok(Ok(r))
}

fn directive(
    l: &mut Ledger,
    unknown: &mut Option<String>,
    key: &str,
    value: &str,
    at: &str,
) -> Result<()> {
    match key {
        "gres" | "gpus" | "G" | "gpus-per-node" | "gpus-per-task" => {
            let Some(req) = parse_request(value, key == "gres") else {
                return Ok(());
            };
            let Some(written) = req.written else {
                l.assume(
                    "budget.gpu",
                    serde_json::Value::Null,
                    format!(
                        "{at} asks for GPUs without naming a type: give --gpu to check GPU memory"
                    ),
                );
                return Ok(());
            };
            match profile_for(&written) {
                GpuName::Exact(p) => {
                    l.read(
                        "budget.gpu",
                        p.clone().into(),
                        format!("{at} (--{key}={value})"),
                    );
                    l.spec.budget.gpu = Some(p);
                }
                GpuName::Assumed(p, why) => {
                    l.assume("budget.gpu", p.clone().into(), format!("{at}: {why}"));
                    l.spec.budget.gpu = Some(p);
                }
                GpuName::Unknown => {
                    *unknown = Some(format!(
                        "{at} asks for GPU type '{written}' (--{key}={value})"
                    ))
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Reads the training script at `path` run with `argv`.
pub fn read_python(path: &Path, argv: &[String]) -> Result<ScriptReading> {
    read(path, argv, None, HashMap::new(), None)
}

fn read(
    path: &Path,
    argv: &[String],
    launch_at: Option<&str>,
    env: HashMap<String, Found>,
    cwd: Option<&Path>,
) -> Result<ScriptReading> {
    let text = crate::input::read_text(path, "a Python training script", false)?;
    let src = Source::parse(path, text)?;
    let index = Index::build(&src);
    let mut ev = Eval {
        src: &src,
        index: &index,
        args: HashMap::new(),
        config: None,
        config_text: None,
        env,
    };
    let defs = super::argparse::definitions(&ev);
    let cmdline = launch_at.map_or_else(|| "the command line".to_string(), str::to_string);
    let (values, unknown_opts) = super::argparse::values(&defs, argv, &cmdline);
    ev.args = values;
    let mut warnings = Vec::new();
    // `plan train.py -- --batch_size 2048 --mem 256G`: --mem and --gpu that
    // the script does not define are the budget, given to headroom.
    let mut budget: Vec<(String, String)> = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    for (opt, value) in unknown_opts {
        match (opt.as_str(), value) {
            ("--mem" | "--gpu", Some(v)) if launch_at.is_none() => budget.push((opt, v)),
            (_, v) => refused.push(v.map_or(opt.clone(), |v| format!("{opt} {v}"))),
        }
    }
    if !refused.is_empty() && !defs.is_empty() {
        warnings.push(format!(
            "{cmdline} passes {}, which {} does not define: argparse would stop with exit status 2",
            refused.join(" "),
            src.label
        ));
    }
    if index.has_errors {
        warnings.push(format!(
            "{} has text the Python parser could not read; what is in it was skipped",
            src.label
        ));
    }
    if let Some((found, text)) = config(&ev, path, cwd)? {
        ev.config = Some(found);
        ev.config_text = Some(text);
    }
    let loaders = super::loaders::find(&ev);
    let graph = super::graph::find(&ev);
    let model = super::model::find(&ev);
    let mut l = Ledger {
        spec: JobSpec::for_dataset("unknown"),
        inferred: vec![],
        assumed: vec![],
        missing: vec![],
        warnings,
    };
    super::fill::graph(&mut l, &graph);
    super::infer::loaders(&mut l, &loaders);
    super::fill::model(&mut l, &model);
    l.spec.name = Some(src.label.clone());
    for (opt, v) in budget {
        if opt == "--mem" {
            let bytes = crate::units::parse_slurm_mem(&v)
                .map_err(|e| Error::bad(format!("--mem: {}", crate::output::shown(&e))))?;
            l.spec.budget.host = Some(Bytes(bytes));
            l.read("budget.host", v.into(), "the command line".into());
        } else {
            l.spec.budget.gpu = Some(v.clone());
            l.read("budget.gpu", v.into(), "the command line".into());
        }
    }
    let views = loaders
        .iter()
        .map(|c| LoaderView {
            at: c.at.clone(),
            variable: c.variable.clone(),
            split: c.split,
            placement: c.placement,
            args: c
                .args
                .iter()
                .map(|(k, v)| (k.clone(), v.value.to_json()))
                .collect(),
            unknown: c.unknown.clone(),
        })
        .collect();
    Ok(ScriptReading {
        job: l.spec,
        script: path.display().to_string(),
        launch: None,
        loaders: views,
        inferred: l.inferred,
        assumed: l.assumed,
        missing: l.missing,
        gpu_unknown: None,
        warnings: l.warnings,
    })
}

/// The config file named by a `--config` style argument, read as YAML
/// (JSON is YAML too): relative to the directory the launch runs in, else
/// to the script's directory.
fn config(ev: &Eval, script: &Path, cwd: Option<&Path>) -> Result<Option<(Found, String)>> {
    let names = [
        "config",
        "cfg",
        "config_file",
        "config_path",
        "conf",
        "yaml",
    ];
    let Some((dest, f)) = names.iter().find_map(|n| Some((*n, ev.args.get(*n)?))) else {
        return Ok(None);
    };
    let Value::Str(rel) = &f.value else {
        return Ok(None);
    };
    let dir = script
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let here = cwd.map_or_else(|| PathBuf::from(rel), |c| c.join(rel));
    let path = [here, dir.join(rel)].into_iter().find(|p| p.is_file());
    let Some(path) = path else {
        return Err(Error::bad(format!(
            "{}: the config file '{}' (--{dest}, {}) is not there to read",
            ev.src.label,
            crate::output::shown(rel),
            f.origin()
        )));
    };
    let text = crate::input::read_text(&path, "a YAML or JSON config", false)?;
    crate::spec::check_yaml_depth(&text, &path.display().to_string())?;
    let value: serde_json::Value = crate::yaml::from_str(&text).map_err(|e| {
        Error::bad(format!(
            "{}: {}",
            path.display(),
            e.to_string().replace('\n', " ")
        ))
    })?;
    let label = path
        .file_name()
        .map_or(rel.clone(), |n| n.to_string_lossy().to_string());
    Ok(Some((Found::at(Value::from_yaml(&value), label), text)))
}
