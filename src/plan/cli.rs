//! Arguments of `headroom plan` / `headroom check` and their entry points.

use std::process::ExitCode;

use crate::error::{Error, Result};

/// Arguments of `headroom plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {}

/// Arguments of `headroom check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {}

/// Runs `headroom plan`.
pub fn run_plan(_args: &PlanArgs) -> Result<ExitCode> {
    Err(Error::Unsupported("headroom plan is not built yet".into()))
}

/// Runs `headroom check`.
pub fn run_check(_args: &CheckArgs) -> Result<ExitCode> {
    Err(Error::Unsupported("headroom check is not built yet".into()))
}
