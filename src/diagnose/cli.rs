//! Arguments of `headroom diagnose` and its entry point.

use std::process::ExitCode;

use crate::error::{Error, Result};

/// Arguments of `headroom diagnose`.
#[derive(Debug, clap::Args)]
pub struct DiagnoseArgs {}

/// Runs `headroom diagnose`.
pub fn run(_args: &DiagnoseArgs) -> Result<ExitCode> {
    Err(Error::Unsupported(
        "headroom diagnose is not built yet".into(),
    ))
}
