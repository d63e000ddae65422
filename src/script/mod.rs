//! The zero-spec reader: from an sbatch script (or a training script and
//! its command line) to the job spec that will really run. The sbatch side
//! ([`launch`], with `launchers.rs`) follows the launch line to the Python
//! entry point; the Python side parses the script ([`py`], tree-sitter),
//! indexes it ([`index`]), computes values ([`eval`], with `eval_names.rs`
//! and `eval_call.rs`) from argparse ([`argparse`]), the launch line and a
//! config file, finds the loaders, model and graph handling ([`loaders`],
//! [`model`], [`graph`]) and records every field as read (with its
//! `file:line`) or assumed ([`infer`], `fill.rs`). GPU names come from
//! [`gres`].

pub mod argparse;
pub mod eval;
mod eval_call;
mod eval_names;
mod fill;
pub mod graph;
pub mod gres;
pub mod index;
pub mod infer;
pub mod launch;
mod launchers;
pub mod loaders;
pub mod model;
pub mod py;
mod reading;
mod report;

pub use reading::{ScriptReading, read_python, read_sbatch};
pub use report::ScriptReport;

/// What the JOB argument of `plan`/`check` turned out to be.
pub enum Input {
    /// A script followed to its training script and read.
    Read(Box<ScriptReading>),
    /// An sbatch script whose Python program could not be followed: why.
    NotFollowed(String),
    /// Not a script (a YAML spec, a profile name).
    NotScript,
}

/// Reads `job` when it is a Python script (run with `script_args`) or an
/// sbatch script that launches one.
pub fn load(job: &str, script_args: &[String]) -> crate::error::Result<Input> {
    let path = std::path::Path::new(job);
    if !path.is_file() {
        return Ok(Input::NotScript);
    }
    if job.ends_with(".py") {
        return Ok(Input::Read(Box::new(read_python(path, script_args)?)));
    }
    let text = crate::input::read_text(path, "a job spec or sbatch script", false)?;
    let is_script =
        text.starts_with("#!") || text.lines().any(|l| l.trim_start().starts_with("#SBATCH"));
    if !is_script {
        return Ok(Input::NotScript);
    }
    Ok(match read_sbatch(&text, path)? {
        Ok(r) => Input::Read(Box::new(r)),
        Err(why) => Input::NotFollowed(why),
    })
}

use tree_sitter::Node;

/// Whether `node` runs: false only inside an `if`/`else` branch whose
/// condition is known and points the other way (`if args.use_gat:` with
/// `--use_gat` not given).
pub fn reachable(ev: &eval::Eval, node: Node) -> bool {
    let mut child = node;
    let mut cur = ev.index.parent(node);
    while let Some(n) = cur {
        if matches!(n.kind(), "if_statement" | "elif_clause")
            && let Some(cond) = n.child_by_field_name("condition")
            && let Some(v) = ev.eval(cond)
        {
            let truth = v.value.truthy();
            let in_consequence = n.child_by_field_name("consequence") == Some(child);
            let in_else = matches!(child.kind(), "else_clause" | "elif_clause");
            if (in_consequence && !truth) || (in_else && truth) {
                return false;
            }
        }
        child = n;
        cur = ev.index.parent(n);
    }
    true
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
        return Err(Error::bad(format!(
            "{g}: no GPU profile has that name; give --gpu (a profile such as a100-80gb, or a size such as 64GB)"
        )));
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
            "{source}: the scripts do not say {list}: give --dataset (a profile name); there is no default dataset"
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
