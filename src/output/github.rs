//! GitHub Actions output: `::error::`/`::warning::` workflow commands, then the
//! human-readable report so the job log still explains itself.

use std::io::Write;

use super::Report;

pub(super) fn write<R: Report>(report: &R, w: &mut dyn Write) -> std::io::Result<()> {
    for (level, message) in report.annotations() {
        writeln!(w, "::{level}::{}", escape(&message))?;
    }
    report.write_text(w)
}

/// Workflow commands end at a newline; GitHub's escaping keeps messages whole.
fn escape(message: &str) -> String {
    message
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

#[cfg(test)]
mod tests {
    #[test]
    fn newlines_and_percent_are_escaped() {
        assert_eq!(super::escape("a%b\nc"), "a%25b%0Ac");
    }
}
