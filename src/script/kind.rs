//! What a JOB file is: a YAML job spec or a shell launch file, decided the
//! same way for `plan`, `check` and the sbatch reader. A `#!` line or an
//! `#SBATCH` directive says shell; otherwise the text is read as whichever
//! parses: a YAML job spec, or lines that are shell commands (a launch file
//! saved without a shebang, or a README's command line saved as it is
//! given). When neither reads, the one-line error names both.

use std::path::Path;

use crate::error::{Error, Result};
use crate::output::{shown, shown_within};
use crate::spec::JobSpec;

/// The kind of a JOB file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A YAML (or JSON) job spec.
    Yaml,
    /// Shell commands: an sbatch script or any launch file.
    Shell,
}

/// Decides what `text` (read from `path`) is.
pub fn of(text: &str, path: &Path) -> Result<Kind> {
    let source = path.display().to_string();
    if text.starts_with("#!") || text.lines().any(|l| l.trim_start().starts_with("#SBATCH")) {
        return Ok(Kind::Shell);
    }
    crate::spec::check_yaml_depth(text, &source)?;
    let yaml_err = match crate::yaml::from_str::<JobSpec>(text) {
        Ok(_) => return Ok(Kind::Yaml),
        Err(e) => e.to_string().replace('\n', " "),
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if matches!(ext, "yaml" | "yml" | "json") {
        return Err(Error::bad(format!("{}: {}", shown(&source), yaml_err)));
    }
    match not_a_command(text) {
        None => Ok(Kind::Shell),
        Some(why) => Err(Error::bad(format!(
            "{}: neither a YAML job spec ({}) nor a shell launch file ({})",
            shown(&source),
            shown_within(&yaml_err, 300),
            shown_within(&why, 200)
        ))),
    }
}

/// The first line that no shell would run as a command (a YAML `key:`, a
/// `- item`, a flow mapping), or None when every line could be one.
fn not_a_command(text: &str) -> Option<String> {
    let mut any = false;
    for item in super::shell::items(text) {
        let super::shell::Item::Cmd(c) = item else {
            any = true;
            continue;
        };
        let first = c.text.split_whitespace().next().unwrap_or("");
        let is_command = !first.ends_with(':')
            && !first.starts_with(['-', '{', '}', '"', '\''])
            && !first.contains(": ");
        if !is_command {
            return Some(format!("line {}: `{}` is not a command", c.line, first));
        }
        any = true;
    }
    (!any).then(|| "no command in it".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> std::result::Result<Kind, String> {
        of(text, Path::new("job")).map_err(|e| e.to_string())
    }

    #[test]
    fn yaml_specs_shell_lines_and_neither() {
        assert_eq!(
            kind("dataset: reddit\nloader: {batch_size: 512}\n"),
            Ok(Kind::Yaml)
        );
        assert_eq!(
            kind("python PyG/gnn_train_default.py --dataset ogbn-products\n"),
            Ok(Kind::Shell)
        );
        assert_eq!(
            kind("CUDA_VISIBLE_DEVICES=0 python -u t.py\n"),
            Ok(Kind::Shell)
        );
        assert_eq!(kind("#!/bin/bash\ndataset: x\n"), Ok(Kind::Shell));
        // A spec with a misspelt field is neither: both readings are named.
        let err = kind("dataset: reddit\nloadr: {batch_size: 512}\n").unwrap_err();
        assert!(err.contains("neither a YAML job spec"), "{err}");
        assert!(err.contains("loadr") && err.contains("line 1"), "{err}");
        assert!(err.contains("`dataset:` is not a command"), "{err}");
    }

    #[test]
    fn a_yaml_file_name_gets_the_yaml_error_alone() {
        let err = of("loadr: 1\n", Path::new("a.yaml"))
            .unwrap_err()
            .to_string();
        assert!(!err.contains("neither"), "{err}");
    }
}
