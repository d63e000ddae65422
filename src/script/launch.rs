//! Following a launch file (an sbatch script, or any file of shell
//! commands, with or without a shebang) to every Python program it runs:
//! the `#SBATCH` directives, the variables it sets (and the `SLURM_*`
//! variables Slurm sets from the directives), `cd`, launch files it calls
//! (`bash x.sh "$@"`, `sh`, `source`, `.`, `./x.sh`: their positional
//! arguments bound), `for` loops (each value planned), and each launch line
//! through its launchers (launchers.rs). Words are split as the shell splits
//! them (`shlex`), after `$VAR`, `${VAR:-default}`, `$1`, `"$@"`
//! substitution (subst.rs). A relative path that is not there from the
//! directory the file runs in is looked for from the directories above it
//! (a repository's scripts are often run from its root), and said.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::py::{Found, Value};
use super::shell::{Item, items};
use super::subst::{Env, substitute};

/// Launch files called from launch files, at most this deep.
const MAX_DEPTH: usize = 4;
/// Python runs planned from one launch file, at most (loops multiply them).
const MAX_RUNS: usize = 64;

/// One Python program a launch file runs.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The entry point (`train.py`, or `pkg/mod.py` for `-m pkg.mod`).
    pub script: PathBuf,
    /// The arguments it gets.
    pub argv: Vec<String>,
    /// `train.sbatch:14`, the launch line (and the lines that called it).
    pub at: String,
    /// Ranks per node the launcher starts, and where that was read.
    pub ranks: Option<Found>,
    /// `#SBATCH` directives: (option without dashes, value, `file:line`).
    pub directives: Vec<(String, String, String)>,
    /// Environment the program sees, by name.
    pub env: HashMap<String, Found>,
    /// The directory it runs in (relative paths it opens start there).
    pub cwd: PathBuf,
    /// Options of a launch line continued over several lines (`\`), each
    /// at the line it is written on (`--batch-size` → `run.sh:61`).
    pub option_at: HashMap<String, String>,
}

/// Everything a launch file runs.
#[derive(Debug, Clone, Default)]
pub struct Followed {
    /// The Python runs, in the order the file runs them.
    pub runs: Vec<Launch>,
    /// `#SBATCH` directives of the file itself.
    pub directives: Vec<(String, String, String)>,
    /// Variables as the last command left them (the directives' `SLURM_*` too).
    pub env: HashMap<String, Found>,
    /// What the reader assumed on the way (a directory guessed for a path).
    pub notes: Vec<String>,
    /// A substitution that grew past the limit (the message): reading stopped there.
    pub error: Option<String>,
}

/// Reads `text` (the launch file at `path`) and every file it calls.
pub fn follow_all(text: &str, path: &Path) -> Followed {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let mut w = Walker {
        out: Followed::default(),
        top: dir.clone(),
    };
    w.out.env.insert(
        "SLURM_SUBMIT_DIR".into(),
        Found::at(Value::Str(dir.display().to_string()), "sbatch"),
    );
    let mut state = State {
        env: Env::new(w.out.env.clone()),
        lines: std::rc::Rc::new(text.lines().map(String::from).collect()),
        cwd: dir,
        label: label_of(path),
        via: String::new(),
    };
    w.walk(&items(text), &mut state, 0);
    w.out.env = state.env.vars;
    w.out
}

/// The first Python run of `text` (the sbatch script at `path`), if any.
pub fn follow(text: &str, path: &Path) -> Option<Launch> {
    let f = follow_all(text, path);
    f.runs.into_iter().next()
}

fn label_of(path: &Path) -> String {
    path.file_name()
        .map_or("script".into(), |n| n.to_string_lossy().to_string())
}

struct State {
    env: Env,
    /// The lines of the file being walked.
    lines: std::rc::Rc<Vec<String>>,
    cwd: PathBuf,
    label: String,
    /// ` (called at x.sh:6)` for a file called from another.
    via: String,
}

struct Walker {
    out: Followed,
    /// The directory of the file given to headroom.
    top: PathBuf,
}

impl Walker {
    fn walk(&mut self, list: &[Item], st: &mut State, depth: usize) {
        for item in list {
            if self.out.runs.len() >= MAX_RUNS || self.out.error.is_some() {
                return;
            }
            match item {
                Item::Cmd(c) => self.command(&c.text, c.line, st, depth),
                Item::For {
                    line,
                    var,
                    words,
                    body,
                } => {
                    let at = format!("{}:{line}", st.label);
                    let Some(words) = self.subst(words, &st.env, &at) else {
                        return;
                    };
                    let values = split(&words);
                    for v in values.iter().take(16) {
                        st.env.set(var, v, &format!("{at} ({var}={v})"));
                        let via = format!(" ({var}={v}){}", st.via);
                        let saved = std::mem::replace(&mut st.via, via);
                        self.walk(body, st, depth);
                        st.via = saved;
                    }
                }
            }
        }
    }

    fn command(&mut self, text: &str, line: usize, st: &mut State, depth: usize) {
        let at = format!("{}:{line}", st.label);
        if let Some(rest) = text.strip_prefix("#SBATCH") {
            if depth == 0 {
                let words =
                    shlex::split(rest.split(" #").next().unwrap_or(rest)).unwrap_or_default();
                for (k, v) in options(&words) {
                    st.env.slurm(&k, &v, &at);
                    self.out.directives.push((k, v, at.clone()));
                }
            }
            return;
        }
        let Some(text) = self.subst(text, &st.env, &at) else {
            return;
        };
        let words = without_redirections(split(&text));
        let Some(first) = words.first().map(String::as_str) else {
            return;
        };
        match first {
            "export" | "declare" | "local" | "readonly" => {
                for w in &words[1..] {
                    st.env.assign(w, &at);
                }
            }
            "cd" | "pushd" => {
                if let Some(d) = words.get(1).filter(|d| !d.starts_with(['$', '-', '~'])) {
                    st.cwd = self
                        .existing(&st.cwd, d, &at)
                        .unwrap_or_else(|| st.cwd.join(d));
                }
            }
            "bash" | "sh" | "zsh" | "source" | "." => {
                if let Some(i) = words[1..].iter().position(|w| !w.starts_with('-')) {
                    self.call(&words[i + 1..], first, st, depth, &at);
                }
            }
            w if w.ends_with(".sh") => self.call(&words, "bash", st, depth, &at),
            _ if words.iter().all(|w| st.env.is_assignment(w)) => {
                for w in &words {
                    st.env.assign(w, &at);
                }
            }
            _ => {
                let at = format!("{at}{}", st.via);
                if let Some(mut l) =
                    super::launchers::launch_line(&words, &at, &st.cwd, &st.env.vars)
                {
                    if !l.script.exists()
                        && let Some((found, rel)) = self.relocated(&l.script, &st.cwd, &at)
                    {
                        // The run starts in the directory the path was found under.
                        l.cwd = root_of(&found, &rel).unwrap_or(l.cwd);
                        l.script = found;
                    }
                    l.env = st.env.vars.clone();
                    l.directives = self.out.directives.clone();
                    l.option_at = option_lines(&st.lines, line, &st.label, &st.via);
                    self.out.runs.push(l);
                }
            }
        }
    }

    /// `text` substituted; None (the error kept) once a value grows past the limit.
    fn subst(&mut self, text: &str, env: &Env, at: &str) -> Option<String> {
        if self.out.error.is_some() {
            return None;
        }
        match substitute(text, env) {
            Ok(t) => Some(t),
            Err(partial) => {
                let e = crate::limits::exceeded(
                    &format!("{at}: {}", crate::output::shown_within(&partial, 80)),
                    "the longest variable",
                    format!(
                        "{} bytes after substituting variables",
                        crate::limits::MAX_VARIABLE_BYTES
                    ),
                );
                self.out.error = Some(e.to_string());
                None
            }
        }
    }

    /// `bash x.sh a b` / `source x.sh`: the file read with its arguments bound.
    fn call(&mut self, words: &[String], how: &str, st: &mut State, depth: usize, at: &str) {
        let Some(file) = words.first() else { return };
        if depth >= MAX_DEPTH {
            return;
        }
        let Some(path) = self.existing(&st.cwd, file, at) else {
            self.out
                .notes
                .push(format!("{at} runs {file}, which is not there to read"));
            return;
        };
        let Ok(text) = crate::input::read_text(&path, "a launch file", false) else {
            return;
        };
        let mut inner = State {
            env: st.env.with_positional(&words[1..]),
            lines: std::rc::Rc::new(text.lines().map(String::from).collect()),
            cwd: st.cwd.clone(),
            label: label_of(&path),
            via: format!(" (called at {at}{})", st.via),
        };
        // The repository's root, when the file was found from a directory above.
        if let Some(root) = root_of(&path, file) {
            inner.cwd = root;
        }
        self.walk(&items(&text), &mut inner, depth + 1);
        if matches!(how, "source" | ".") {
            st.env.vars = inner.env.vars;
            st.cwd = inner.cwd;
        }
    }

    /// `rel` from `cwd`, else from the directories above the launch file
    /// given to headroom (said in the notes).
    fn existing(&mut self, cwd: &Path, rel: &str, at: &str) -> Option<PathBuf> {
        let found = self.here_or_above(cwd, rel, Path::exists)?;
        if found == cwd.join(rel) {
            return Some(found);
        }
        self.out.notes.push(format!(
            "{at}: {rel} is not there from {}; read {} (as if run from the directory above)",
            cwd.display(),
            found.display()
        ));
        Some(found)
    }

    /// `cwd/rel`, else `rel` from the first of the directories above the
    /// launch file given to headroom that holds it as `wanted` asks (any
    /// entry for a `cd`, a file for a script).
    fn here_or_above(&self, cwd: &Path, rel: &str, wanted: fn(&Path) -> bool) -> Option<PathBuf> {
        std::iter::once(cwd)
            .chain(self.top.ancestors().take(5))
            .map(|d| d.join(rel))
            .find(|p| wanted(p))
    }

    /// A script that is not where the line says: its path from the
    /// directories above, else its last components (the longest first)
    /// from `cwd` and the directories above the file given to headroom. A
    /// path under a variable the file does not set (`$PROJECT/src/train.py`)
    /// or inside a container's mount arrives here; the note says so.
    fn relocated(&mut self, script: &Path, cwd: &Path, at: &str) -> Option<(PathBuf, String)> {
        if let Ok(rel) = script.strip_prefix(cwd) {
            let rel = rel.display().to_string();
            if let Some(found) = self.existing(cwd, &rel, at) {
                return Some((found, rel));
            }
        }
        let parts: Vec<String> = script
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        // Down to the file and its directory: a bare file name found above
        // could be another program of the same name.
        for k in 0..parts.len().saturating_sub(1).max(1) {
            let rel = parts[k..].join("/");
            if let Some(found) = self.here_or_above(cwd, &rel, Path::is_file) {
                self.out.notes.push(format!(
                    "{at}: {} is not there; read {} (its last components, found from the launch file's directory)",
                    script.display(),
                    found.display()
                ));
                return Some((found, rel));
            }
        }
        None
    }
}

/// Each option of the command starting at line `first` (1-based) that goes
/// on over `\`-continued lines, at the line it is written on, when that is
/// not the first (the command's own line, where the others are).
fn option_lines(lines: &[String], first: usize, label: &str, via: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut n = first;
    while let Some(text) = lines.get(n.wrapping_sub(1)) {
        // Options on the first line are at the command's line already.
        for w in text.split_whitespace().filter(|_| n > first) {
            let w = w.trim_matches(['"', '\'']);
            let opt = w.split_once('=').map_or(w, |(o, _)| o);
            if opt.starts_with('-') && opt.len() > 1 {
                out.entry(opt.to_string())
                    .or_insert_with(|| format!("{label}:{n}{via}"));
            }
        }
        if !text.trim_end().ends_with('\\') {
            break;
        }
        n += 1;
    }
    out
}

/// The directory `rel` was found under, when `path` = that directory + `rel`.
fn root_of(path: &Path, rel: &str) -> Option<PathBuf> {
    let n = Path::new(rel).components().count();
    let root = path.ancestors().nth(n)?;
    (root.join(rel) == path).then(|| root.to_path_buf())
}

/// Words as the shell splits them; an unbalanced quote falls back to whitespace.
fn split(text: &str) -> Vec<String> {
    shlex::split(text).unwrap_or_else(|| {
        text.split_whitespace()
            .map(|w| w.trim_matches(['"', '\'']).to_string())
            .collect()
    })
}

/// Drops `> log`, `2>&1`, `>>out`, `< in` and their targets.
fn without_redirections(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for w in words {
        if std::mem::take(&mut skip) {
            continue;
        }
        let op = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if op.starts_with('>') || op.starts_with('<') {
            skip = op.trim_start_matches(['>', '<', '&']).is_empty() && !op.ends_with('&');
            if op.contains(">&") && op.len() > 2 {
                skip = false;
            }
            continue;
        }
        out.push(w);
    }
    out
}

/// `--mem=256G`, `--mem 256G`, `-c 8`, `-c8` → (mem, 256G), (c, 8).
fn options(words: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if let Some(long) = w.strip_prefix("--") {
            match long.split_once('=') {
                Some((k, v)) => out.push((k.to_string(), v.to_string())),
                None if i < words.len() && !words[i].starts_with('-') => {
                    out.push((long.to_string(), words[i].clone()));
                    i += 1;
                }
                None => out.push((long.to_string(), String::new())),
            }
        } else if let Some(short) = w.strip_prefix('-') {
            // The option letter is one character, not one byte: a mangled
            // or non-ASCII directive must not split a character in two.
            let first = short.chars().next().map_or(0, char::len_utf8);
            let (k, v) = short.split_at(first);
            if !v.is_empty() {
                out.push((k.to_string(), v.trim_start_matches('=').to_string()));
            } else if i < words.len() {
                out.push((k.to_string(), words[i].clone()));
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "launch_tests.rs"]
mod tests;
