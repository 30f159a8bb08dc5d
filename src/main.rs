//! `pipeplan`: the command-line interface. See `pipeplan --help` and the README.

mod args;
mod cli;
mod commands;
mod html;
mod progress;
mod report;
mod table;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}
