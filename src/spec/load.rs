//! Turning the user's JOB argument into a [`JobSpec`]: a YAML file, an sbatch
//! script, an embedded job profile, or a dataset profile name (the default
//! job on that dataset).

use std::path::Path;

use super::sbatch;
use super::types::JobSpec;
use crate::error::{Error, Result};
use crate::profiles;

/// A loaded spec and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The spec.
    pub spec: JobSpec,
    /// A path or `profile <name>`.
    pub source: String,
    /// Things the user should know (an sbatch variable the python line overrides...).
    pub warnings: Vec<String>,
}

/// Loads `arg`: a file path, a job profile name or a dataset profile name.
pub fn load(arg: &str) -> Result<Loaded> {
    let path = Path::new(arg);
    // Anything at that path (a FIFO, a device, a dangling or looping link
    // included) is the user's file: input.rs names what is wrong with it
    // rather than "unknown job" below.
    if arg == "-" || path.symlink_metadata().is_ok() {
        let text = crate::input::read_text(path, "a job spec or sbatch script", true)?;
        return from_text(&text, arg);
    }
    if let Some(text) = profiles::text("jobs", &profiles::normalize(arg)) {
        let spec = parse_yaml(text, arg)
            .map_err(|e| Error::Internal(format!("embedded job profile {arg}: {e}")))?;
        return Ok(Loaded {
            spec,
            source: format!("profile {arg}"),
            warnings: vec![],
        });
    }
    if profiles::dataset(arg).is_ok() {
        return Ok(Loaded {
            spec: JobSpec::for_dataset(arg),
            source: format!("defaults on dataset {arg}"),
            warnings: vec![],
        });
    }
    if arg.ends_with(".yaml")
        || arg.ends_with(".yml")
        || arg.contains('/')
        || arg.ends_with(".sbatch")
    {
        return Err(Error::bad(format!("{arg}: no such file")));
    }
    let known: Vec<&str> = profiles::names("jobs")
        .chain(profiles::dataset_names())
        .collect();
    Err(profiles::unknown("job, file or dataset", arg, known))
}

/// Parses text that is either a launch file (read by its own words) or a
/// YAML job spec, decided as `plan` decides (script/kind.rs).
pub fn from_text(text: &str, source: &str) -> Result<Loaded> {
    if text.trim().is_empty() {
        return Err(Error::bad(format!("{source} is empty")));
    }
    if crate::script::kind::of(text, Path::new(source))? == crate::script::kind::Kind::Shell {
        let (spec, warnings) = sbatch::parse(text, source)?;
        return Ok(Loaded {
            spec,
            source: source.to_string(),
            warnings,
        });
    }
    let spec = parse_yaml(text, source)?;
    Ok(Loaded {
        spec,
        source: source.to_string(),
        warnings: vec![],
    })
}

fn parse_yaml(text: &str, source: &str) -> Result<JobSpec> {
    crate::yaml::from_str(text).map_err(|msg| Error::bad(format!("{source}: {msg}")))
}
