//! What `headroom check` prints for people: the verdict, the one or two
//! numbers that decide it (the peak against the usable budget) and the fix.
//! A pre-submit hook is read in a glance; the whole plan is `headroom plan`
//! or `check --format json`, which write the same [`PlanReport`].

use std::io::Write;

use serde::{Serialize, Serializer};

use super::PlanReport;
use super::verdict::Budget;
use crate::output::{Report, shown, shown_within};
use crate::units::fmt_bytes;

/// A plan as `check` shows it: short text, the full report for machines.
pub struct CheckReport<'a>(pub &'a PlanReport);

impl Serialize for CheckReport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl Report for CheckReport<'_> {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let r = self.0;
        let l = &r.limits;
        let usable = |b: u64| (b as f64 * (1.0 - l.margin)) as u64;
        let verdict = match &r.failure {
            None => "FITS".to_string(),
            Some(f) => format!(
                "DOES NOT FIT: exit {} expected in {}",
                f.exit_code,
                f.phase.as_str()
            ),
        };
        writeln!(
            w,
            "headroom check: {} ({}): {verdict}",
            shown(&r.job),
            shown(&r.source)
        )?;
        let deciding = r.failure.as_ref().map(|f| f.budget);
        if let Some(h) = l.host
            && deciding.is_none_or(|b| b == Budget::Host)
        {
            writeln!(
                w,
                "  host: peak {} in {}, {} usable of {} ({:.0}% margin)",
                fmt_bytes(r.peak_host_bytes),
                r.peak_phase.as_str(),
                fmt_bytes(usable(h)),
                fmt_bytes(h),
                l.margin * 100.0
            )?;
        }
        if let (Some(g), true) = (l.gpu, r.shows_gpu())
            && deciding.is_none_or(|b| b == Budget::Gpu)
        {
            writeln!(
                w,
                "  GPU: peak {} in {}, {} usable of {} total capacity",
                fmt_bytes(r.peak_gpu_bytes),
                r.peak_gpu_phase.as_str(),
                fmt_bytes(usable(g)),
                fmt_bytes(g)
            )?;
        }
        if let Some(f) = &r.failure {
            if f.budget == Budget::Shm {
                writeln!(w, "  /dev/shm: {}", f.message)?;
            }
            match r.recommended.as_ref().filter(|x| !x.changes.is_empty()) {
                Some(rec) => {
                    let changes: Vec<String> = rec
                        .changes
                        .iter()
                        .map(|c| format!("{} {} → {}", c.setting, c.from, c.to))
                        .collect();
                    writeln!(w, "  fix: {}", changes.join(", "))?;
                    if let Some(note) = &rec.shm_check {
                        writeln!(w, "  /dev/shm: {note}")?;
                    }
                }
                None => writeln!(
                    w,
                    "  fix: no setting fits; ask for --mem={}G",
                    r.min_host_bytes >> 30
                )?,
            }
        }
        for warning in &r.warnings {
            writeln!(w, "  warning: {}", shown_within(warning, 400))?;
        }
        writeln!(
            w,
            "  the whole plan: `headroom plan` with the same arguments, or check --format json"
        )
    }

    fn annotations(&self) -> Vec<crate::output::Annotation> {
        self.0.annotations()
    }
}
