//! GitHub annotations for a plan (`check --format github`): the failure, on
//! the line of the budget it breaks (`#SBATCH --mem`), naming the change
//! that fits; and each change of the recommendation on the line that sets
//! it (the loader's call, the launch line's `--batch_size`), when a script
//! was read. The changes are the plan's own recommendation (recommend.rs),
//! never worked out again here, so the annotation says what `plan` says.

use super::PlanReport;
use super::verdict::Budget;
use crate::output::{Annotation, Level, shown, shown_within};
use crate::units::fmt_bytes;

impl PlanReport {
    /// The annotations `--format github` writes before the report.
    pub fn github_annotations(&self) -> Vec<Annotation> {
        let mut out: Vec<Annotation> = self
            .warnings
            .iter()
            .map(|m| {
                Annotation::new(
                    Level::Warning,
                    format!("{}: {}", shown(&self.source), shown_within(m, 400)),
                )
            })
            .collect();
        let Some(f) = &self.failure else {
            return out;
        };
        let field = match f.budget {
            Budget::Host => "budget.host",
            Budget::Gpu => "budget.gpu",
            Budget::Shm => "budget.shm",
        };
        let as_is = (f.budget == Budget::Host)
            .then(|| format!("--mem={}G as it is", self.min_host_bytes >> 30));
        let fix = match &self.recommended {
            Some(r) if !r.changes.is_empty() => {
                let list: Vec<String> = r
                    .changes
                    .iter()
                    .map(|c| format!("{} {} → {}", c.setting, c.from, c.to))
                    .collect();
                let gpu = if self.shows_gpu() {
                    format!(", {} GPU", fmt_bytes(r.peak_gpu_bytes))
                } else {
                    String::new()
                };
                let or = as_is.map_or(String::new(), |m| format!("; or {m}"));
                format!(
                    "Fix (the plan's recommendation): {} (then peak {} host{gpu}){or}",
                    list.join(", "),
                    fmt_bytes(r.peak_host_bytes)
                )
            }
            _ => match as_is {
                Some(m) => format!("No setting fits: ask for {m}"),
                None => "No setting fits".to_string(),
            },
        };
        out.push(Annotation {
            level: Level::Error,
            place: self.places.of_field(field),
            title: Some("headroom: does not fit".into()),
            message: format!(
                "{}: does not fit (exit {} in {}): {}. {fix}",
                shown(&self.source),
                f.exit_code,
                f.phase.as_str(),
                f.message
            ),
        });
        // Each change, on the line where it is made, when that line is known.
        for c in self.recommended.iter().flat_map(|r| &r.changes) {
            let Some(place) = self.places.of_setting(c.setting) else {
                continue;
            };
            out.push(Annotation {
                level: Level::Notice,
                place: Some(place),
                title: Some(format!("headroom: {} {} → {}", c.setting, c.from, c.to)),
                message: format!(
                    "{} {} → {}, one of the recommended settings that fit: {} ({} {} host at the peak)",
                    c.setting,
                    c.from,
                    c.to,
                    c.how,
                    if c.saves_host_bytes < 0 {
                        "costs"
                    } else {
                        "saves"
                    },
                    fmt_bytes(c.saves_host_bytes.unsigned_abs())
                ),
            });
        }
        out
    }
}
