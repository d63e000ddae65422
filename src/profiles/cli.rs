//! `headroom profiles`: what is embedded, one line each, by kind.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

use super::{DatasetProfile, GpuProfile, all_datasets, all_gpus};
use crate::error::Result;
use crate::output::{Format, Report, emit};
use crate::units::fmt_bytes;

/// Arguments of `headroom profiles`.
#[derive(Debug, clap::Args)]
pub struct ProfilesArgs {
    /// Only this kind.
    #[arg(long, value_parser = ["datasets", "gpus", "jobs"])]
    pub kind: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// The embedded profiles.
#[derive(Debug, Serialize)]
pub struct ProfileList {
    /// Dataset profiles.
    pub datasets: Vec<DatasetProfile>,
    /// GPU profiles.
    pub gpus: Vec<GpuProfile>,
    /// Job profile names and descriptions.
    pub jobs: Vec<(String, String)>,
}

impl Report for ProfileList {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        if !self.datasets.is_empty() {
            writeln!(w, "datasets (nodes, edges, features, dataset tensors):")?;
            for d in &self.datasets {
                let bytes =
                    d.feature_nodes.unwrap_or(d.nodes) * d.features * d.feature_dtype.size()
                        + 16 * d.edges;
                writeln!(
                    w,
                    "  {:<18} {:>13} {:>15} {:>5}  {:>9}  {}",
                    d.name,
                    d.nodes,
                    d.edges,
                    d.features,
                    fmt_bytes(bytes),
                    d.description
                )?;
            }
        }
        if !self.gpus.is_empty() {
            writeln!(w, "gpus (memory as NVML reports it):")?;
            for g in &self.gpus {
                writeln!(
                    w,
                    "  {:<18} {:>9}  {}  (also: {})",
                    g.name,
                    fmt_bytes(g.total_bytes()),
                    g.description,
                    g.aliases.join(", ")
                )?;
            }
        }
        if !self.jobs.is_empty() {
            writeln!(w, "jobs (plan them by name):")?;
            for (name, description) in &self.jobs {
                writeln!(w, "  {name:<24} {description}")?;
            }
        }
        Ok(())
    }
}

/// Runs `headroom profiles`.
pub fn run(args: &ProfilesArgs) -> Result<ExitCode> {
    let want = |k: &str| args.kind.as_deref().is_none_or(|w| w == k);
    let jobs = if want("jobs") {
        super::names("jobs")
            .map(|n| {
                let spec = super::text("jobs", n)
                    .and_then(|t| crate::yaml::from_str::<crate::spec::JobSpec>(t).ok());
                (
                    n.to_string(),
                    spec.and_then(|s| s.description).unwrap_or_default(),
                )
            })
            .collect()
    } else {
        vec![]
    };
    let list = ProfileList {
        datasets: if want("datasets") {
            all_datasets()?
        } else {
            vec![]
        },
        gpus: if want("gpus") { all_gpus()? } else { vec![] },
        jobs,
    };
    emit(&list, args.format, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}
