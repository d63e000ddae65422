//! Turning raw log bytes into text the parsers can match: ANSI colour,
//! cursor and title escape sequences removed and other control characters
//! dropped (tabs kept), by `vte`, the terminal-state parser Alacritty uses,
//! rather than a hand-written escape matcher; bytes that are not UTF-8 become
//! U+FFFD (a log with a stray Latin-1 byte is still a log). A line with no
//! control byte (nearly all of them) is copied without running the parser.

/// The printable text of one line.
#[derive(Default)]
struct Printable(String);

impl vte::Perform for Printable {
    fn print(&mut self, c: char) {
        self.0.push(c);
    }

    fn execute(&mut self, byte: u8) {
        if byte == b'\t' {
            self.0.push('\t');
        }
    }
}

/// Lossy UTF-8 without ANSI escape sequences or other control characters.
pub fn clean_line(bytes: &[u8]) -> String {
    if !bytes.iter().any(|&b| b < 0x20 && b != b'\t') {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut out = Printable(String::with_capacity(bytes.len()));
    vte::Parser::new().advance(&mut out, bytes);
    out.0
}

#[cfg(test)]
mod tests {
    use super::clean_line;

    #[test]
    fn colour_codes_and_cursor_moves_go_away() {
        assert_eq!(clean_line(b"\x1b[1;31mKilled\x1b[0m"), "Killed");
        assert_eq!(clean_line(b"\x1b[2K\x1b[1Gdone"), "done");
        assert_eq!(clean_line(b"\x1b]0;title\x07text"), "text");
        // Private-mode CSI and ST-terminated OSC, as tmux and ls --hyperlink write.
        assert_eq!(clean_line(b"\x1b[?25lgo\x1b[?25h"), "go");
        assert_eq!(
            clean_line(b"\x1b]8;;file:///x\x1b\\link\x1b]8;;\x1b\\ end"),
            "link end"
        );
        // `tput sgr0` on xterm-like terminals writes ESC ( B before ESC [ m: a
        // character-set selection whose final byte is not text.
        assert_eq!(clean_line(b"\x1b[1mKilled\x1b(B\x1b[m"), "Killed");
        // A DCS string (tmux passthrough) is not text either.
        assert_eq!(clean_line(b"\x1bPtmux;x\x1b\\Killed"), "Killed");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(clean_line(b"caf\xe9 ok"), "caf\u{fffd} ok");
        assert_eq!(clean_line(b"a\tb\x00c"), "a\tbc");
        assert_eq!(clean_line(b"\x1b[31mcaf\xe9\x1b[0m"), "caf\u{fffd}");
    }
}
