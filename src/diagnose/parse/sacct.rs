//! sacct's output, read by its header whatever the layout: `-P` (columns
//! separated by `|`, any order, with or without JobID), the default
//! fixed-width table (a header, then a row of dashes whose groups give each
//! column's span), and `--json` (whole documents in [`super::sacct_json`];
//! in a log, the job state on a line of its own, `"current":
//! ["OUT_OF_MEMORY"]` in 23.x, `"state": "OUT_OF_MEMORY"` before). A header
//! replaces whatever table was being read, so `--sacct`'s assumed column
//! order never overrides one.

use std::sync::LazyLock;

use regex::Regex;

use super::Sink;
use super::accounting::{binary_size, state_meaning};
use super::sacct_json::JsonDoc;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};
use crate::diagnose::exit::ExitStatus;

static JSON_STATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*(?:"(?:current|state|job_state)"\s*:\s*)?\[?\s*"([A-Z_]+)"\s*\]?,?\s*$"#)
        .expect("static regex")
});

/// How a row is cut into fields.
#[derive(Debug, Clone)]
enum Layout {
    Pipes,
    /// Byte spans from the dashed row; the last runs to the end of the line.
    Fixed(Vec<(usize, usize)>),
}

/// Column positions of a header.
#[derive(Debug, Clone)]
struct Table {
    layout: Layout,
    state: Option<usize>,
    exit_code: Option<usize>,
    max_rss: Option<usize>,
    req_mem: Option<usize>,
    job_id: Option<usize>,
    /// The job's own row was stopped with `0:0` (TIMEOUT, CANCELLED): its
    /// signal is on the batch step's row, read next.
    signal_on_step: bool,
}

impl Table {
    fn from_names<'a>(names: impl Iterator<Item = &'a str>, layout: Layout) -> Option<Self> {
        let mut t = Table {
            layout,
            state: None,
            exit_code: None,
            max_rss: None,
            req_mem: None,
            job_id: None,
            signal_on_step: false,
        };
        for (i, name) in names.enumerate() {
            let slot = match name.trim().to_ascii_lowercase().as_str() {
                "state" => &mut t.state,
                "exitcode" => &mut t.exit_code,
                "maxrss" => &mut t.max_rss,
                "reqmem" => &mut t.req_mem,
                "jobid" | "jobidraw" => &mut t.job_id,
                _ => continue,
            };
            *slot = Some(i);
        }
        (t.state.is_some() || t.exit_code.is_some()).then_some(t)
    }

    fn fields<'a>(&self, line: &'a str) -> Vec<&'a str> {
        match &self.layout {
            Layout::Pipes => line.trim().split('|').map(str::trim).collect(),
            Layout::Fixed(spans) => spans
                .iter()
                .enumerate()
                .map(|(i, &(a, b))| {
                    let end = if i + 1 == spans.len() { line.len() } else { b };
                    line.get(a.min(line.len())..end.min(line.len()))
                        .unwrap_or("")
                        .trim()
                })
                .collect(),
        }
    }

    fn row(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        let fields = self.fields(line);
        let get = |i: Option<usize>| i.and_then(|i| fields.get(i)).copied();
        let job_id = get(self.job_id)
            .and_then(|id| id.split(['.', '_', '+']).next())
            .and_then(|id| id.trim().parse::<u64>().ok());
        let numbers = |ev: Evidence| {
            ev.with("max_rss_bytes", get(self.max_rss).and_then(binary_size))
                .with("req_mem_bytes", get(self.req_mem).and_then(binary_size))
                .with("slurm_job_id", job_id)
        };
        if let Some((kind, cat, strength)) = state_meaning(get(self.state).unwrap_or("")) {
            out.push(numbers(Evidence::line(kind, cat, strength, at, line)));
        } else if get(self.max_rss).is_some_and(|s| !s.is_empty()) {
            let ev = Evidence::line(
                "sacct_row",
                Category::Unknown,
                Confidence::Possible,
                at,
                line,
            );
            out.push(numbers(ev));
        }
        // The allocation's own row (no `.batch`/`.0`) carries the job's status.
        let is_job_row = get(self.job_id).is_none_or(|id| !id.contains('.'));
        let state = get(self.state).unwrap_or("");
        let Some(status) = get(self.exit_code).and_then(|c| ExitStatus::parse(c).ok()) else {
            return;
        };
        if is_job_row {
            // Slurm writes 0:0 on a job it stopped (TIMEOUT, CANCELLED by
            // UID); the SIGTERM it sent is on the batch step's row.
            self.signal_on_step = status.code == Some(0)
                && status.signal.is_none()
                && !state.is_empty()
                && !state.starts_with("COMPLETED");
            out.exit_status(status, at, line);
        } else if status.signal.is_some() && std::mem::take(&mut self.signal_on_step) {
            out.exit_status(status, at, line);
        }
    }
}

/// The table being read, or a fixed-width header waiting for its dashes.
#[derive(Debug, Default)]
pub struct SacctReader {
    table: Option<Table>,
    pending: Option<String>,
    /// `--sacct`: the input is sacct output, whatever its first line.
    forced: bool,
    /// A non-blank line has been read.
    started: bool,
    /// A `sacct --json` document being collected.
    json: Option<JsonDoc>,
    /// The input begins with `{`: its first line may open a JSON document.
    maybe_json: bool,
}

impl SacctReader {
    /// Whether the next line must be read even without a trigger word.
    pub fn active(&self) -> bool {
        self.table.is_some()
            || self.pending.is_some()
            || self.json.is_some()
            || (self.maybe_json && !self.started)
    }

    /// `--sacct`: a table without a header is `JobID|State|ExitCode|MaxRSS|ReqMem`.
    pub fn expect_default(&mut self) {
        let names = "JobID|State|ExitCode|MaxRSS|ReqMem".split('|');
        self.table = Table::from_names(names, Layout::Pipes);
        self.forced = true;
    }

    /// The input's first byte is `{`: read it as a `sacct --json` document
    /// when its first line opens one, as `--sacct` would.
    pub fn expect_json(&mut self) {
        self.maybe_json = true;
    }

    /// Reads one line; true when it was part of a table (no other parser needs it).
    pub fn feed(&mut self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) -> bool {
        if let Some(doc) = &mut self.json {
            if !doc.push(line) {
                self.json = None;
            }
            return true;
        }
        let first = !self.started && !line.trim().is_empty();
        self.started |= first;
        if first && (self.forced || self.maybe_json) && line.trim_start().starts_with('{') {
            let mut doc = JsonDoc::start(at);
            doc.push(line);
            self.json = Some(doc);
            return true;
        }
        if let Some(header) = self.pending.take() {
            let t = line.trim_end();
            if t.contains('-') && t.chars().all(|c| c == '-' || c == ' ') {
                let spans = dash_spans(t);
                self.table = Table::from_names(header.split_whitespace(), Layout::Fixed(spans));
                return true;
            }
        }
        // A header replaces the table being read (or --sacct's assumed one).
        if is_header(line) {
            if line.contains('|') {
                self.table = Table::from_names(line.trim().split('|'), Layout::Pipes);
                return self.table.is_some();
            }
            self.table = None;
            self.pending = Some(line.to_string());
            return true;
        }
        if let Some(table) = &mut self.table {
            let row = match table.layout {
                Layout::Pipes => line.contains('|'),
                Layout::Fixed(_) => !line.trim().is_empty(),
            };
            if row {
                table.row(at, line, out);
                return true;
            }
            self.table = None;
        }
        if let Some(c) = JSON_STATE.captures(line)
            && let Some((kind, cat, strength)) = state_meaning(&c[1])
        {
            out.push(Evidence::line(kind, cat, strength, at, line));
            return true;
        }
        false
    }

    /// Ends the input: a collected JSON document is read now.
    pub fn finish(&mut self, out: &mut Sink<'_>) {
        if let Some(doc) = self.json.take() {
            doc.finish(out);
        }
        *self = SacctReader::default();
    }
}

/// A header names sacct fields (`JobID`, `State`, `ExitCode`, `MaxRSS`...):
/// letters and digits only, State or ExitCode among them, and some lower
/// case (a data row's states are upper case, its exit codes have a colon).
fn is_header(line: &str) -> bool {
    let names: Vec<&str> = if line.contains('|') {
        line.trim().split('|').map(str::trim).collect()
    } else {
        line.split_whitespace().collect()
    };
    names.len() >= 2
        && names
            .iter()
            // The fixed-width layout cuts a long name and marks it: `ConsumedE+`.
            .all(|n| {
                let n = n.strip_suffix('+').unwrap_or(n);
                !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric())
            })
        && names
            .iter()
            .any(|n| n.eq_ignore_ascii_case("state") || n.eq_ignore_ascii_case("exitcode"))
        && names
            .iter()
            .any(|n| n.chars().any(|c| c.is_ascii_lowercase()))
}

/// The byte spans of the dash groups of sacct's second header line.
fn dash_spans(dashes: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in dashes.char_indices() {
        match (c, start) {
            ('-', None) => start = Some(i),
            (' ', Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, dashes.len()));
    }
    spans
}
