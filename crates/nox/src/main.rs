//! `nox`: the NOX command-line entry point.
#![forbid(unsafe_code)]

mod bench;
mod demo;
mod machine;

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
    /// Measurement tooling: every result is JSON with machine and commit.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args).map_err(|e| e.to_string()),
        Command::Bench(command) => bench::run(&command).map_err(|e| e.to_string()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
