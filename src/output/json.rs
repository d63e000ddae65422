//! JSON output: the report's serde form, pretty-printed, one document.

use std::io::Write;

use super::Report;

pub(super) fn write<R: Report>(report: &R, w: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, report)?;
    writeln!(w)
}
