//! Arguments of `headroom simulate-alloc` and its entry point.

use std::process::ExitCode;

use crate::error::{Error, Result};

/// Arguments of `headroom simulate-alloc`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {}

/// Runs `headroom simulate-alloc`.
pub fn run(_args: &SimulateArgs) -> Result<ExitCode> {
    Err(Error::Unsupported(
        "headroom simulate-alloc is not built yet".into(),
    ))
}
