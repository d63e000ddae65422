//! JSON output: the report's serde form, pretty-printed, one document; and
//! the same writer for every other JSON headroom writes (the watch summary
//! and timeline, the probe's files). JSON itself escapes only U+0000-U+001F,
//! so DEL and the C1 controls (U+0080-U+009F) from a log line or a process
//! name would reach a terminal that `cat`s or `jq`s the file raw; here they
//! are written as `\u007f`, which every JSON reader decodes back.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

use super::Report;

pub(super) fn write<R: Report>(report: &R, w: &mut dyn Write) -> io::Result<()> {
    write_pretty(report, &mut *w)?;
    writeln!(w)
}

/// `value` as pretty JSON (no trailing newline), every control character escaped.
pub fn write_pretty<T: Serialize + ?Sized, W: Write>(value: &T, w: W) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, Escaping(PrettyFormatter::new()));
    value.serialize(&mut ser).map_err(io::Error::other)
}

/// `value` as one line of JSON (no newline), every control character escaped.
pub fn write_line<T: Serialize + ?Sized, W: Write>(value: &T, w: W) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, Escaping(CompactFormatter));
    value.serialize(&mut ser).map_err(io::Error::other)
}

/// [`write_pretty`] into a string.
pub fn to_string_pretty<T: Serialize + ?Sized>(value: &T) -> io::Result<String> {
    let mut buf = Vec::new();
    write_pretty(value, &mut buf)?;
    String::from_utf8(buf).map_err(io::Error::other)
}

/// A formatter that lays out as `F` does and escapes what JSON lets through.
struct Escaping<F>(F);

impl<F: Formatter> Formatter for Escaping<F> {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        // serde_json has already escaped quotes, backslashes and C0 controls.
        let mut start = 0;
        for (i, c) in s.char_indices().filter(|(_, c)| c.is_control()) {
            w.write_all(&s.as_bytes()[start..i])?;
            write!(w, "\\u{:04x}", c as u32)?;
            start = i + c.len_utf8();
        }
        w.write_all(&s.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn del_and_c1_controls_are_escaped_and_read_back() {
        let value = serde_json::json!({"line": "a\u{7f}b\u{9b}2J\u{1b}c\"é"});
        let text = to_string_pretty(&value).unwrap();
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains(r#"a\u007fb\u009b2J\u001bc\"é"#), "{text}");
        // Laid out as serde_json's own pretty printer lays it out.
        let plain = serde_json::to_string_pretty(&serde_json::json!({"a": [1, 2]})).unwrap();
        assert_eq!(
            to_string_pretty(&serde_json::json!({"a": [1, 2]})).unwrap(),
            plain
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
        let mut line = Vec::new();
        write_line(&value, &mut line).unwrap();
        assert!(!line.contains(&0x7f) && !line.contains(&b'\n'));
    }
}
