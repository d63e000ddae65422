//! Entry point: parse the command line, run the verb, map the outcome to an
//! exit code. Nothing below this function prints an error or exits.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
