//! `nox`: the NOX command-line entry point.
#![forbid(unsafe_code)]

mod demo;

use clap::{Parser, Subcommand};

/// NOX: a Loopix-style Sphinx mixnet whose exits relay blockchain traffic.
#[derive(Parser)]
#[command(name = "nox", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build Sphinx packets and peel them through in-memory hops: a forward
    /// request, a SURB reply, and the rejections (tamper, replay, wrong key).
    Demo(demo::DemoArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
