//! `nox zk setup`: the Groth16 setup ceremony on the command line (docs/spec/ceremony.md). The
//! ceremony itself is `nox-zk-setup` (pure); its files and randomness are `nox-zk-ceremony`;
//! this file parses the arguments and shows progress.

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use clap::{Args, Subcommand, ValueEnum};
use nox_zk_ceremony as ceremony;
use nox_zk_setup::{Phase1, Phase2};
use rand_core_06::OsRng;

/// `nox zk …`
#[derive(Subcommand)]
pub enum ZkCommand {
    /// The trusted-setup ceremony for the circuits' Groth16 keys.
    #[command(subcommand)]
    Setup(SetupCommand),
}

/// `nox zk setup …`
#[derive(Subcommand)]
pub enum SetupCommand {
    /// Phase 1: powers of tau (any circuit up to the size).
    #[command(subcommand)]
    Phase1(Phase1Command),
    /// Phase 2: one circuit's key over a finished phase 1.
    #[command(subcommand)]
    Phase2(Phase2Command),
    /// Write the final proving key, verifying key and Solidity verifier of a phase-2 transcript
    /// (after verifying it against phase 1 and the circuit).
    Finalize(FinalizeArgs),
}

/// Phase-1 commands.
#[derive(Subcommand)]
pub enum Phase1Command {
    /// Start a transcript.
    New {
        /// log2 of the size (15: circuits up to 32,768 constraints + inputs, both of NOX's).
        #[arg(long, default_value_t = 15)]
        power: u32,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Add your contribution.
    Contribute(ContributeArgs),
    /// Check that NEXT is PREV plus one valid contribution (PREV may be the starting file).
    Verify {
        /// The transcript before the contribution.
        prev: PathBuf,
        /// The transcript after it.
        next: PathBuf,
    },
}

/// Phase-2 commands.
#[derive(Subcommand)]
pub enum Phase2Command {
    /// Start a circuit's transcript from a finished phase 1.
    New {
        /// The phase-1 transcript.
        #[arg(long)]
        phase1: PathBuf,
        /// Which circuit.
        #[arg(long, value_enum)]
        circuit: Circuit,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Add your contribution.
    Contribute(ContributeArgs),
    /// Check that NEXT is PREV plus one valid contribution, and a valid key for the circuit
    /// over the phase-1 powers (recomputed here).
    Verify {
        /// The phase-1 transcript.
        #[arg(long)]
        phase1: PathBuf,
        /// Which circuit.
        #[arg(long, value_enum)]
        circuit: Circuit,
        /// The transcript before the contribution.
        prev: PathBuf,
        /// The transcript after it.
        next: PathBuf,
    },
}

/// `contribute` arguments.
#[derive(Args)]
pub struct ContributeArgs {
    /// The transcript to extend.
    #[arg(long = "in")]
    input: PathBuf,
    /// Output file.
    #[arg(long)]
    out: PathBuf,
    /// Extra entropy (any text), mixed with the operating system's randomness.
    #[arg(long)]
    entropy: Option<String>,
}

/// `finalize` arguments.
#[derive(Args)]
pub struct FinalizeArgs {
    /// The phase-1 transcript.
    #[arg(long)]
    phase1: PathBuf,
    /// Which circuit.
    #[arg(long, value_enum)]
    circuit: Circuit,
    /// The last phase-2 transcript.
    #[arg(long = "in")]
    input: PathBuf,
    /// Output directory: `proving.key`, `verifying.key` (arkworks, compressed) and the verifier
    /// contract `<Name>.sol`.
    #[arg(long)]
    out: PathBuf,
}

/// NOX's circuits.
#[derive(Clone, Copy, ValueEnum)]
pub enum Circuit {
    /// The 2-in/2-out private-transfer circuit (docs/design/zk-payment.md §9).
    Transfer,
    /// The batch-insertion circuit.
    Insert,
}

impl From<Circuit> for ceremony::Circuit {
    fn from(c: Circuit) -> Self {
        match c {
            Circuit::Transfer => Self::Transfer,
            Circuit::Insert => Self::Insert,
        }
    }
}

type CmdResult<T = ()> = Result<T, String>;

fn err(e: ceremony::CeremonyError) -> String {
    e.to_string()
}

fn step<T>(label: &str, f: impl FnOnce() -> CmdResult<T>) -> CmdResult<T> {
    eprint!("{label}… ");
    let t = Instant::now();
    let out = f();
    eprintln!("{:.1} s", t.elapsed().as_secs_f64());
    out
}

fn phase1_file(path: &Path) -> CmdResult<Phase1> {
    let bytes = ceremony::read(path).map_err(err)?;
    step(&format!("reading {} (checking every point)", path.display()), || {
        ceremony::parse_phase1(path, &bytes).map_err(err)
    })
}

/// A phase-1 file to make a key from (`phase2 new`, `phase2 verify`, `finalize`): parsed and
/// refused if its secrets are the public starting ones: a key made from it is forgeable.
fn contributed_phase1_file(path: &Path) -> CmdResult<Phase1> {
    let p = phase1_file(path)?;
    ceremony::check_contributed_phase1(path, &p).map_err(err)?;
    Ok(p)
}

fn phase2_file(path: &Path) -> CmdResult<Phase2> {
    let bytes = ceremony::read(path).map_err(err)?;
    step(&format!("reading {}", path.display()), || ceremony::parse_phase2(path, &bytes).map_err(err))
}

fn initial_phase2(phase1: &Phase1, circuit: Circuit) -> CmdResult<Phase2> {
    step("computing the circuit's δ = 1 key from the powers (Lagrange basis, queries)", || {
        ceremony::initial_phase2(phase1, circuit.into()).map_err(err)
    })
}

/// Runs a `nox zk` command.
pub fn run(command: ZkCommand) -> CmdResult {
    let ZkCommand::Setup(command) = command;
    match command {
        SetupCommand::Phase1(Phase1Command::New { power, out }) => {
            let bytes = ceremony::new_phase1(power).map_err(err)?;
            ceremony::write(&out, &bytes).map_err(err)?;
            println!("wrote {} (size 2^{power}); transcript hash {}", out.display(), ceremony::hash_hex(&bytes));
        }
        SetupCommand::Phase1(Phase1Command::Contribute(a)) => {
            let prev = phase1_file(&a.input)?;
            let mut rng = ceremony::contributor_rng(a.entropy.as_deref());
            let next =
                step("contributing (τ, α, β powers)", || prev.contribute(&mut rng).map_err(|e| e.to_string()))?;
            let bytes = next.to_bytes().map_err(|e| e.to_string())?;
            ceremony::write(&a.out, &bytes).map_err(err)?;
            println!(
                "wrote {}: contribution {} ; publish its transcript hash {}",
                a.out.display(),
                next.contributions.len(),
                ceremony::hash_hex(&bytes)
            );
        }
        SetupCommand::Phase1(Phase1Command::Verify { prev, next }) => {
            let (p, n) = (phase1_file(&prev)?, phase1_file(&next)?);
            ceremony::check_previous_phase1(&prev, &p).map_err(err)?;
            step("verifying the contribution and the powers' structure", || {
                Phase1::verify(&p, &n, &mut OsRng).map_err(|e| e.to_string())
            })?;
            ceremony::check_contributed_phase1(&next, &n).map_err(err)?;
            println!("ok: {} is {} plus one valid contribution", next.display(), prev.display());
        }
        SetupCommand::Phase2(Phase2Command::New { phase1, circuit, out }) => {
            let p1 = contributed_phase1_file(&phase1)?;
            let p2 = initial_phase2(&p1, circuit)?;
            let bytes = p2.to_bytes().map_err(|e| e.to_string())?;
            ceremony::write(&out, &bytes).map_err(err)?;
            println!("wrote {}; origin {}", out.display(), hex::encode(p2.origin));
        }
        SetupCommand::Phase2(Phase2Command::Contribute(a)) => {
            let prev = phase2_file(&a.input)?;
            let mut rng = ceremony::contributor_rng(a.entropy.as_deref());
            let next = step("contributing (δ)", || prev.contribute(&mut rng).map_err(|e| e.to_string()))?;
            let bytes = next.to_bytes().map_err(|e| e.to_string())?;
            ceremony::write(&a.out, &bytes).map_err(err)?;
            println!(
                "wrote {}: contribution {} ; publish its transcript hash {}",
                a.out.display(),
                next.contributions.len(),
                ceremony::hash_hex(&bytes)
            );
        }
        SetupCommand::Phase2(Phase2Command::Verify { phase1, circuit, prev, next }) => {
            let p1 = contributed_phase1_file(&phase1)?;
            let initial = initial_phase2(&p1, circuit)?;
            let (p, n) = (phase2_file(&prev)?, phase2_file(&next)?);
            step("verifying the contribution and the key against the circuit", || {
                Phase2::verify(&initial, &p, &n, &mut OsRng).map_err(|e| e.to_string())
            })?;
            println!("ok: {} is {} plus one valid contribution", next.display(), prev.display());
        }
        SetupCommand::Finalize(a) => {
            let p1 = contributed_phase1_file(&a.phase1)?;
            let last = phase2_file(&a.input)?;
            // Refused before the minutes of recomputation if δ is still public.
            ceremony::check_contributed_phase2(&a.input, &last).map_err(err)?;
            let initial = initial_phase2(&p1, a.circuit)?;
            let pk = step("checking the key against the circuit", || {
                last.finalize(&initial, &mut OsRng).map_err(|e| e.to_string())
            })?;
            let keys = ceremony::FinalKeys::new(pk, a.circuit.into(), last.origin).map_err(err)?;
            keys.write_to(&a.out).map_err(err)?;
            println!(
                "wrote {}/proving.key, verifying.key and {}.sol ({} contributions)",
                a.out.display(),
                keys.name,
                last.contributions.len()
            );
        }
    }
    Ok(())
}
