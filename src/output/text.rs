//! The one rule for showing people text that came from input (a dataset
//! name, a path, a log line, a frame of a snapshot): control characters are
//! escaped, so `ESC ]0;…BEL` cannot retitle the terminal and `ESC [2J`
//! cannot clear it, and long values are cut with an ellipsis so one field
//! cannot fill a screen. [`shown`] is for a value placed in a message;
//! [`escape_controls`] is applied to every text report and error line as a
//! whole, so a value some report forgot to pass through [`shown`] is still
//! harmless. JSON and YAML escape control characters themselves.

use crate::limits::MAX_SHOWN_CHARS;

/// Whether `c` is a C0 or C1 control character or DEL.
fn is_control(c: char) -> bool {
    c.is_control()
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// `text` with every control character escaped except those in `keep`.
pub fn escape_controls(text: &str, keep: &[char]) -> String {
    if !text.chars().any(|c| is_control(c) && !keep.contains(&c)) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_control(c) && !keep.contains(&c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as a value in a message: control characters (newlines too)
/// escaped, cut after [`MAX_SHOWN_CHARS`] characters with `…`.
pub fn shown(text: &str) -> String {
    shown_within(text, MAX_SHOWN_CHARS)
}

/// [`shown`] with a caller's length (a log line in the evidence may be longer).
pub fn shown_within(text: &str, max_chars: usize) -> String {
    let cut: String = text.chars().take(max_chars).collect();
    let mut out = escape_controls(&cut, &[]);
    if text.chars().nth(max_chars).is_some() {
        out.push('…');
    }
    out
}

/// A text report as it reaches the terminal: its own line breaks kept,
/// every other control character escaped.
pub fn safe_report(bytes: &[u8]) -> String {
    escape_controls(&String::from_utf8_lossy(bytes), &['\n', '\t'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_are_shown_not_sent() {
        // The dataset name of the issue: retitle the window, clear the screen.
        let name = "evil\x1b]0;pwned\x07\x1b[2J";
        assert_eq!(shown(name), "evil\\x1b]0;pwned\\x07\\x1b[2J");
        // C1 CSI (U+009B) acts like ESC [ on some terminals.
        assert_eq!(shown("a\u{9b}2J"), "a\\x9b2J");
        assert_eq!(
            safe_report(b"row\t1\n\x1b[31mred\n"),
            "row\t1\n\\x1b[31mred\n"
        );
    }

    #[test]
    fn long_values_are_cut_with_an_ellipsis() {
        let long = "x".repeat(10_000);
        let s = shown(&long);
        assert_eq!(s.chars().count(), MAX_SHOWN_CHARS + 1);
        assert!(s.ends_with('…'));
        assert_eq!(shown("short"), "short");
        // Cutting counts characters, never splits one.
        assert!(shown(&"é".repeat(500)).ends_with("é…"));
    }
}
