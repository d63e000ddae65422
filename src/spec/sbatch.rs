//! A launch file read as a job spec by its own words, for input that is not
//! a file `plan` can follow (standard input): the same reader as `plan` on
//! a launch file (script/launch.rs, `words.rs`, `directives.rs`), so a
//! script read with or without its training script means the same thing:
//! `#SBATCH` memory, CPUs, ranks and GPU (an unknown GPU type is refused in
//! the same words), the python line's arguments, and a variable the python
//! line contradicts reported.

use std::path::Path;

use super::types::JobSpec;
use crate::error::{Error, Result};
use crate::output::shown;

/// Parses `text`; returns the spec and warnings for the user.
pub fn parse(text: &str, source: &str) -> Result<(JobSpec, Vec<String>)> {
    let r = crate::script::read_words(text, Path::new(source))?;
    if r.missing.iter().any(|(f, _)| f == "dataset") {
        return Err(Error::bad(format!(
            "{}: the script names no dataset (pass it to python as --dataset, or set DATASET=)",
            shown(source)
        )));
    }
    if let Some(g) = &r.gpu_unknown {
        return Err(crate::script::gpu_unknown(g));
    }
    Ok((r.job, r.warnings))
}

#[cfg(test)]
#[path = "sbatch_tests.rs"]
mod tests;
