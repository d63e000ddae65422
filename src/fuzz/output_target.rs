//! The output writers under fuzzing: the input read as a log and diagnosed,
//! and the input's text as every string of a small report (a field, a
//! warning, an annotation's file, title and message), each written in every
//! format. Beyond not panicking, each must keep the promises of
//! `src/output/`: no control character from input reaches the writer's
//! output raw (line breaks and tabs of the layout aside), JSON and YAML read
//! back to the same document, a GitHub annotation keeps its properties
//! apart (`file=`, `line=`, `title=`, then `::`), and the report after the
//! annotations cannot issue a workflow command of its own.

use std::io::Write;

use serde::Serialize;

use crate::output::{Annotation, Format, Level, Place, Report, emit, shown};

/// A report made of the fuzzed text.
#[derive(Serialize)]
struct Echo {
    name: String,
    warnings: Vec<String>,
}

impl Report for Echo {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(w, "name: {}", self.name)?;
        for x in &self.warnings {
            writeln!(w, "warning: {}", shown(x))?;
        }
        Ok(())
    }

    fn annotations(&self) -> Vec<Annotation> {
        vec![Annotation {
            level: Level::Error,
            place: Some(Place {
                file: self.name.clone(),
                line: 7,
            }),
            title: Some(self.name.clone()),
            message: self.name.clone(),
        }]
    }
}

/// Writes `report` in every format and checks each against its promises.
fn every_format<R: Report>(report: &R) {
    let mut docs = Vec::new();
    for format in [Format::Table, Format::Json, Format::Yaml, Format::Github] {
        let mut out = Vec::new();
        emit(report, format, &mut out).expect("writing to memory fails only on a bug");
        let text = String::from_utf8(out).expect("every format writes UTF-8");
        let raw = text
            .chars()
            .find(|&c| c.is_control() && c != '\n' && c != '\t');
        assert!(raw.is_none(), "{format:?} writes {raw:?} raw");
        match format {
            Format::Json => docs.push(serde_json::from_str::<serde_json::Value>(&text).unwrap()),
            Format::Yaml => docs.push(crate::yaml::from_str::<serde_json::Value>(&text).unwrap()),
            Format::Github => {
                // Commands before `::stop-commands::TOKEN`, the report after
                // it, and nothing between that ends the stop early.
                let (commands, rest) = text.split_once("::stop-commands::").expect("stopped");
                let token = rest.lines().next().unwrap_or("");
                let end = format!("::{token}::");
                assert_eq!(
                    rest.matches(&end).count(),
                    1,
                    "the report ends the stop early"
                );
                assert!(rest.trim_end().ends_with(&end));
                for line in commands.lines() {
                    assert!(line.starts_with("::"), "not a command: {line:?}");
                    let rest = &line[2..];
                    let (head, _) = rest
                        .split_once("::")
                        .expect("a command ends its head with ::");
                    let props = head.split_once(' ').map_or("", |(_, p)| p);
                    for prop in props.split(',').filter(|p| !p.is_empty()) {
                        let key = prop.split('=').next().unwrap_or("");
                        assert!(
                            ["file", "line", "title"].contains(&key),
                            "a property split apart: {line:?}"
                        );
                    }
                }
            }
            Format::Table => {}
        }
    }
    assert_eq!(docs[0], docs[1], "JSON and YAML read back differently");
}

/// The `output` target.
pub fn output(b: &[u8]) {
    let text = String::from_utf8_lossy(b).into_owned();
    let mut scanner = crate::diagnose::LogScanner::new();
    if scanner.scan_reader("fuzz", b, false).is_ok() {
        every_format(&crate::diagnose::verdict_from_evidence(
            scanner.finish(),
            &Default::default(),
        ));
    }
    let lines: Vec<String> = text.lines().take(8).map(str::to_string).collect();
    every_format(&Echo {
        name: text,
        warnings: lines,
    });
}
