//! `sacct --json` read as the JSON document it is (serde_json), not line by
//! line: each job's `state.current` and `exit_code`, and each step's, with
//! the numbers: a step's peak memory (`tres.requested.max`, the `mem` entry,
//! in bytes: sacct's MaxRSS) and the job's `required.memory_per_node` (MiB:
//! ReqMem). The
//! shapes are Slurm's data_parser plugin's (SchedMD/slurm
//! src/plugins/data_parser/v0.0.4x/parsers.c): `exit_code` is
//! `{"status": ["SIGNALED"], "return_code": N, "signal": {"id": N, "name": "KILL"}}`
//! where numbers may be bare (older plugins) or `{"set": true, "number": N}`
//! (v0.0.39 on), and `state` is `{"current": ["OUT_OF_MEMORY"]}` or a bare
//! string in older versions.

use serde_json::Value;

use super::Sink;
use super::accounting::state_meaning;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};
use crate::diagnose::exit::ExitStatus;

/// A JSON document being collected, with where it started.
#[derive(Debug, Default)]
pub struct JsonDoc {
    source: String,
    first_line: u64,
    text: String,
}

/// Largest document collected: a year of one user's jobs is a few MiB.
const MAX_JSON: usize = 256 << 20;

impl JsonDoc {
    /// Starts a document at `at`.
    pub fn start(at: &Location<'_>) -> Self {
        JsonDoc {
            source: at.source.to_string(),
            first_line: at.line,
            text: String::new(),
        }
    }

    /// Adds one line; false once the document is too large to keep.
    pub fn push(&mut self, line: &str) -> bool {
        self.text.push_str(line);
        self.text.push('\n');
        self.text.len() <= MAX_JSON
    }

    /// Parses the document and reports each job's and step's state and the
    /// job's exit status. A document that does not parse reports nothing.
    pub fn finish(self, out: &mut Sink<'_>) {
        let Ok(doc) = serde_json::from_str::<Value>(&self.text) else {
            return;
        };
        let Some(jobs) = doc.get("jobs").and_then(Value::as_array) else {
            return;
        };
        for job in jobs {
            let id = job
                .get("job_id")
                .and_then(number)
                .map_or_else(|| "?".to_string(), |n| n.to_string());
            let mut places: Vec<(String, &Value)> = vec![(format!("job {id}"), job)];
            for step in job
                .get("steps")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = step
                    .pointer("/step/id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("{id}.?"), str::to_string);
                places.push((format!("step {name}"), step));
            }
            // 22.05's data_parser v0.0.38 writes `required.memory` (MiB).
            let req_mem = job
                .pointer("/required/memory_per_node")
                .or_else(|| job.pointer("/required/memory"))
                .and_then(number)
                .filter(|&m| m > 0)
                .map(|m| (m as u64) << 20);
            for (i, (what, v)) in places.iter().enumerate() {
                let max_rss = max_mem(v);
                let job_id = job
                    .get("job_id")
                    .and_then(number)
                    .and_then(|n| u64::try_from(n).ok());
                let numbers = |ev: Evidence| {
                    ev.with("max_rss_bytes", max_rss)
                        .with("req_mem_bytes", req_mem)
                        .with("slurm_job_id", job_id)
                };
                let mut told = false;
                for state in states(v) {
                    if let Some((kind, cat, strength)) = state_meaning(state) {
                        let text = format!("sacct --json: {what} state {state}");
                        let ev = Evidence::line(kind, cat, strength, &self.at(state), &text);
                        out.push(numbers(ev));
                        told = true;
                    }
                }
                if !told && max_rss.is_some() {
                    let text = format!("sacct --json: {what} peak memory");
                    let ev = Evidence::line(
                        "sacct_row",
                        Category::Unknown,
                        Confidence::Possible,
                        &self.at("max"),
                        &text,
                    );
                    out.push(numbers(ev));
                }
                // The job's own exit code is the job's status, not its steps'.
                // 22.05 writes `{"status": "SUCCESS", "return_code": 0}` for
                // FAILED and killed jobs too: a state other than COMPLETED wins
                // over a clean-looking code.
                let completed = states(v).iter().all(|st| st.starts_with("COMPLETED"));
                if i == 0
                    && let Some(status) = v.get("exit_code").and_then(exit_status)
                    && (completed || status.code != Some(0) || status.signal.is_some())
                {
                    let text = format!("sacct --json: {what} exit_code {}", status.raw);
                    out.exit_status(status, &self.at("exit_code"), &text);
                }
            }
        }
    }

    /// The line of the first `"needle"` in the document, for the evidence.
    fn at(&self, needle: &str) -> Location<'_> {
        let quoted = format!("\"{needle}\"");
        let before = self.text.find(&quoted).unwrap_or(0);
        let lines = self.text[..before].matches('\n').count() as u64;
        Location {
            source: &self.source,
            line: self.first_line + lines,
        }
    }
}

/// `N` or `{"set": true, "number": N}`; None when unset.
fn number(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::Object(o) if o.get("set").and_then(Value::as_bool) != Some(false) => {
            o.get("number").and_then(Value::as_i64)
        }
        _ => None,
    }
}

/// The `mem` entry of a step's `tres.requested.max`, bytes.
fn max_mem(step: &Value) -> Option<u64> {
    step.pointer("/tres/requested/max")?
        .as_array()?
        .iter()
        .find(|t| t.get("type").and_then(Value::as_str) == Some("mem"))
        .and_then(|t| t.get("count"))
        .and_then(number)
        .and_then(|n| u64::try_from(n).ok())
}

/// `{"current": ["A", "B"]}`, `{"current": "A"}`, `"A"` or `["A"]`.
fn states(v: &Value) -> Vec<&str> {
    let s = v.get("state").map(|s| s.get("current").unwrap_or(s));
    match s {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The job's exit status as sacct's `exit:signal` would print it.
fn exit_status(v: &Value) -> Option<ExitStatus> {
    let code = v.get("return_code").and_then(number);
    let signal = v
        .get("signal")
        .and_then(|s| s.get("id").or_else(|| s.get("signal_id")))
        .and_then(number)
        .filter(|&s| s > 0);
    let pair = format!("{}:{}", code.unwrap_or(0), signal.unwrap_or(0));
    ExitStatus::parse(&pair).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::evidence::EvidenceSet;

    fn read(text: &str) -> (EvidenceSet, Option<ExitStatus>) {
        let mut doc = JsonDoc::start(&Location {
            source: "sacct.json",
            line: 1,
        });
        for line in text.lines() {
            assert!(doc.push(line));
        }
        let (mut evidence, mut exit) = (EvidenceSet::default(), None);
        doc.finish(&mut Sink {
            evidence: &mut evidence,
            exit_from_logs: &mut exit,
        });
        (evidence, exit)
    }

    #[test]
    fn states_and_exit_codes_of_both_shapes() {
        // 23.x: flags arrays and {set, number}; 21.08: strings and bare numbers.
        let new = r#"{"jobs": [{"job_id": 4242,
            "state": {"current": ["OUT_OF_MEMORY"], "reason": "None"},
            "exit_code": {"status": ["SIGNALED"], "return_code": {"set": true, "infinite": false, "number": 0},
                          "signal": {"id": {"set": true, "infinite": false, "number": 9}, "name": "KILL"}},
            "required": {"memory_per_node": {"set": true, "infinite": false, "number": 65536}},
            "steps": [{"step": {"id": "4242.batch", "name": "batch"}, "state": "OUT_OF_MEMORY",
                       "tres": {"requested": {"max": [{"type": "cpu", "count": 1},
                                                      {"type": "mem", "name": "", "id": 2, "count": 68719476736}]}}}]}]}"#;
        let (ev, exit) = read(new);
        assert_eq!(ev.total(), 3, "two states and the exit status");
        let step = ev
            .items()
            .iter()
            .find(|e| e.text.contains("step 4242.batch"))
            .unwrap();
        assert_eq!(step.numbers.get("max_rss_bytes"), Some(&(64u64 << 30)));
        assert_eq!(step.numbers.get("req_mem_bytes"), Some(&(64u64 << 30)));
        assert_eq!(exit.and_then(|e| e.signal), Some(9));
        let old = r#"{"jobs": [{"job_id": 7, "state": {"current": "TIMEOUT"},
            "exit_code": {"status": "ERROR", "return_code": 1}}]}"#;
        let (ev, exit) = read(old);
        assert_eq!(ev.total(), 2);
        assert_eq!(exit.and_then(|e| e.code), Some(1));
    }

    #[test]
    fn a_document_that_does_not_parse_reports_nothing() {
        let (ev, exit) = read("{\"jobs\": [ {\"state\": ");
        assert_eq!(ev.total(), 0);
        assert!(exit.is_none());
    }
}
