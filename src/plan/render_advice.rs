//! The recommendation as people read it: the largest settings that fit,
//! each change with what it costs the user (free, a preprocessing step, or
//! a change to training) and what it saves; the preprocessing step's own
//! peak and time and the best settings without it; and, where nothing fits,
//! the settings that come closest with the limit they need.

use std::io::Write;

use tabled::builder::Builder;

use super::render::table;
use super::{ChangeKind, PlanReport, Recommendation};
use crate::units::{fmt_bytes, fmt_delta};

/// Stable argsort of int64 keys and the permuted copy, per edge, measured
/// with torch 2.15 on this project's 2-core machine (0.55-0.81 us an edge
/// for 4M-64M edges, `torch.argsort(stable=True)` then `edge_index[:, perm]`).
const SORT_SECONDS_PER_EDGE: f64 = 0.8e-6;

fn kind(k: ChangeKind) -> &'static str {
    match k {
        ChangeKind::Free => "free",
        ChangeKind::Preprocessing => "one-off step",
        ChangeKind::Training => "changes training",
    }
}

impl PlanReport {
    pub(super) fn write_recommendation(&self, w: &mut dyn Write) -> std::io::Result<()> {
        if !self.checked {
            return writeln!(
                w,
                "\nno recommendation: with no budget there is nothing to fit (give --mem, --gpu or --shm)"
            );
        }
        let Some(r) = &self.recommended else {
            return writeln!(w, "\nno recommendation: no setting could be estimated");
        };
        let basis = if self.coefficients == "defaults" {
            String::new()
        } else {
            format!(" (by the coefficients of {})", self.coefficients)
        };
        if !r.fits {
            writeln!(
                w,
                "\nnothing fits with the margin{basis}: the settings that come closest need --mem={}G; yours need --mem={}G ({} settings tried):",
                r.needs_host_bytes >> 30,
                self.min_host_bytes >> 30,
                self.candidates_searched
            )?;
        } else if r.changes.is_empty() {
            writeln!(
                w,
                "\nrecommended: keep your settings: they fit with the margin{basis}"
            )?;
            return self.write_cautious(w);
        } else {
            writeln!(
                w,
                "\nrecommended: the largest settings that fit with the margin{basis} ({} settings tried; changes that leave training as it is first):",
                self.candidates_searched
            )?;
        }
        self.write_changes(w, r)?;
        if let Some(p) = &self.preprocessing {
            let minutes = p.edges as f64 * SORT_SECONDS_PER_EDGE / 60.0;
            writeln!(
                w,
                "  the one-off step, before the job: {}: peak {} host (--mem={}G), {} (--mem={}G) with edge_index alone loaded; about {:.0} min on 2 cores for {} edges",
                p.step,
                fmt_bytes(p.peak_host_bytes),
                p.needs_host_bytes >> 30,
                fmt_bytes(p.edge_index_only_peak_bytes),
                p.edge_index_only_needs_bytes >> 30,
                minutes.max(1.0),
                p.edges
            )?;
            if let Some(limit) = self.limits.host
                && p.edge_index_only_needs_bytes > limit
            {
                writeln!(
                    w,
                    "  that step needs more than this job's --mem={}: run it once on a node with more memory",
                    mem_arg(limit)
                )?;
            }
        }
        self.write_cautious(w)?;
        if let Some(a) = &self.without_preprocessing {
            let list: Vec<String> = a
                .changes
                .iter()
                .map(|c| format!("{} {} → {}", c.setting, c.from, c.to))
                .collect();
            let list = if list.is_empty() {
                "your settings".to_string()
            } else {
                list.join(", ")
            };
            if a.fits {
                writeln!(
                    w,
                    "  without that step: {list} (peak {} host)",
                    fmt_bytes(a.peak_host_bytes)
                )?;
            } else {
                writeln!(
                    w,
                    "  without that step nothing fits: the closest, {list}, needs --mem={}G",
                    a.needs_host_bytes >> 30
                )?;
            }
        }
        Ok(())
    }

    /// The second answer where the limit lies inside the model's uncertainty.
    fn write_cautious(&self, w: &mut dyn Write) -> std::io::Result<()> {
        if let Some(c) = &self.recommended_cautious {
            writeln!(
                w,
                "\nor, should the model be as far low as its worst on random real runs, the largest settings that fit even then (predicted peak {}, at worst {}):",
                fmt_bytes(c.peak_host_bytes),
                fmt_bytes(
                    super::band::host_band(c.peak_host_bytes, self.accounting, None)
                        .worst_high_bytes
                )
            )?;
            self.write_changes(w, c)?;
        }
        Ok(())
    }

    fn write_changes(&self, w: &mut dyn Write, r: &Recommendation) -> std::io::Result<()> {
        // The /dev/shm column only when a change moves it.
        let shm = r.changes.iter().any(|c| c.saves_shm_bytes != 0);
        let gpu = self.shows_gpu();
        let mut t = Builder::default();
        let mut head = vec!["setting", "yours", "recommended", "cost", "host saved"];
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
                kind(c.kind).to_string(),
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
        if !r.changes.is_empty() {
            writeln!(
                w,
                "{}",
                table(t, 1..5 + usize::from(shm) + usize::from(gpu))
            )?;
        }
        for c in &r.changes {
            writeln!(w, "  {}: {}", c.setting, c.how)?;
            if let Some(e) = &c.effect {
                writeln!(w, "    {e}")?;
            }
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

/// A limit as `--mem` would take it: whole GiB where it is one (`2G`), else
/// whole MiB (`1740M`), never floored to a smaller figure than it is.
fn mem_arg(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 30) {
        format!("{}G", bytes >> 30)
    } else {
        format!("{}M", bytes.div_ceil(1 << 20))
    }
}
