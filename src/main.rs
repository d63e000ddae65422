//! Entry point: parse the command line, run the verb, map the outcome to an
//! exit code. Nothing below this function prints an error or exits.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = headroom::cli::Cli::parse();
    match headroom::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("headroom: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}
