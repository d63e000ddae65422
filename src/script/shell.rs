//! Launch files as the shell reads them, without running a shell: logical
//! lines (a `\` at the end continues a line, which keeps its first line's
//! number), comments (a `#` that starts a word outside quotes), simple
//! commands split at unquoted `;`, `&&`, `||`, `|`, `|&` and `&`, and the
//! control words around them: `for VAR in WORDS; do ... done` is kept as a
//! loop (launch.rs plans each value), `if`/`while`/`case` bodies are read as
//! if they ran. `#SBATCH` lines are kept whole for the directives.

/// One simple command (or an `#SBATCH` line) and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Cmd {
    /// The file's line number of the command's first line.
    pub line: usize,
    /// Its text, comments removed, not yet substituted.
    pub text: String,
}

/// A command or a `for` loop over words.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A simple command.
    Cmd(Cmd),
    /// `for var in words; do body; done`, at `line`.
    For {
        /// The loop's first line.
        line: usize,
        /// The loop variable.
        var: String,
        /// The words it takes, not yet substituted.
        words: String,
        /// The commands it runs for each.
        body: Vec<Item>,
    },
}

/// Words that only steer control flow: dropped from the front of a command.
const CONTROL: &[&str] = &[
    "then", "else", "elif", "if", "do", "done", "fi", "while", "until", "{", "}", "esac", ";;", "!",
];

/// The commands of `text`, loops kept as loops.
pub fn items(text: &str) -> Vec<Item> {
    let mut cmds = Vec::new();
    for (line, logical) in logical_lines(text) {
        if logical.trim_start().starts_with("#SBATCH") {
            cmds.push(Cmd {
                line,
                text: logical.trim().to_string(),
            });
            continue;
        }
        for part in split_commands(&logical) {
            cmds.push(Cmd { line, text: part });
        }
    }
    let mut it = cmds.into_iter().peekable();
    nest(&mut it, 0)
}

/// Builds items until an unmatched `done` (depth > 0) or the end.
fn nest(it: &mut std::iter::Peekable<std::vec::IntoIter<Cmd>>, depth: usize) -> Vec<Item> {
    let mut out = Vec::new();
    while let Some(mut c) = it.next() {
        let first = c.text.split_whitespace().next().unwrap_or("");
        if first == "for" && depth < 8 {
            let mut words = c.text.split_whitespace().skip(1);
            let var = words.next().unwrap_or("").to_string();
            let rest: Vec<&str> = words.collect();
            let words = match rest.split_first() {
                Some((&"in", w)) => w.join(" "),
                _ => "\"$@\"".to_string(),
            };
            let body = nest(it, depth + 1);
            out.push(Item::For {
                line: c.line,
                var,
                words,
                body,
            });
            continue;
        }
        if first == "done" && depth > 0 {
            return out;
        }
        // `do python x.py` / `then python x.py`: the control word is not the command.
        loop {
            let trimmed = c.text.trim_start();
            let Some(w) = trimmed.split_whitespace().next() else {
                break;
            };
            if !CONTROL.contains(&w) {
                break;
            }
            c.text = trimmed[w.len()..].trim_start().to_string();
        }
        if !c.text.trim().is_empty() {
            out.push(Item::Cmd(c));
        }
    }
    out
}

/// Lines with continuations joined, comments dropped, with their first line number.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (n, raw) in text.lines().enumerate() {
        let raw = raw.trim_end_matches('\r');
        let body = if raw.trim_start().starts_with("#SBATCH") && !open {
            raw.to_string()
        } else {
            strip_comment(raw)
        };
        let cont = body.trim_end().ends_with('\\');
        let body = if cont {
            body.trim_end().trim_end_matches('\\').to_string()
        } else {
            body
        };
        match out.last_mut() {
            Some((_, prev)) if open => {
                prev.push(' ');
                prev.push_str(body.trim());
            }
            _ => out.push((n + 1, body.trim().to_string())),
        }
        open = cont;
    }
    out.retain(|(_, l)| !l.is_empty());
    out
}

/// `cmd --a 1  # note` → `cmd --a 1`; a `#` inside quotes or a word stays.
fn strip_comment(line: &str) -> String {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && prev.is_whitespace() => return line[..i].to_string(),
            None => {}
        }
        prev = c;
    }
    line.to_string()
}

/// Splits at unquoted `;`, `&&`, `||`, `|`, `|&` and a lone `&`.
fn split_commands(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                cur.push(c);
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                cur.push(c);
            }
            // `2>&1`, `>&2`, `&>log`: redirections, not separators.
            None if c == '&' && (cur.ends_with('>') || next == Some('>')) => cur.push(c),
            None if matches!(c, ';' | '&' | '|') => {
                if matches!(
                    (c, next),
                    ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&'))
                ) {
                    i += 1;
                }
                if c == ';' && next == Some(';') {
                    i += 1;
                }
                out.push(std::mem::take(&mut cur));
            }
            None => cur.push(c),
        }
        i += 1;
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
