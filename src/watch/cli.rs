//! Arguments of `headroom watch` and its entry point.

use std::process::ExitCode;

use crate::error::{Error, Result};

/// Arguments of `headroom watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {}

/// Runs `headroom watch`.
pub fn run(_args: &WatchArgs) -> Result<ExitCode> {
    Err(Error::Unsupported("headroom watch is not built yet".into()))
}
