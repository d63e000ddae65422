//! The report of `plan`/`check` on a script: the job as read (in the
//! job-spec schema, so `--format yaml` output's `job` can be saved and
//! planned again), the loaders found, every inferred field with its lines,
//! the assumptions in one block, then the plan itself.

use std::io::Write;

use serde::Serialize;

use super::reading::ScriptReading;
use crate::output::{Report, shown, shown_within};
use crate::plan::PlanReport;
use crate::spec::JobSpec;

/// What `plan train.sbatch --format json` prints: the reading's fields
/// (the job as finally planned) and the plan.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptReport {
    /// What the reader learned.
    #[serde(flatten)]
    pub reading: ScriptReading,
    /// The plan of that job.
    pub plan: PlanReport,
}

impl ScriptReport {
    /// Joins a reading (with the spec as finally planned) and its plan.
    pub fn new(mut reading: ScriptReading, job: JobSpec, plan: PlanReport) -> ScriptReport {
        reading.job = job;
        ScriptReport { reading, plan }
    }
}

fn short(v: &serde_json::Value) -> String {
    shown_within(&v.to_string().replace('"', ""), 60)
}

impl Report for ScriptReport {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        match &self.reading.launch {
            Some(at) => writeln!(
                w,
                "read: {} (launched at {})",
                shown(&self.reading.script),
                shown(at)
            )?,
            None => writeln!(w, "read: {}", shown(&self.reading.script))?,
        }
        for l in &self.reading.loaders {
            let get = |k: &str| l.args.get(k).map_or("?".into(), short);
            writeln!(
                w,
                "  loader {:<16} {:<14} {} ({}): batch {}, fanout {}, {} workers",
                shown_within(l.variable.as_deref().unwrap_or("-"), 16),
                shown(&l.at),
                l.split.as_str(),
                l.placement,
                get("batch_size"),
                get("num_neighbors"),
                l.args.get("num_workers").map_or("0".into(), short),
            )?;
        }
        for i in &self.reading.inferred {
            writeln!(
                w,
                "  {:<26} {:<14} {}",
                i.field,
                short(&i.value),
                shown_within(&i.from, 120)
            )?;
        }
        if !self.reading.assumed.is_empty() {
            let parts: Vec<String> = self
                .reading
                .assumed
                .iter()
                .map(|a| {
                    format!(
                        "{}={} ({})",
                        a.field,
                        short(&a.value),
                        shown_within(&a.why, 100)
                    )
                })
                .collect();
            writeln!(w, "assumed, not in the scripts: {}", parts.join("; "))?;
        }
        writeln!(w)?;
        self.plan.write_text(w)
    }

    fn annotations(&self) -> Vec<crate::output::Annotation> {
        self.plan.annotations()
    }
}
