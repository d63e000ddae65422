//! The zero-spec reader: from a launch file (an sbatch script, or any file
//! of shell commands, [`kind`] decides) or a training script and its command
//! line to the job spec that will really run. The shell side ([`shell`],
//! `subst.rs`, [`launch`] with `launchers.rs`) follows the launch file to
//! every Python run it makes; `directives.rs` reads its `#SBATCH` lines and
//! `words.rs` its own words when a program is not there; the Python side parses the script ([`py`], tree-sitter),
//! indexes it ([`index`]), computes values ([`eval`], with `eval_names.rs`
//! and `eval_call.rs`) from argparse ([`argparse`]), the launch line and a
//! config file, finds the loaders, model and graph handling ([`loaders`],
//! [`model`], [`graph`]) and records every field as read (with its
//! `file:line`) or assumed ([`infer`], `fill.rs`). GPU names come from
//! [`gres`].

pub mod argparse;
mod class_alias;
mod containers;
mod dataclass_cli;
pub mod datafile;
mod dataset_name;
mod degree_file;
mod degree_on_disk;
mod degree_undirected;
mod directives;
pub mod eval;
mod eval_cadence;
mod eval_call;
mod eval_memo;
mod eval_names;
mod eval_params;
mod eval_return;
mod eval_reuse;
mod eval_self;
mod feature_copy;
mod fill;
mod grad_context;
pub mod graph;
mod graph_database;
pub mod gres;
mod hand_conv;
mod hydra;
pub mod index;
pub mod infer;
pub mod kind;
pub mod launch;
mod launchers;
mod loader_context;
pub mod loaders;
mod manual_reverse;
mod match_case;
pub mod model;
mod model_factory;
mod model_hits;
mod model_origin;
mod model_shape;
pub mod project;
pub mod py;
mod reading;
mod report;
mod run_order;
mod run_scope;
pub mod shell;
mod subst;
mod synthetic_graph;
mod tensor_shape;
mod torchfile;
mod words;
mod yaml_lines;

pub use fill::GRAPH_TO_GPU;
pub use reading::{ScriptReading, read_launch, read_python, read_words};
pub use report::ScriptReport;

/// What the JOB argument of `plan`/`check` turned out to be.
pub enum Input {
    /// A script read: one reading per Python run of a launch file (one for
    /// a training script given directly).
    Read(Vec<ScriptReading>),
    /// Not a script (a YAML spec, a profile name).
    NotScript,
}

/// Reads `job` when it is a Python script (run with `script_args`) or a
/// launch file of shell commands.
pub fn load(job: &str, script_args: &[String], cpus: Option<u32>) -> crate::error::Result<Input> {
    let path = std::path::Path::new(job);
    if !path.is_file() {
        return Ok(Input::NotScript);
    }
    if job.ends_with(".py") {
        return Ok(Input::Read(vec![read_python(path, script_args, cpus)?]));
    }
    let text = crate::input::read_text(path, "a job spec or launch file", false)?;
    match kind::of(&text, path)? {
        kind::Kind::Yaml => Ok(Input::NotScript),
        kind::Kind::Shell => Ok(Input::Read(read_launch(&text, path, cpus)?)),
    }
}

use tree_sitter::Node;

/// Whether `node` runs: false only inside an `if`/`else` branch whose
/// condition is known and points the other way (`if args.use_gat:` with
/// `--use_gat` not given).
pub fn reachable<'t>(ev: &eval::Eval<'t>, node: Node<'t>) -> bool {
    reachable_with(ev, node, &Vec::new())
}

/// As [`reachable`], the conditions computed with `locals` bound.
pub fn reachable_with<'t>(ev: &eval::Eval<'t>, node: Node<'t>, locals: &eval::Locals) -> bool {
    dead_branch(ev, node, locals).is_none()
}

/// The `if`/`elif` whose known condition keeps `node` from running
/// (`if False:` around it), if any.
pub fn dead_branch<'t>(
    ev: &eval::Eval<'t>,
    node: Node<'t>,
    locals: &eval::Locals,
) -> Option<Node<'t>> {
    if let Some(block) = run_order::dead_main_block(ev, node) {
        return Some(block);
    }
    if let Some(arm) = match_case::dead_case(ev, node, locals) {
        return Some(arm);
    }
    let mut child = node;
    let mut cur = ev.parent(node);
    while let Some(n) = cur {
        if matches!(n.kind(), "if_statement" | "elif_clause")
            && let Some(cond) = n.child_by_field_name("condition")
            && let Some(v) = ev.eval_with(cond, locals)
        {
            let truth = v.value.truthy();
            let in_consequence = n.child_by_field_name("consequence") == Some(child);
            let in_else = matches!(child.kind(), "else_clause" | "elif_clause");
            if (in_consequence && !truth) || (in_else && truth) {
                return Some(n);
            }
        }
        child = n;
        cur = ev.parent(n);
    }
    None
}

/// The error for a GPU type no profile fits (`g` says where it was asked for).
pub fn gpu_unknown(g: &str) -> crate::error::Error {
    crate::error::Error::bad(format!(
        "{g}: no GPU profile has that name; give --gpu (a profile such as a100-80gb, or a size such as 64GB)"
    ))
}

/// Refuses a reading that leaves a field that matters unknown (unless the
/// user gave it, or `assume` lets the defaults stand, listed as assumed),
/// or names a GPU no profile fits (unless `--gpu` was given).
pub fn settle(
    r: &mut ScriptReading,
    source: &str,
    given: impl Fn(&str) -> bool,
    assume: bool,
    gpu_given: bool,
) -> crate::error::Result<()> {
    use crate::error::Error;
    let source = crate::output::shown(source);
    if let Some(g) = &r.gpu_unknown
        && !gpu_given
    {
        return Err(gpu_unknown(g));
    }
    let missing: Vec<(String, String)> = r
        .missing
        .iter()
        .filter(|(f, _)| !given(f))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = missing
        .iter()
        .map(|(f, why)| format!("{f} ({})", crate::output::shown_within(why, 160)))
        .collect();
    let list = list.join("; ");
    if missing.iter().any(|(f, _)| f == "dataset") {
        return Err(Error::bad(format!(
            "{source}: the scripts do not say {list}: give --dataset (a profile name) or the graph's size (--nodes N --edges E --features F); there is no default dataset"
        )));
    }
    if !assume {
        return Err(Error::bad(format!(
            "{source}: the scripts do not say {list}: give them (--batch-size, --fanout, --workers) or --assume-defaults to plan with the defaults"
        )));
    }
    let spec = serde_json::to_value(&r.job).unwrap_or_default();
    for (field, why) in missing {
        let value = field
            .split('.')
            .try_fold(&spec, |v, k| v.get(k))
            .cloned()
            .unwrap_or_default();
        r.assumed.push(infer::Assumed {
            field,
            value,
            why: format!("--assume-defaults: {why}"),
        });
    }
    Ok(())
}
