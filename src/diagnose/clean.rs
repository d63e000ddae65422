//! Turning raw log bytes into text the parsers can match: lossy UTF-8 (a log
//! with a stray Latin-1 byte is still a log), ANSI colour and cursor escape
//! sequences removed, other control characters dropped.

/// Lossy UTF-8 without ANSI escape sequences or other control characters.
pub fn clean_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if !text.bytes().any(|b| b < 0x20 && b != b'\t') {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => {
                    for d in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&d) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ESC \.
                Some(']') => {
                    while let Some(d) = chars.next() {
                        if d == '\x07' || (d == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            }
        } else if c >= ' ' || c == '\t' {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::clean_line;

    #[test]
    fn colour_codes_and_cursor_moves_go_away() {
        assert_eq!(clean_line(b"\x1b[1;31mKilled\x1b[0m"), "Killed");
        assert_eq!(clean_line(b"\x1b[2K\x1b[1Gdone"), "done");
        assert_eq!(clean_line(b"\x1b]0;title\x07text"), "text");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(clean_line(b"caf\xe9 ok"), "caf\u{fffd} ok");
        assert_eq!(clean_line(b"a\tb\x00c"), "a\tbc");
    }
}
