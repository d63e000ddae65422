//! The plan as people read it: budget and batch in two lines, one row per
//! phase, the verdict with its exit code, the components behind each phase,
//! then the recommendation with what each change saves.

use std::io::Write;

use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use super::PlanReport;
use crate::estimate::PhaseEstimate;
use crate::output::{Report, shown, shown_within};
use crate::units::{fmt_bytes, fmt_delta};

/// A rounded table whose `numeric` columns are right-aligned.
fn table(builder: Builder, numeric: std::ops::Range<usize>) -> String {
    let mut t = builder.build();
    t.with(Style::rounded());
    t.modify(Columns::new(numeric), Alignment::right());
    t.to_string()
}

fn cell(b: u64) -> String {
    if b == 0 { "·".into() } else { fmt_bytes(b) }
}

fn components_table(phases: &[PhaseEstimate], gpu: bool) -> Option<String> {
    let phases: Vec<&PhaseEstimate> = phases
        .iter()
        .filter(|p| !gpu || !p.gpu.is_empty())
        .collect();
    let mut names: Vec<&'static str> = Vec::new();
    for p in &phases {
        for c in if gpu { &p.gpu } else { &p.host } {
            if !names.contains(&c.name) {
                names.push(c.name);
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    let mut b = Builder::default();
    let mut head = vec![if gpu {
        "GPU".to_string()
    } else {
        "host".to_string()
    }];
    head.extend(phases.iter().map(|p| p.phase.as_str().to_string()));
    b.push_record(head);
    for name in names {
        let mut row = vec![name.to_string()];
        for p in &phases {
            let list = if gpu { &p.gpu } else { &p.host };
            row.push(cell(
                list.iter().find(|c| c.name == name).map_or(0, |c| c.bytes),
            ));
        }
        b.push_record(row);
    }
    let mut total = vec!["total".to_string()];
    total.extend(
        phases
            .iter()
            .map(|p| cell(if gpu { p.gpu_bytes } else { p.host_bytes })),
    );
    b.push_record(total);
    Some(table(b, 1..phases.len() + 1))
}

impl Report for PlanReport {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        // The name and path come from input: shown cut (output/text.rs).
        let (job, source) = (shown(&self.job), shown(&self.source));
        writeln!(w, "headroom plan: {job} ({source})")?;
        self.write_budget(w)?;
        let s = &self.settings;
        let b = &self.train_batch;
        writeln!(
            w,
            "batch:   {} seeds, fanout {:?}, {} workers{}: {:.0} nodes / {:.0} edges per batch on average, {:.0} / {:.0} in the run's largest",
            s.batch_size,
            s.fanout,
            s.num_workers,
            if s.persistent_workers {
                " (persistent)"
            } else {
                ""
            },
            b.mean_nodes,
            b.mean_edges,
            b.tail_nodes,
            b.tail_edges
        )?;
        if self.ranks_per_node > 1 {
            writeln!(
                w,
                "ranks:   {} per node; host figures are for all of them",
                self.ranks_per_node
            )?;
        }
        let gpu = self.shows_gpu();
        let mut t = Builder::default();
        let mut head = vec!["phase", "host", "/dev/shm"];
        if gpu {
            head.push("GPU");
        }
        head.push("worst moment");
        t.push_record(head);
        for p in &self.components {
            let mark = if p.phase == self.peak_phase {
                " ◀ peak"
            } else {
                ""
            };
            let mut row = vec![
                p.phase.as_str().to_string(),
                fmt_bytes(p.host_bytes),
                cell(p.shm_bytes),
            ];
            if gpu {
                row.push(cell(p.gpu_bytes));
            }
            row.push(format!("{}{mark}", p.moment));
            t.push_record(row);
        }
        writeln!(w, "{}", table(t, 1..if gpu { 4 } else { 3 }))?;
        self.write_verdict(w)?;
        writeln!(
            w,
            "  the job as given needs --mem={}G with the margin",
            self.min_host_bytes >> 30
        )?;
        self.write_gpu_simulation(w)?;
        for (on_gpu, title) in [
            (false, "host components per phase"),
            (true, "GPU components per phase"),
        ] {
            if on_gpu && !gpu {
                continue;
            }
            if let Some(t) = components_table(&self.components, on_gpu) {
                writeln!(w, "\n{title}:\n{t}")?;
            }
        }
        self.write_recommendation(w)?;
        for warning in &self.warnings {
            writeln!(w, "warning: {}", shown_within(warning, 400))?;
        }
        for a in &self.assumptions {
            writeln!(w, "assumed: {a}")?;
        }
        writeln!(w, "coefficients: {}", self.coefficients)?;
        for c in &self.coefficient_sources {
            let value = match c.unit {
                crate::estimate::coeff_table::Unit::Bytes => fmt_bytes(c.value as u64),
                crate::estimate::coeff_table::Unit::BytesPer => format!("{} B", c.value),
                crate::estimate::coeff_table::Unit::Ratio => format!("{:.3}", c.value),
            };
            writeln!(w, "  {:<26} {:>10}  {}", c.name, value, c.source)?;
        }
        Ok(())
    }

    fn annotations(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = self
            .warnings
            .iter()
            .map(|m| {
                (
                    "warning",
                    format!("{}: {}", shown(&self.source), shown_within(m, 400)),
                )
            })
            .collect();
        if let Some(f) = &self.failure {
            let fix = self.recommended.as_ref().map_or(String::new(), |r| {
                format!("; fits with batch_size={} fanout={:?} num_workers={} persistent_workers={} eval_loaders={}", r.batch_size, r.fanout, r.num_workers, r.persistent_workers, r.eval_loaders)
            });
            out.push((
                "error",
                format!(
                    "{}: does not fit (exit {} in {}): {}{fix}",
                    shown(&self.source),
                    f.exit_code,
                    f.phase.as_str(),
                    f.message
                ),
            ));
        }
        out
    }
}

impl PlanReport {
    fn write_recommendation(&self, w: &mut dyn Write) -> std::io::Result<()> {
        if !self.checked {
            return writeln!(
                w,
                "\nno recommendation: with no budget there is nothing to fit (give --mem, --gpu or --shm)"
            );
        }
        let Some(r) = &self.recommended else {
            return writeln!(
                w,
                "\nno setting of batch size, fanout, workers or loaders fits {} settings tried; more memory is the only way (see --mem above)",
                self.candidates_searched
            );
        };
        if r.changes.is_empty() {
            return writeln!(
                w,
                "\nrecommended: keep your settings: they fit and nothing faster fits ({} settings tried)",
                self.candidates_searched
            );
        }
        writeln!(
            w,
            "\nrecommended: the fastest of {} settings tried that fit with the margin, keeping fanout and batch as large as possible:",
            self.candidates_searched
        )?;
        // The /dev/shm column only when a change moves it.
        let shm = r.changes.iter().any(|c| c.saves_shm_bytes != 0);
        let mut t = Builder::default();
        let gpu = self.shows_gpu();
        let mut head = vec!["setting", "yours", "recommended", "host saved"];
        if shm {
            head.push("/dev/shm saved");
        }
        if gpu {
            head.push("GPU saved");
        }
        t.push_record(head);
        for c in &r.changes {
            let mut row = vec![
                c.setting.to_string(),
                c.from.clone(),
                c.to.clone(),
                fmt_delta(c.saves_host_bytes as i128),
            ];
            if shm {
                row.push(fmt_delta(c.saves_shm_bytes as i128));
            }
            if gpu {
                row.push(fmt_delta(c.saves_gpu_bytes as i128));
            }
            t.push_record(row);
        }
        writeln!(
            w,
            "{}",
            table(t, 1..4 + usize::from(shm) + usize::from(gpu))
        )?;
        for c in &r.changes {
            writeln!(w, "  {}: {}", c.setting, c.how)?;
        }
        let then_gpu = if gpu {
            format!(", {} GPU", fmt_bytes(r.peak_gpu_bytes))
        } else {
            String::new()
        };
        writeln!(
            w,
            "  then: peak {} host{then_gpu}, {} in /dev/shm",
            fmt_bytes(r.peak_host_bytes),
            fmt_bytes(r.peak_shm_bytes)
        )?;
        if let Some(note) = &r.shm_check {
            writeln!(w, "  /dev/shm: {note}")?;
        }
        Ok(())
    }
}
