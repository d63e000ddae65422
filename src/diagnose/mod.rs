//! `headroom diagnose`: the post-mortem. Reads logs, dmesg/journalctl output,
//! `sacct -P`/`seff` output and an exit status; names the root cause (see
//! [`category::Category`]), how sure, the evidence lines and the fix.
//!
//! Layers, each usable alone: [`scan::LogScanner`] streams inputs through the
//! per-source parsers in [`parse`] into evidence; [`verdict::verdict_from_evidence`]
//! (pure) ranks it into a [`report::Diagnosis`]; [`diagnose`] ties both to
//! files and flags for the CLI and for other verbs.

pub mod advice;
pub mod attribution;
pub mod category;
pub mod clean;
pub mod cli;
pub mod cuda_advice;
pub mod evidence;
pub mod exit;
#[cfg(test)]
mod exit_sentences;
pub mod order;
pub mod parse;
pub mod report;
pub mod scan;
pub mod signals;
pub mod verdict;

use std::path::PathBuf;

pub use parse::cuda_oom;
pub use report::Diagnosis;
pub use scan::LogScanner;
pub use verdict::{Facts, Findings, verdict_from_evidence};

use crate::error::{Error, Result};
use exit::ExitStatus;

/// One input: a file or stdin, read as a log or as `sacct -P` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSource {
    /// Where to read.
    pub origin: Origin,
    /// Read as a `sacct -P` table (`--sacct`).
    pub sacct: bool,
}

/// Where an input comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A file path.
    File(PathBuf),
    /// Standard input (`-`).
    Stdin,
}

impl InputSource {
    /// A path as the user wrote it; `-` is stdin.
    pub fn from_arg(arg: PathBuf, sacct: bool) -> Self {
        let origin = if arg.as_os_str() == "-" {
            Origin::Stdin
        } else {
            Origin::File(arg)
        };
        InputSource { origin, sacct }
    }

    fn name(&self) -> String {
        match &self.origin {
            Origin::File(p) => p.display().to_string(),
            Origin::Stdin => "<stdin>".to_string(),
        }
    }
}

/// Everything besides the inputs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The job's exit status (`--exit-code`).
    pub exit: Option<ExitStatus>,
    /// A job spec or sbatch script to compute a safe configuration for (`--job`).
    pub job: Option<PathBuf>,
}

/// Reads every input and names the cause. Bad input (missing, a directory,
/// a binary file with nothing readable, stdin twice, every input empty) is
/// an error; one empty file among others is read as empty.
pub fn diagnose(inputs: &[InputSource], opts: &Options) -> Result<Diagnosis> {
    if inputs.is_empty() && opts.exit.is_none() {
        return Err(Error::bad(
            "nothing to diagnose: give a log file, `-` for stdin, --sacct FILE or --exit-code N",
        ));
    }
    if inputs.iter().filter(|i| i.origin == Origin::Stdin).count() > 1 {
        return Err(Error::bad("stdin (`-`) can be read only once"));
    }
    if let Some(job) = &opts.job
        && !job.is_file()
    {
        return Err(Error::bad(format!("--job {}: no such file", job.display())));
    }
    let mut scanner = LogScanner::new();
    let mut stats = Vec::new();
    for input in inputs {
        let name = input.name();
        let before = scanner.evidence_seen();
        let st = match &input.origin {
            Origin::Stdin => scanner.scan_reader(&name, std::io::stdin().lock(), input.sacct),
            Origin::File(path) => {
                let file = crate::input::open_log(path)?;
                scanner.scan_reader(&name, file, input.sacct)
            }
        }
        .map_err(|e| Error::io(&name, e))?;

        if st.binary && scanner.evidence_seen() == before {
            return Err(Error::bad(format!(
                "{name}: binary file (NUL bytes in its first 8 KiB) with no log line headroom recognises"
            )));
        }
        stats.push(st);
    }
    // An empty file beside others is normal (a successful job's .err); only
    // nothing at all to read is an error.
    if opts.exit.is_none()
        && let Some(first) = stats.first()
        && stats.iter().all(|s| s.bytes == 0)
    {
        return Err(Error::bad(format!(
            "{}: empty input, nothing to diagnose",
            first.source
        )));
    }
    let facts = Facts {
        exit: opts.exit.clone(),
        ..Facts::default()
    };
    let mut diagnosis = verdict_from_evidence(scanner.finish(), &facts);
    diagnosis.inputs = stats;
    Ok(diagnosis)
}
