//! Entry point: parse the command line, run the verb, map the outcome to an
//! exit code. Nothing below this function prints an error or exits.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

fn main() -> ExitCode {
    // A shell asking for completions (HEADROOM_COMPLETE=bash) is answered here and
    // the process exits; see src/completion.rs.
    clap_complete::CompleteEnv::with_factory(headroom::cli::Cli::command)
        .var(headroom::completion::VAR)
        .complete();
    let cli = headroom::cli::Cli::parse();
    match headroom::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // One line, no control character from input, whatever the message holds.
            let line = headroom::output::shown_within(&err.to_string(), 1000);
            eprintln!("headroom: {line}");
            ExitCode::from(err.exit_code())
        }
    }
}
