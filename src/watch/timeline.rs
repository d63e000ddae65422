//! The timeline file: one row per sample, written and flushed as it is
//! taken, so a kill of the job (or of the whole cgroup with headroom in it)
//! loses at most the row being written.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::sample::Sample;
use crate::error::{Error, Result};

/// The timeline's file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TimelineFormat {
    /// Comma-separated values with a header row; empty cells for no reading.
    #[default]
    Csv,
    /// One JSON object per line; null for no reading.
    Jsonl,
}

enum Sink {
    Csv(Box<csv::Writer<File>>),
    Jsonl(BufWriter<File>),
}

/// An open timeline file.
pub struct Timeline {
    path: PathBuf,
    sink: Sink,
}

impl Timeline {
    /// Wraps a file already created (so a bad path fails before the job starts).
    pub fn new(path: &Path, file: File, format: TimelineFormat) -> Self {
        let sink = match format {
            TimelineFormat::Csv => Sink::Csv(Box::new(csv::Writer::from_writer(file))),
            TimelineFormat::Jsonl => Sink::Jsonl(BufWriter::new(file)),
        };
        Timeline {
            path: path.to_path_buf(),
            sink,
        }
    }

    /// Appends one row and flushes it to the kernel.
    pub fn write(&mut self, sample: &Sample) -> Result<()> {
        let res = match &mut self.sink {
            Sink::Csv(w) => w
                .serialize(&*csv_safe(sample))
                .map_err(|e| std::io::Error::other(e.to_string()))
                .and_then(|()| w.flush()),
            Sink::Jsonl(w) => crate::output::json_line(sample, &mut *w)
                .and_then(|()| w.write_all(b"\n"))
                .and_then(|()| w.flush()),
        };
        res.map_err(|e| Error::io(&self.path, e))
    }
}

/// The sample as a CSV row may carry it: CSV quotes line breaks but passes
/// every other control character through, so a process that named itself
/// `\x1b]0;…` would reach whoever `cat`s the file; its name is escaped as
/// text output escapes it.
fn csv_safe(sample: &Sample) -> std::borrow::Cow<'_, Sample> {
    match &sample.top_comm {
        Some(c) if c.chars().any(char::is_control) => {
            let mut s = sample.clone();
            s.top_comm = Some(crate::output::escape_controls(c, &[]));
            std::borrow::Cow::Owned(s)
        }
        _ => std::borrow::Cow::Borrowed(sample),
    }
}
