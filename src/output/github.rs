//! GitHub Actions output: `::error file=…,line=…::` workflow commands, then
//! the human-readable report so the job log still explains itself, with
//! command processing stopped around it (`::stop-commands::`). An
//! annotation with a place is drawn by GitHub on that line of the file (the
//! `#SBATCH --mem` line, a loader's call); one without is shown on the run.

use std::fmt;
use std::io::Write;

use super::Report;

/// How GitHub shows an annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Red: the job does not fit, the run failed.
    Error,
    /// Yellow: something to know.
    Warning,
    /// Blue: what to change.
    Notice,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Notice => "notice",
        })
    }
}

/// A line of a file, as GitHub places an annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The path, relative to the repository's root when it is under it.
    pub file: String,
    /// 1-based line number.
    pub line: u32,
}

/// One annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    /// Its level.
    pub level: Level,
    /// The line it belongs to, when one is known.
    pub place: Option<Place>,
    /// A short title (GitHub shows it above the message).
    pub title: Option<String>,
    /// The message.
    pub message: String,
}

impl Annotation {
    /// An annotation with no place and no title.
    pub fn new(level: Level, message: String) -> Self {
        Annotation {
            level,
            place: None,
            title: None,
            message,
        }
    }
}

pub(super) fn write<R: Report>(report: &R, w: &mut dyn Write) -> std::io::Result<()> {
    for a in report.annotations() {
        writeln!(w, "{}", command(&a))?;
    }
    // The report quotes input (log lines, paths, names); a quoted line that
    // starts with `::` or `##[` would be run as a workflow command. GitHub's
    // way to print such text is to stop command processing around it, with
    // a token the text cannot contain before it is written.
    let mut body = Vec::new();
    report.write_text(&mut body)?;
    let token = format!("headroom-{:016x}", fnv(&body));
    writeln!(w, "::stop-commands::{token}")?;
    w.write_all(&body)?;
    writeln!(w, "::{token}::")
}

/// FNV-1a: a token that depends on every byte of the text it fences.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The workflow command for `a`: `::error file=f,line=3,title=t::message`.
pub fn command(a: &Annotation) -> String {
    let mut props = Vec::new();
    if let Some(p) = &a.place {
        props.push(format!("file={}", escape_property(&p.file)));
        props.push(format!("line={}", p.line));
    }
    if let Some(t) = &a.title {
        props.push(format!("title={}", escape_property(t)));
    }
    let props = if props.is_empty() {
        String::new()
    } else {
        format!(" {}", props.join(","))
    };
    format!("::{}{props}::{}", a.level, escape_data(&a.message))
}

/// A message ends at a newline; GitHub's escaping keeps it whole
/// (@actions/core's `escapeData`).
fn escape_data(message: &str) -> String {
    message
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property also ends at `,` and `:` (@actions/core's `escapeProperty`).
fn escape_property(value: &str) -> String {
    escape_data(value).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_and_percent_are_escaped() {
        assert_eq!(escape_data("a%b\nc"), "a%25b%0Ac");
    }

    #[test]
    fn a_place_becomes_file_and_line_properties() {
        let a = Annotation {
            level: Level::Error,
            place: Some(Place {
                file: "jobs/a,b:c.sbatch".into(),
                line: 5,
            }),
            title: Some("headroom: does not fit".into()),
            message: "host 178 GiB: over\n128 GiB".into(),
        };
        // As @actions/core writes it: properties escape `,` and `:` too.
        assert_eq!(
            command(&a),
            "::error file=jobs/a%2Cb%3Ac.sbatch,line=5,title=headroom%3A does not fit::host 178 GiB: over%0A128 GiB"
        );
        let bare = Annotation::new(Level::Warning, "x".into());
        assert_eq!(command(&bare), "::warning::x");
    }
}
