//! `headroom profiles`.

use std::process::ExitCode;

use crate::error::{Error, Result};

/// Arguments of `headroom profiles`.
#[derive(Debug, clap::Args)]
pub struct ProfilesArgs {}

/// Runs `headroom profiles`.
pub fn run(_args: &ProfilesArgs) -> Result<ExitCode> {
    Err(Error::Unsupported(
        "headroom profiles is not built yet".into(),
    ))
}
