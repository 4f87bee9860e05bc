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
    /// Generate a node's long-term identity (Ed25519) and link (X25519) keys
    /// in a new directory (mode 0700, files 0600) and print the public parts.
    Keygen {
        /// Key directory; refused if it already holds keys.
        #[arg(long)]
        dir: std::path::PathBuf,
    },
    /// Measurement tooling: every result is JSON with machine and commit.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args).map_err(|e| e.to_string()),
        Command::Keygen { dir } => keygen(&dir),
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

fn keygen(dir: &std::path::Path) -> Result<(), String> {
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
    let identity = nox_keystore::generate_identity(dir, &mut rng).map_err(|e| e.to_string())?;
    println!("wrote keys to {}", dir.display());
    println!("{}", identity.public());
    Ok(())
}
