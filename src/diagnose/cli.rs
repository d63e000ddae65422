//! Arguments of `headroom diagnose` and its entry point.

use std::path::PathBuf;
use std::process::ExitCode;

use super::exit::ExitStatus;
use super::{InputSource, Options, diagnose};
use crate::error::Result;
use crate::output::{Format, emit};

/// Arguments of `headroom diagnose`.
#[derive(Debug, clap::Args)]
pub struct DiagnoseArgs {
    /// Logs to read: Slurm output files, dmesg or `journalctl -k` output, seff
    /// output; `-` reads stdin.
    pub files: Vec<PathBuf>,
    /// The job's exit status: 137, -9 (Python returncode), or Slurm's
    /// exit:signal (0:125, 137:0).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub exit_code: Option<String>,
    /// `sacct -P` output (e.g. `-o JobID,State,ExitCode,MaxRSS,ReqMem`); `-` reads stdin.
    #[arg(long, value_name = "FILE|-")]
    pub sacct: Option<PathBuf>,
    /// A job spec or sbatch script: also recommend a configuration that fits.
    #[arg(long, value_name = "PATH")]
    pub job: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `headroom diagnose`: exit 0 whenever a verdict (even `unknown`) was made.
pub fn run(args: &DiagnoseArgs) -> Result<ExitCode> {
    let mut inputs: Vec<InputSource> = args
        .files
        .iter()
        .map(|f| InputSource::from_arg(f.clone(), false))
        .collect();
    if let Some(s) = &args.sacct {
        inputs.push(InputSource::from_arg(s.clone(), true));
    }
    let opts = Options {
        exit: args
            .exit_code
            .as_deref()
            .map(ExitStatus::parse)
            .transpose()?,
        job: args.job.clone(),
    };
    // With --job, the planner's safe configuration goes into
    // `diagnosis.recommendation` (wired in where `plan` is available).
    let diagnosis = diagnose(&inputs, &opts)?;
    emit(&diagnosis, args.format, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}
