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
use crate::units::fmt_bytes;

/// A rounded table whose `numeric` columns are right-aligned.
pub(super) fn table(builder: Builder, numeric: std::ops::Range<usize>) -> String {
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
        self.write_band(w)?;
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

    fn annotations(&self) -> Vec<crate::output::Annotation> {
        self.github_annotations()
    }
}
