//! The command line: one subcommand per verb, each with its arguments defined
//! next to the code that runs it, and the dispatch from verb to module.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::Result;

/// Predict, check and explain the memory of GNN training jobs.
#[derive(Debug, Parser)]
#[command(name = "headroom", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Predict peak host RAM and GPU memory per phase and recommend safe settings.
    Plan(crate::plan::cli::PlanArgs),
    /// The plan's verdict as an exit code: 0 fits, 1 does not fit, 2 bad input.
    Check(crate::plan::cli::CheckArgs),
    /// Name why a job died from its logs, dmesg, sacct output and exit code.
    Diagnose(crate::diagnose::cli::DiagnoseArgs),
    /// Run a command while recording its whole process tree's memory.
    Watch(crate::watch::cli::WatchArgs),
    /// Run a real calibration training and fit the estimators' coefficients.
    Calibrate(crate::calibrate::cli::CalibrateArgs),
    /// Replay a PyTorch CUDA memory snapshot through the caching-allocator simulator.
    SimulateAlloc(crate::alloc::cli::SimulateArgs),
    /// List the embedded dataset, GPU and job profiles.
    Profiles(crate::profiles::cli::ProfilesArgs),
    /// glibc's malloc thresholds, probed in this fresh process (calibrate
    /// re-executes itself for it: the threshold only rises in a process).
    #[command(name = "__malloc-probe", hide = true)]
    MallocProbe,
    /// Print the script that registers shell completion (profile names included).
    Completions {
        /// The shell to register with.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `headroom man > headroom.1`, `headroom man plan > headroom-plan.1`.
    Man {
        /// A verb whose own page to print.
        verb: Option<String>,
    },
}

/// Runs the chosen verb and returns the process exit code.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Plan(args) => crate::plan::cli::run_plan(&args),
        Command::Check(args) => crate::plan::cli::run_check(&args),
        Command::Diagnose(args) => crate::diagnose::cli::run(&args),
        Command::Watch(args) => crate::watch::cli::run(&args),
        Command::Calibrate(args) => crate::calibrate::cli::run(&args),
        Command::MallocProbe => {
            let found = crate::calibrate::glibc::probe();
            let json = serde_json::to_string(&found)
                .map_err(|e| crate::error::Error::Internal(format!("malloc probe: {e}")))?;
            write_stdout((json + "\n").as_bytes())
        }
        Command::SimulateAlloc(args) => crate::alloc::cli::run(&args),
        Command::Profiles(args) => crate::profiles::cli::run(&args),
        Command::Completions { shell } => {
            let script = crate::completion::registration(shell)
                .map_err(|e| crate::error::Error::bad(e.to_string()))?;
            write_stdout(&script)
        }
        Command::Man { verb } => {
            write_stdout(&crate::manpage::render(Cli::command(), verb.as_deref())?)
        }
    }
}

fn write_stdout(bytes: &[u8]) -> Result<ExitCode> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        // A closed pipe (`| head`) is the reader's choice, as in output::emit.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(crate::error::Error::io("<stdout>", e))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}
