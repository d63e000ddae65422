//! The probe's event file (one JSON object a line, written by
//! `sitecustomize.py` inside the job) read back into what the job did: its
//! loaders, graph, model, optimizer and passes, each with its time and the
//! main process's memory then. Lines that are not events (a line cut by a
//! kill, another tool's output) are counted and skipped, never fatal.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::profiles::DegreeHistogram;

/// The main process's memory at an event, from /proc/self/status, bytes.
#[derive(Debug, Clone, Copy, Default, Deserialize, serde::Serialize, PartialEq)]
pub struct Mem {
    /// RssAnon.
    #[serde(rename = "RssAnon", default)]
    pub anon: u64,
    /// RssShmem.
    #[serde(rename = "RssShmem", default)]
    pub shmem: u64,
    /// RssFile.
    #[serde(rename = "RssFile", default)]
    pub file: u64,
}

/// One event line.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    /// What happened (`start`, `import`, `loader`, `pass_start`, ...).
    pub ev: String,
    /// Wall-clock time, seconds since the Unix epoch.
    pub t: f64,
    /// The process that wrote it.
    pub pid: u32,
    /// Its memory then.
    #[serde(default)]
    pub mem: Mem,
    /// The event's own fields.
    #[serde(flatten)]
    pub fields: BTreeMap<String, serde_json::Value>,
}

impl Event {
    /// An integer field.
    pub fn u64(&self, k: &str) -> Option<u64> {
        self.fields.get(k).and_then(serde_json::Value::as_u64)
    }
    /// A boolean field.
    pub fn bool(&self, k: &str) -> Option<bool> {
        self.fields.get(k).and_then(serde_json::Value::as_bool)
    }
    /// A string field.
    pub fn str(&self, k: &str) -> Option<&str> {
        self.fields.get(k).and_then(serde_json::Value::as_str)
    }
    /// A list of integers.
    pub fn u64s(&self, k: &str) -> Option<Vec<u64>> {
        self.fields
            .get(k)?
            .as_array()?
            .iter()
            .map(serde_json::Value::as_u64)
            .collect()
    }
    /// A list of signed integers (a fanout, where -1 is every neighbour).
    pub fn i64s(&self, k: &str) -> Option<Vec<i64>> {
        self.fields
            .get(k)?
            .as_array()?
            .iter()
            .map(serde_json::Value::as_i64)
            .collect()
    }
    /// The degree histogram a `dataset` event carries.
    pub fn histogram(&self) -> Option<DegreeHistogram> {
        serde_json::from_value(self.fields.get("degree_histogram")?.clone()).ok()
    }
}

/// The events of one file, and how many lines were not events.
#[derive(Debug, Clone, Default)]
pub struct Events {
    /// Events of the main process, in file order.
    pub events: Vec<Event>,
    /// Lines skipped (not JSON, or not an event).
    pub skipped: usize,
    /// Other processes that wrote events (spawned ranks), ignored.
    pub other_pids: Vec<u32>,
}

/// Reads `text`; the main process is the one that built the first loader
/// (else the first writer), so ranks a launcher spawned do not mix in.
pub fn parse(text: &str) -> Events {
    let mut all = Vec::new();
    let mut skipped = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Event>(line) {
            Ok(e) if e.t.is_finite() => all.push(e),
            _ => skipped += 1,
        }
    }
    let main = all
        .iter()
        .find(|e| e.ev == "loader")
        .or(all.first())
        .map(|e| e.pid);
    let mut other_pids: Vec<u32> = all
        .iter()
        .map(|e| e.pid)
        .filter(|&p| Some(p) != main)
        .collect();
    other_pids.sort_unstable();
    other_pids.dedup();
    Events {
        events: all.into_iter().filter(|e| Some(e.pid) == main).collect(),
        skipped,
        other_pids,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_line_and_a_second_process_are_set_aside() {
        let text = concat!(
            r#"{"ev":"start","t":1.0,"pid":7,"mem":{"RssAnon":4096}}"#,
            "\n",
            r#"{"ev":"start","t":1.5,"pid":9,"mem":{}}"#,
            "\n",
            r#"{"ev":"loader","t":2.0,"pid":9,"batch_size":512,"num_neighbors":[10,5]}"#,
            "\n",
            r#"{"ev":"pass_start","t":3.0,"pid":9,"id":1,"grad":tr"#,
            "\n"
        );
        let e = parse(text);
        assert_eq!(e.skipped, 1);
        assert_eq!(e.other_pids, vec![7]);
        assert_eq!(e.events.len(), 2);
        assert_eq!(e.events[1].u64("batch_size"), Some(512));
        assert_eq!(e.events[1].u64s("num_neighbors"), Some(vec![10, 5]));
        assert_eq!(e.events[0].mem, Mem::default());
    }
}
