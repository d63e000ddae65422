//! Evidence: one line (or one structured fact) that points at a cause, with
//! where it came from, and the bounded collection parsers put it into.
//!
//! A log can repeat the same warning a million times; the collection keeps
//! the first few lines of each kind and the last one, and counts the rest, so
//! memory stays flat however long the log is.

use std::collections::BTreeMap;

use serde::Serialize;

use super::category::{Category, Confidence};

/// Evidence lines kept per kind: the first `KEEP_FIRST` and the latest one.
const KEEP_FIRST: usize = 3;

/// Longest evidence text kept, in characters; longer lines are cut.
const MAX_TEXT: usize = 400;

/// One piece of evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// What the line says, as a stable snake_case name (`kernel_cgroup_oom_kill`).
    pub kind: &'static str,
    /// The cause it points to.
    pub category: Category,
    /// How strongly it points there on its own.
    pub strength: Confidence,
    /// The file it came from (`<stdin>`, `--exit-code` for flags).
    pub source: String,
    /// 1-based line number in that file (newline-separated), when from a file.
    pub line: Option<u64>,
    /// The line, cleaned of colour codes and cut to a readable length.
    pub text: String,
    /// A name the line gives (the exception type, the exit status as written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Numbers read from the line (bytes, pids, milliseconds), by name.
    pub numbers: BTreeMap<&'static str, u64>,
}

impl Evidence {
    /// Evidence from a line of a file.
    pub fn line(
        kind: &'static str,
        category: Category,
        strength: Confidence,
        at: &Location<'_>,
        text: &str,
    ) -> Self {
        let mut text = text.trim().to_string();
        if text.chars().count() > MAX_TEXT {
            text = text.chars().take(MAX_TEXT).collect::<String>() + "...";
        }
        Evidence {
            kind,
            category,
            strength,
            source: at.source.to_string(),
            line: Some(at.line),
            text,
            label: None,
            numbers: BTreeMap::new(),
        }
    }

    /// Evidence that is a fact handed in, not a line (`--exit-code`, a cgroup counter).
    pub fn fact(
        kind: &'static str,
        category: Category,
        strength: Confidence,
        source: &str,
        text: &str,
    ) -> Self {
        let mut ev = Evidence::line(
            kind,
            category,
            strength,
            &Location { source, line: 0 },
            text,
        );
        ev.line = None;
        ev
    }

    /// Adds the name the line gives.
    pub fn with_label(mut self, label: String) -> Self {
        self.label = Some(label);
        self
    }

    /// Adds a number when it was found.
    pub fn with(mut self, name: &'static str, value: Option<u64>) -> Self {
        if let Some(v) = value {
            self.numbers.insert(name, v);
        }
        self
    }

    /// `file:line`, or the source alone for facts that are not lines.
    pub fn location(&self) -> String {
        match self.line {
            Some(n) => format!("{}:{n}", self.source),
            None => self.source.clone(),
        }
    }
}

/// Where a line is: file name and 1-based line number.
#[derive(Debug, Clone, Copy)]
pub struct Location<'a> {
    /// The file name as the user gave it.
    pub source: &'a str,
    /// 1-based line number.
    pub line: u64,
}

/// Evidence gathered so far, bounded per kind.
#[derive(Debug, Default)]
pub struct EvidenceSet {
    kept: Vec<Evidence>,
    per_kind: BTreeMap<&'static str, KindTally>,
}

#[derive(Debug, Default)]
struct KindTally {
    count: u64,
    /// Index in `kept` of the slot that holds the latest line past the first few.
    latest_slot: Option<usize>,
}

impl EvidenceSet {
    /// Adds one piece of evidence, keeping memory bounded.
    pub fn push(&mut self, ev: Evidence) {
        let tally = self.per_kind.entry(ev.kind).or_default();
        tally.count += 1;
        if tally.count as usize <= KEEP_FIRST {
            self.kept.push(ev);
        } else if let Some(i) = tally.latest_slot {
            self.kept[i] = ev;
        } else {
            tally.latest_slot = Some(self.kept.len());
            self.kept.push(ev);
        }
    }

    /// How many times a kind was seen (kept or not).
    pub fn count(&self, kind: &str) -> u64 {
        self.per_kind.get(kind).map_or(0, |t| t.count)
    }

    /// Lowers every kept piece of `kind` to `to` (where it was stronger): a
    /// later line has taken its place as the evidence.
    pub fn demote(&mut self, kind: &str, to: Confidence) {
        for e in self.kept.iter_mut().filter(|e| e.kind == kind) {
            e.strength = e.strength.min(to);
        }
    }

    /// Everything kept, in the order it was found.
    pub fn items(&self) -> &[Evidence] {
        &self.kept
    }

    /// Lines seen, kept or not, over all kinds.
    pub fn total(&self) -> u64 {
        self.per_kind.values().map(|t| t.count).sum()
    }

    /// Lines seen but not kept, over all kinds.
    pub fn dropped(&self) -> u64 {
        let seen: u64 = self.per_kind.values().map(|t| t.count).sum();
        seen.saturating_sub(self.kept.len() as u64)
    }

    /// Takes the kept evidence out.
    pub fn into_items(self) -> Vec<Evidence> {
        self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_repeats_keep_four_lines() {
        let mut set = EvidenceSet::default();
        for n in 1..=1_000_000u64 {
            let at = Location {
                source: "x.log",
                line: n,
            };
            set.push(Evidence::line(
                "bare_killed",
                Category::HostOomKernel,
                Confidence::Possible,
                &at,
                "Killed",
            ));
        }
        // First three kept, plus one slot that always holds the latest (line 1e6).
        assert_eq!(set.items().len(), 4);
        assert_eq!(set.items()[3].line, Some(1_000_000));
        assert_eq!(set.count("bare_killed"), 1_000_000);
        assert_eq!(set.dropped(), 1_000_000 - 4);
    }
}
