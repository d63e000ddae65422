//! YAML output: the report's serde form as one YAML document.

use std::io::Write;

use super::Report;

pub(super) fn write<R: Report>(report: &R, w: &mut dyn Write) -> std::io::Result<()> {
    let text = crate::yaml::to_string(report).map_err(std::io::Error::other)?;
    w.write_all(text.as_bytes())
}
