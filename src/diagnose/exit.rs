//! Exit statuses as clusters report them, decoded: shell-style `137` (bash,
//! dash, zsh: 128 + N for a signal), ksh93's `265` (256 + N, documented in
//! autoconf's "Signal handling" section), Python's negative returncodes
//! (`-9`), Slurm's `exit:signal` pairs (`0:125`, `137:0`), and what each
//! signal usually means on a cluster. Anything else is refused.

use serde::Serialize;

use super::category::Category;
use super::signals::{signal_name, signal_phrase};
use crate::error::{Error, Result};

/// Slurm's signal field for a job its cgroup OOM handler ended (OUT_OF_MEMORY).
const SLURM_OOM_SIGNAL: i32 = 125;

/// A decoded exit status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExitStatus {
    /// The status as it was written (`137`, `-9`, `0:125`).
    pub raw: String,
    /// The process's exit code, when it exited (not killed).
    pub code: Option<i32>,
    /// The signal that ended the process, when one did.
    pub signal: Option<i32>,
    /// The signal's name (`SIGKILL`).
    pub signal_name: Option<String>,
    /// What this status means and what usually causes it on a cluster.
    pub meaning: String,
}

impl ExitStatus {
    /// Parses `137`, `271` (ksh), `-9`, `0:125`, `137:0` (Slurm's `exit:signal`).
    pub fn parse(text: &str) -> Result<Self> {
        let raw = text.trim();
        let bad = || {
            Error::bad(format!(
                "exit code '{}' is none a shell or Slurm prints: 0-255 (137 = 128+9), ksh's 256+N (265), \
                 a negative returncode (-9) or Slurm's exit:signal (0:9)",
                crate::output::shown(raw)
            ))
        };
        let num = |s: &str| s.trim().parse::<i32>().map_err(|_| bad());
        let (code, signal) = if let Some((exit, sig)) = raw.split_once(':') {
            let (exit, sig) = (num(exit)?, num(sig)?);
            if !(0..=255).contains(&exit) || !(0..=255).contains(&sig) {
                return Err(bad());
            }
            slurm_pair(exit, sig)
        } else {
            let n = num(raw)?;
            match n {
                i32::MIN..=-1 if n >= -64 => (None, Some(-n)),
                129..=192 => (Some(n), Some(n - 128)),
                0..=255 => (Some(n), None),
                257..=320 => (Some(n), Some(n - 256)),
                _ => return Err(bad()),
            }
        };
        Ok(Self::from_parts(raw, code, signal))
    }

    /// Builds the decoded status from an exit code and/or a signal number.
    pub fn from_parts(raw: &str, code: Option<i32>, signal: Option<i32>) -> Self {
        let meaning = match (code, signal) {
            (_, Some(SLURM_OOM_SIGNAL)) => {
                "Slurm's OUT_OF_MEMORY marker (signal field 125): the job's cgroup hit its memory limit and the OOM killer ended it".to_string()
            }
            (Some(c), Some(s)) if c > 256 => format!(
                "256 + {s} (ksh93's way of reporting a killed process) = {}",
                signal_phrase(s)
            ),
            (Some(c), Some(s)) if c >= 128 => format!("128 + {s} = {}", signal_phrase(s)),
            (_, Some(s)) => format!("killed by signal {s}: {}", signal_phrase(s)),
            (Some(0), None) => "the process exited normally".to_string(),
            (Some(1), None) => "the program exited with an error (for Python: an uncaught exception; CUDA OOM is one)".to_string(),
            (Some(2), None) => "usage error (bad command-line arguments) or a shell builtin misuse".to_string(),
            (Some(126), None) => "the shell found the command but could not run it (no execute permission, not a program)".to_string(),
            (Some(127), None) => "the shell did not find the command (a typo, a module not loaded, PATH)".to_string(),
            (Some(_), None) => "the program chose this exit status (not a signal)".to_string(),
            (None, None) => "no exit status".to_string(),
        };
        ExitStatus {
            raw: raw.to_string(),
            code,
            signal,
            signal_name: signal.and_then(signal_name),
            meaning,
        }
    }

    /// The cause an exit status alone points to, and how strongly.
    pub fn hint(&self) -> Option<(Category, super::category::Confidence)> {
        use super::category::Confidence::*;
        match (self.signal, self.code) {
            (Some(SLURM_OOM_SIGNAL), _) => Some((Category::HostOomCgroup, Certain)),
            (Some(9), _) => Some((Category::HostOomKernel, Possible)),
            (Some(7), _) => Some((Category::ShmBusError, Likely)),
            (Some(13), _) => Some((Category::Sigpipe, Likely)),
            (Some(15), _) => Some((Category::TimeLimit, Possible)),
            (Some(11), _) => Some((Category::Segfault, Likely)),
            (None, Some(0)) => Some((Category::Success, Likely)),
            // Any other nonzero status without a signal: the program ended
            // itself (an exception, sys.exit(3), a shell's own error).
            (None, Some(c)) if c != 0 => Some((Category::PythonError, Possible)),
            _ => None,
        }
    }
}

/// Slurm's `exit:signal`: a nonzero signal field means killed by that signal;
/// an exit field above 128 is a shell reporting a signal as 128+N.
fn slurm_pair(exit: i32, sig: i32) -> (Option<i32>, Option<i32>) {
    if sig != 0 {
        (Some(exit), Some(sig))
    } else if (129..=192).contains(&exit) {
        (Some(exit), Some(exit - 128))
    } else {
        (Some(exit), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_python_and_slurm_forms_decode_to_the_same_signal() {
        // 137 = 128 + 9, -9 is Python's returncode for SIGKILL, 137:0 is Slurm's
        // record of a shell that exited 137.
        for form in ["137", "-9", "137:0", "0:9", "265"] {
            let s = ExitStatus::parse(form).unwrap();
            assert_eq!(s.signal, Some(9), "{form}");
            assert_eq!(s.signal_name.as_deref(), Some("SIGKILL"));
        }
        assert_eq!(ExitStatus::parse("141").unwrap().signal, Some(13));
        assert_eq!(ExitStatus::parse("1").unwrap().signal, None);
        assert_eq!(ExitStatus::parse("1:0").unwrap().code, Some(1));
        let term = ExitStatus::parse("271").unwrap();
        assert_eq!(term.signal_name.as_deref(), Some("SIGTERM"));
        assert!(term.meaning.contains("ksh93"), "{}", term.meaning);
    }

    #[test]
    fn slurm_oom_marker_is_certain_cgroup_oom() {
        let s = ExitStatus::parse("0:125").unwrap();
        assert_eq!(
            s.hint(),
            Some((
                Category::HostOomCgroup,
                super::super::category::Confidence::Certain
            ))
        );
    }

    #[test]
    fn nonsense_is_refused() {
        for bad in [
            "", "abc", "1:x", "999", "-1000", "0:300", "256", "321", "1.5", "0:9:1",
        ] {
            assert!(ExitStatus::parse(bad).is_err(), "{bad}");
        }
    }
}
