//! Output: every report is a plain serde struct that can also draw itself for
//! a person; each machine format is one file here behind [`Report`].
//!
//! Verbs build a report and hand it to [`emit`] with the format the user asked
//! for, so no verb formats JSON or YAML by hand.

mod github;
mod json;
mod yaml;

use std::io::Write;

use serde::Serialize;

use crate::error::{Error, Result};

/// The output formats a verb can be asked for with `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// Tables and sentences for people.
    #[default]
    Table,
    /// One JSON document.
    Json,
    /// One YAML document.
    Yaml,
    /// GitHub Actions workflow commands (`::error::`), then the table.
    Github,
}

/// A verb's result: serializable for machines, drawable for people.
pub trait Report: Serialize {
    /// Writes the human-readable form (tables, verdict lines).
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()>;

    /// Annotations for `--format github`: (level, message) pairs.
    fn annotations(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// Writes `report` to `w` in `format`.
pub fn emit<R: Report>(report: &R, format: Format, w: &mut dyn Write) -> Result<()> {
    let res = match format {
        Format::Table => report.write_text(w),
        Format::Json => json::write(report, w),
        Format::Yaml => yaml::write(report, w),
        Format::Github => github::write(report, w),
    };
    match res {
        Ok(()) => Ok(()),
        // A closed pipe (`| head`) is the reader's choice, not our failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::io("<stdout>", e)),
    }
}
