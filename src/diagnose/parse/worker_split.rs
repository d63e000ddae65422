//! A DataLoader worker's death message broken over lines: a terminal or a
//! paste wraps `DataLoader worker (pid 13) is killed by signal: Bus error.`
//! after `signal:` or inside the signal's name (`… signal: Bus` / `error. It
//! is possible that dataloader's workers are out of shared memory.`), often
//! without the `RuntimeError:` before it. The line that holds the start is
//! kept and read again joined with the next one.

use super::Sink;
use crate::diagnose::evidence::Location;

/// Signal names PyTorch prints, the ones a wrap can cut in two.
const SPLIT_NAMES: [&str; 2] = ["Bus error", "Segmentation fault"];

/// The start of a worker message still waiting for its signal's name.
#[derive(Debug, Default)]
pub struct WorkerSplit {
    pending: Option<String>,
}

impl WorkerSplit {
    /// Whether the next line must be read even without a trigger word.
    pub fn active(&self) -> bool {
        self.pending.is_some()
    }

    /// Reads one line; when it completes a pending start, the joined text is
    /// handed to the Python parser at this line's location.
    pub fn feed(&mut self, at: &Location<'_>, line: &str, mp_pipe: bool, out: &mut Sink<'_>) {
        if let Some(start) = self.pending.take() {
            let joined = format!("{start} {}", line.trim());
            super::python::parse(at, &joined, mp_pipe, out);
            return;
        }
        let Some(i) = line.find("is killed by signal:") else {
            return;
        };
        if !line.contains("DataLoader worker") {
            return;
        }
        let name = line[i + "is killed by signal:".len()..].trim();
        let cut = name.is_empty()
            || SPLIT_NAMES
                .iter()
                .any(|full| full.starts_with(name) && *full != name);
        if cut {
            self.pending = Some(line.trim().to_string());
        }
    }
}
