//! Output: every report is a plain serde struct that can also draw itself for
//! a person; each machine format is one file here behind [`Report`].
//!
//! Verbs build a report and hand it to [`emit`] with the format the user asked
//! for, so no verb formats JSON or YAML by hand.

pub mod github;
mod json;
mod text;
mod yaml;

pub use github::{Annotation, Level, Place};
pub use json::{to_string_pretty as json_string, write_line as json_line};
pub use text::{escape_controls, shown, shown_within};

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

    /// Annotations for `--format github`.
    fn annotations(&self) -> Vec<Annotation> {
        Vec::new()
    }
}

/// Writes `report` to `w` in `format`.
pub fn emit<R: Report>(report: &R, format: Format, w: &mut dyn Write) -> Result<()> {
    let res = match format {
        // Text for people is drawn whole, then escaped as a whole: no
        // control character from input reaches the terminal (text.rs).
        Format::Table | Format::Github => {
            let mut buf = Vec::new();
            let drawn = match format {
                Format::Table => report.write_text(&mut buf),
                _ => github::write(report, &mut buf),
            };
            drawn.and_then(|()| w.write_all(text::safe_report(&buf).as_bytes()))
        }
        Format::Json => json::write(report, w),
        Format::Yaml => yaml::write(report, w),
    };
    match res {
        Ok(()) => Ok(()),
        // A closed pipe (`| head`) is the reader's choice, not our failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::io("<stdout>", e)),
    }
}
