//! What the shell, the terminal or the IDE prints when the job's process dies
//! of a signal, in every wording found in real reports:
//!
//! - bash: `Killed`, `Segmentation fault (core dumped)`, `Bus error`, with a
//!   batch script's `…/slurm_script: line 25: 1613720 Killed  python …` or a
//!   job-control `[1]+  Killed  python …` before it;
//! - the same word glued to the end of a tqdm bar (the bar ends in `]` and the
//!   shell writes its word after the last `\r` redraw, with no newline);
//! - zsh's lowercase `zsh: killed  python …`, fish's `fish: Job 1, 'python …'
//!   terminated by signal SIGKILL (Forced quit)`, macOS `Killed: 9`;
//! - Windows' access violation `exit code -1073741819 (0xC0000005)`, and the
//!   exit status an IDE, a CI runner or make reports (`Process finished with
//!   exit code 137`, `make: *** [...] Error 141`);
//! - `echo ${PIPESTATUS[@]}` followed (after the pipeline's own output, a
//!   line or two) by a status list holding 141;
//! - the same words in other locales ([`super::locale_words`]), pasted inside
//!   markdown (`**Killed**`, a `> ` quote, backticks), or written over a
//!   progress line whose tail is still there (`Killedg in train batch: 12 /
//!   263`);
//! - `Segmentation fault (core dumped)` glued to the end of any line (a
//!   download's last message, a log line without a newline);
//! - exit codes reported by other runners: PyCharm in any case, Azure
//!   Pipelines' `Bash exited with code 137`, kubectl's `command terminated
//!   with exit code 137`.

use std::sync::LazyLock;

use regex::Regex;

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};
use crate::diagnose::exit::ExitStatus;

struct Patterns {
    bash: Regex,
    glued: Regex,
    core_dumped: Regex,
    overwritten: Regex,
    zsh: Regex,
    fish: Regex,
    reported_exit: Regex,
}

static RE: LazyLock<Patterns> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(p).expect("static regex");
    Patterns {
        bash: r(
            r"^(?:.*: line [0-9]+: +[0-9]+ +|\[[0-9]+\][+-]? +)?(Killed|Bus error|Segmentation fault|Terminated|Aborted|Abort trap)(?:: [0-9]+)?(?: \(core dumped\))?(?:\s+\S.*)?$",
        ),
        glued: r(
            r"\](Killed|Bus error|Segmentation fault|Terminated|Aborted)(?: \(core dumped\))?\s*$",
        ),
        core_dumped: r(r"\S(Segmentation fault|Bus error|Aborted) \(core dumped\)\s*$"),
        overwritten: r(r"^(Killed)[a-z]\S* .*[0-9]"),
        zsh: r(r"^zsh: (killed|segmentation fault|bus error|terminated|abort)\b"),
        fish: r(r"terminated by signal (SIG[A-Z]+|[0-9]+)\b"),
        reported_exit: r(
            r"(?i:process (?:finished|completed) with exit code|make(?:\[[0-9]+\])?: \*\*\* \[.*\] error|exited with code|terminated with exit code) (-?[0-9]+)\b",
        ),
    }
});

/// A signal as the shell names it, to a cause.
fn signal_word(word: &str) -> Option<(&'static str, Category, Confidence)> {
    use Confidence::*;
    Some(match word {
        "Killed" | "killed" | "SIGKILL" | "9" => ("bare_killed", Category::HostOomKernel, Possible),
        "Bus error" | "bus error" | "SIGBUS" | "7" => ("bus_error", Category::ShmBusError, Likely),
        "Segmentation fault" | "segmentation fault" | "SIGSEGV" | "11" => {
            ("segmentation_fault", Category::Segfault, Likely)
        }
        "Terminated" | "terminated" | "SIGTERM" | "15" => {
            ("shell_terminated", Category::TimeLimit, Possible)
        }
        // SIGABRT: a native abort (C++ exception, assertion); context only.
        "Aborted" | "Abort trap" | "abort" | "SIGABRT" | "6" => {
            ("shell_aborted", Category::Unknown, Possible)
        }
        _ => return None,
    })
}

/// Lines after a `PIPESTATUS` line in which its values are looked for.
const PIPESTATUS_LOOKAHEAD: u8 = 3;

/// How many more lines may hold the values of a `PIPESTATUS` just seen.
#[derive(Debug, Default)]
pub struct ShellState {
    pipestatus_left: u8,
}

impl ShellState {
    /// Whether the next line must be read even without a trigger word.
    pub fn active(&self) -> bool {
        self.pipestatus_left > 0
    }

    /// Reads one line.
    pub fn feed(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        let t = line.trim();
        self.pipestatus_left = self.pipestatus_left.saturating_sub(1);
        if self.pipestatus_left > 0
            && t.chars().all(|c| c.is_ascii_digit() || " .".contains(c))
            && t.split([' ', '.']).any(|v| v == "141")
        {
            self.pipestatus_left = 0;
            out.push(Evidence::line(
                "pipestatus_141",
                Category::Sigpipe,
                Confidence::Likely,
                at,
                line,
            ));
            return;
        }
        if line.contains("PIPESTATUS") {
            self.pipestatus_left = PIPESTATUS_LOOKAHEAD + 1;
            return;
        }
        parse(at, line, out);
    }
}

/// The line without the markdown a paste wraps it in: a `> ` quote, bold or
/// italic markers, backticks and quotes around the whole line.
fn strip_markup(line: &str) -> &str {
    let mut t = line.trim();
    while let Some(rest) = t.strip_prefix('>') {
        t = rest.trim_start();
    }
    t.trim_matches(|c| matches!(c, '*' | '`' | '_' | '"' | '\''))
        .trim()
}

fn parse(at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
    let re = &*RE;
    let t = strip_markup(line);
    let word = if t.contains("Killed process") {
        None
    } else if let Some(c) = re.bash.captures(t) {
        c.get(1).map(|m| m.as_str())
    } else if let Some(c) = re.glued.captures(t) {
        c.get(1).map(|m| m.as_str())
    } else if let Some(c) = re.core_dumped.captures(t) {
        c.get(1).map(|m| m.as_str())
    } else if let Some(c) = re.zsh.captures(t) {
        c.get(1).map(|m| m.as_str())
    } else if let Some(w) = super::locale_words::shell_signal_word(t) {
        Some(w)
    } else if let Some(c) = re.overwritten.captures(t) {
        c.get(1).map(|m| m.as_str())
    } else {
        re.fish
            .captures(t)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str())
    };
    if let Some((kind, cat, strength)) = word.and_then(signal_word) {
        out.push(Evidence::line(kind, cat, strength, at, t));
    } else if t.contains("0xC0000005") || t.contains("-1073741819") {
        out.push(Evidence::line(
            "windows_access_violation",
            Category::Segfault,
            Confidence::Likely,
            at,
            t,
        ));
    } else if let Some(c) = re.reported_exit.captures(t)
        && let Ok(status) = ExitStatus::parse(&c[1])
    {
        out.exit_status(status, at, t);
    }
}
