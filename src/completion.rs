//! Shell completion: the embedded profile names offered where an argument
//! takes one (`--gpu`, `--dataset`, a JOB), and the script a shell sources.
//!
//! The completion is clap_complete's dynamic engine, not a static script:
//! JOB is a path *or* a profile name, and a static script can offer only one
//! of the two (clap_complete's bash and zsh generators switch to a word list
//! as soon as an argument has possible values, and lose file names). The
//! shell calls `headroom` back with `HEADROOM_COMPLETE=<shell>` set; `main` answers
//! through [`clap_complete::CompleteEnv`] before anything else runs. The
//! engine is behind clap_complete's `unstable-dynamic` feature; Cargo.lock
//! pins the version it was written against.

use std::ffi::OsStr;

use clap_complete::engine::{
    ArgValueCompleter, CompletionCandidate, PathCompleter, ValueCompleter,
};
use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};

use crate::profiles;

/// The environment variable the shell sets when it asks for candidates.
/// Not clap's default `COMPLETE`: a word that generic may be set in a
/// user's environment for something else, and headroom would then print a
/// completion script instead of running.
pub const VAR: &str = "HEADROOM_COMPLETE";

/// Candidates among `names` starting with what was typed, each with help.
fn matching<'a>(
    current: &OsStr,
    names: impl Iterator<Item = (&'a str, String)>,
) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    names
        .filter(|(n, _)| n.starts_with(typed.as_ref()))
        .map(|(n, help)| CompletionCandidate::new(n).help(Some(help.into())))
        .collect()
}

fn gpu_names(current: &OsStr) -> Vec<CompletionCandidate> {
    // A broken embedded profile is a headroom bug that the profile tests
    // catch; completion offers what parses.
    let gpus = profiles::all_gpus().unwrap_or_default();
    matching(
        current,
        gpus.iter()
            .map(|g| (g.name.as_str(), g.description.clone())),
    )
}

fn dataset_names(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(
        current,
        profiles::dataset_names().map(|n| (n, "dataset profile".to_string())),
    )
}

/// A JOB: a job profile, a dataset profile (its default job) or a file.
fn job_names(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut out = matching(
        current,
        profiles::names("jobs").map(|n| (n, "job profile".to_string())),
    );
    out.extend(dataset_names(current));
    out.extend(PathCompleter::file().complete(current));
    out
}

/// The completer for a `--gpu` argument.
pub fn gpu() -> ArgValueCompleter {
    ArgValueCompleter::new(gpu_names)
}

/// The completer for a `--dataset` argument.
pub fn dataset() -> ArgValueCompleter {
    ArgValueCompleter::new(dataset_names)
}

/// The completer for a JOB argument (positional or `--job`).
pub fn job() -> ArgValueCompleter {
    ArgValueCompleter::new(job_names)
}

/// The script that registers headroom's completion with `shell`: it calls
/// `headroom` (found on PATH) back for every completion.
pub fn registration(shell: clap_complete::Shell) -> std::io::Result<Vec<u8>> {
    let completer: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &Bash,
        clap_complete::Shell::Elvish => &Elvish,
        clap_complete::Shell::Fish => &Fish,
        clap_complete::Shell::PowerShell => &Powershell,
        clap_complete::Shell::Zsh => &Zsh,
        other => {
            return Err(std::io::Error::other(format!(
                "no completion for shell {other}"
            )));
        }
    };
    let mut out = Vec::new();
    completer.write_registration(VAR, "headroom", "headroom", "headroom", &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    fn complete(line: &[&str]) -> Vec<String> {
        let mut cmd = crate::cli::Cli::command();
        let args: Vec<std::ffi::OsString> = line.iter().map(Into::into).collect();
        let index = args.len() - 1;
        clap_complete::engine::complete(&mut cmd, args, index, None)
            .unwrap()
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn profile_names_are_offered_where_an_argument_takes_one() {
        let gpus = complete(&["headroom", "plan", "ogbn-arxiv", "--gpu", "a1"]);
        assert!(gpus.iter().any(|g| g.starts_with("a100")), "{gpus:?}");
        assert!(gpus.iter().all(|g| g.starts_with("a1")), "{gpus:?}");
        let sim = complete(&["headroom", "simulate-alloc", "--gpu", "h1"]);
        assert!(sim.iter().any(|g| g.starts_with("h100")), "{sim:?}");
        let ds = complete(&["headroom", "check", "x.yaml", "--dataset", "ogbn-p"]);
        assert!(ds.contains(&"ogbn-papers100m".to_string()), "{ds:?}");
        assert!(ds.contains(&"ogbn-products".to_string()), "{ds:?}");
        let jobs = complete(&["headroom", "plan", "ogbn-a"]);
        assert!(jobs.contains(&"ogbn-arxiv".to_string()), "{jobs:?}");
        let watch = complete(&["headroom", "diagnose", "--job", "seed"]);
        assert!(!watch.is_empty(), "no job profile offered");
    }
}
