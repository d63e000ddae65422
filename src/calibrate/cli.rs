//! Arguments of `headroom calibrate` and its entry point.

use std::process::ExitCode;

use crate::error::{Error, Result};

/// Arguments of `headroom calibrate`.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {}

/// Runs `headroom calibrate`.
pub fn run(_args: &CalibrateArgs) -> Result<ExitCode> {
    Err(Error::Unsupported(
        "headroom calibrate is not built yet".into(),
    ))
}
