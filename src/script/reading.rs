//! One reading of a training script (and the sbatch script that launches
//! it): parse, compute argparse values with the launch's command line and
//! a `--config` file, find what matters, and fill a job spec with its
//! ledger. The sbatch directives add the budget (`--mem`, the GPU by name),
//! `--cpus-per-task` and the ranks the launcher starts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::directives;
use super::eval::Eval;
use super::infer::{Assumed, Inferred, Ledger};
use super::py::{Found, Value};
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

/// Reads the launch file `text` at `path` (an sbatch script or any file of
/// shell commands) and the Python program of each run it makes; a run whose
/// program is not there is read by the launch file's own words (words.rs).
pub fn read_launch(text: &str, path: &Path, cpus: Option<u32>) -> Result<Vec<ScriptReading>> {
    let f = super::launch::follow_all(text, path);
    if let Some(e) = f.error.clone() {
        return Err(Error::bad(e));
    }
    let source = path.display().to_string();
    if f.runs.is_empty() {
        return Ok(vec![words_reading(&f, None, &source)?]);
    }
    let mut out = Vec::new();
    for run in &f.runs {
        if !run.script.is_file() {
            out.push(words_reading(&f, Some(run), &source)?);
            continue;
        }
        let mut r = read(
            &run.script,
            &run.argv,
            Some(&run.at),
            &run.option_at,
            with_cpus(run.env.clone(), cpus),
            Some(&run.cwd),
        )?;
        r.launch = Some(run.at.clone());
        r.warnings.extend(f.notes.iter().cloned());
        let mut l = ledger(&r);
        directives::apply(
            &mut l,
            &mut r.gpu_unknown,
            &run.directives,
            run.ranks.as_ref(),
            &source,
        )?;
        out.push(merge(r, l));
    }
    Ok(out)
}

/// The launch file at `path` read by its own words only (its first run's
/// python arguments and its variables), whether or not the program is there.
pub fn read_words(text: &str, path: &Path) -> Result<ScriptReading> {
    let f = super::launch::follow_all(text, path);
    if let Some(e) = f.error.clone() {
        return Err(Error::bad(e));
    }
    words_reading(&f, f.runs.first(), &path.display().to_string())
}

fn words_reading(
    f: &super::launch::Followed,
    run: Option<&super::launch::Launch>,
    source: &str,
) -> Result<ScriptReading> {
    let label = Path::new(source)
        .file_name()
        .map_or(source.to_string(), |n| n.to_string_lossy().to_string());
    let (argv, at, env, dirs) = match run {
        Some(r) => (&r.argv[..], r.at.as_str(), &r.env, &r.directives),
        None => (&[][..], label.as_str(), &f.env, &f.directives),
    };
    let l = super::words::read(argv, at, env, source)?;
    let mut r = from_words(l, source, run.map(|r| r.at.as_str()));
    r.warnings.push(match run {
        Some(run) => format!(
            "{} launches {}, which is not there to read: only the launch file's own words were read; the model and the loaders' placement are defaults",
            run.at,
            run.script.display()
        ),
        None => format!(
            "no line of {label} launches Python: only its own words were read; the model and the loaders' placement are defaults"
        ),
    });
    r.warnings.extend(f.notes.iter().cloned());
    let mut l = ledger(&r);
    directives::apply(
        &mut l,
        &mut r.gpu_unknown,
        dirs,
        run.and_then(|r| r.ranks.as_ref()),
        source,
    )?;
    Ok(merge(r, l))
}

/// An empty ledger over the reading's job, for the directives.
fn ledger(r: &ScriptReading) -> Ledger {
    Ledger {
        spec: r.job.clone(),
        inferred: vec![],
        assumed: vec![],
        missing: vec![],
        warnings: vec![],
    }
}

fn merge(mut r: ScriptReading, l: Ledger) -> ScriptReading {
    r.job = l.spec;
    r.inferred.extend(l.inferred);
    r.assumed.extend(l.assumed);
    r.warnings.extend(l.warnings);
    r
}

/// The reading of a launch file by its own words.
fn from_words(l: Ledger, source: &str, at: Option<&str>) -> ScriptReading {
    ScriptReading {
        job: l.spec,
        script: source.to_string(),
        launch: at.map(str::to_string),
        loaders: vec![],
        inferred: l.inferred,
        assumed: l.assumed,
        missing: l.missing,
        gpu_unknown: None,
        warnings: l.warnings,
    }
}

/// Reads the training script at `path` run with `argv`.
pub fn read_python(path: &Path, argv: &[String], cpus: Option<u32>) -> Result<ScriptReading> {
    read(
        path,
        argv,
        None,
        &HashMap::new(),
        with_cpus(HashMap::new(), cpus),
        None,
    )
}

/// The launch's environment with `--cpus N` as the task's CPUs: what
/// `os.cpu_count()` and `len(os.sched_getaffinity(0))` count in the job
/// (Slurm's `SLURM_CPUS_PER_TASK`), the flag over the launch's own `-c`.
fn with_cpus(mut env: HashMap<String, Found>, cpus: Option<u32>) -> HashMap<String, Found> {
    if let Some(c) = cpus {
        env.insert(
            "SLURM_CPUS_PER_TASK".into(),
            Found::at(super::py::Value::Int(i64::from(c)), format!("--cpus {c}")),
        );
    }
    env
}

fn read(
    path: &Path,
    argv: &[String],
    launch_at: Option<&str>,
    option_at: &HashMap<String, String>,
    env: HashMap<String, Found>,
    cwd: Option<&Path>,
) -> Result<ScriptReading> {
    let text = crate::input::read_text(path, "a Python training script", false)?;
    let sources = super::project::load(path, text, cwd)?;
    let project = super::project::Project::new(&sources);
    let src = &sources.list[0];
    let index = &project.indexes[0];
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let mut ev = Eval {
        project: &project,
        args: HashMap::new(),
        config: None,
        config_files: Vec::new(),
        config_groups: HashMap::new(),
        env,
        cwd: cwd.map_or(dir, Path::to_path_buf),
        steps: std::cell::Cell::new(0),
        memo: Default::default(),
    };
    let defs = super::argparse::definitions(&ev);
    let cmdline = launch_at.map_or_else(|| "the command line".to_string(), str::to_string);
    let (values, unknown_opts) = super::argparse::values(&defs, argv, &cmdline, option_at);
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
        let label = found.origin();
        ev.config = Some(found);
        ev.config_files.push((label, text));
    } else if let Some(h) = super::hydra::config(&ev, argv)? {
        ev.config = Some(h.config);
        ev.config_files = h.files;
        ev.config_groups = h.groups;
    }
    // `parser.set_defaults(**cfg)` with `cfg` the config file just found:
    // the options' defaults come from it, so they are read again (the file
    // itself was found from the first reading's `--config`).
    if ev.config.is_some() {
        let defs = super::argparse::definitions(&ev);
        ev.args = super::argparse::values(&defs, argv, &cmdline, option_at).0;
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
    let dead = super::loaders::dead(&ev);
    super::infer::loaders(&mut l, &loaders, &graph, &dead);
    super::fill::model(&mut l, &model, graph.reverse_every_type);
    if let Some((n, from)) = spawned_ranks(&ev) {
        l.spec.ranks_per_node = n;
        l.read("ranks_per_node", n.into(), from);
    }
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

/// `mp.spawn(fn, args=(...), nprocs=n)` (torch.multiprocessing's spawn)
/// that runs: the processes it starts, each a rank on this node, when `n`
/// can be computed and is more than one.
fn spawned_ranks(ev: &Eval) -> Option<(u32, String)> {
    let index = &ev.project.indexes[0];
    index.calls_of_suffix("spawn").find_map(|call| {
        let f = call.child_by_field_name("function")?;
        let spawn = matches!(
            ev.text(f),
            "spawn" | "mp.spawn" | "torch.multiprocessing.spawn" | "multiprocessing.spawn"
        );
        if !spawn || !super::reachable(ev, call) {
            return None;
        }
        let mut n = super::model::keyword(ev, call, &["nprocs"], &Vec::new())?;
        n.from.push(ev.at(call));
        let count = u32::try_from(n.value.as_int()?).ok().filter(|c| *c > 1)?;
        Some((count, n.origin()))
    })
}

/// Whether any source of the project reads `dest` as an attribute
/// (`args.config`) or by its name as a string (`getattr(args, "config")`,
/// `vars(args)["config"]`) anywhere but in its own `add_argument` line.
fn attribute_read(ev: &Eval, dest: &str) -> bool {
    let attr = format!(".{dest}");
    let quoted = [format!("\"{dest}\""), format!("'{dest}'")];
    ev.project.sources.iter().any(|s| {
        s.text
            .lines()
            .filter(|l| !l.contains("add_argument"))
            .any(|l| {
                l.match_indices(&attr).any(|(i, _)| {
                    !l[i + attr.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
                }) || quoted.iter().any(|q| l.contains(q.as_str()))
            })
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
    let dir = script
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let at = |rel: &str| {
        let here = cwd.map_or_else(|| PathBuf::from(rel), |c| c.join(rel));
        [here, dir.join(rel)].into_iter().find(|p| p.is_file())
    };
    let named = names
        .iter()
        .find_map(|n| Some((n.to_string(), ev.args.get(*n)?)));
    // Any other option whose value is a JSON or YAML file that is there and
    // that the script reads (`-s Settings/tuning_GAT.json` read by
    // `json.load(open(args.setting))`): a config by what it holds, not by
    // its option's name.
    let by_value = || {
        let mut opts: Vec<_> = ev.args.iter().collect();
        opts.sort_by(|a, b| a.0.cmp(b.0));
        opts.into_iter().find_map(|(dest, f)| {
            let Value::Str(rel) = &f.value else {
                return None;
            };
            let config_like = [".json", ".yaml", ".yml"].iter().any(|e| rel.ends_with(e));
            (config_like && at(rel).is_some() && attribute_read(ev, dest))
                .then(|| (dest.clone(), f))
        })
    };
    let Some((dest, f)) = named.or_else(by_value) else {
        return Ok(None);
    };
    let Value::Str(rel) = &f.value else {
        return Ok(None);
    };
    let path = at(rel);
    // An option parsed and never read (`--config config.yaml` left over
    // from another version of the script) names no file the run needs.
    if path.is_none() && !attribute_read(ev, &dest) {
        return Ok(None);
    }
    let Some(path) = path else {
        return Err(Error::bad(format!(
            "{}: the config file '{}' (--{dest}, {}) is not there to read",
            ev.main().label,
            crate::output::shown(rel),
            f.origin()
        )));
    };
    let text = crate::input::read_text(&path, "a YAML or JSON config", false)?;
    crate::spec::check_yaml_depth(&text, &path.display().to_string())?;
    let value: serde_json::Value = crate::yaml::config_from_str(&text).map_err(|e| {
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
