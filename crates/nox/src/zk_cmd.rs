//! `nox zk setup`: the Groth16 setup ceremony on the command line (docs/spec/ceremony.md). The
//! ceremony itself is `nox-zk-setup` (pure); this file reads and writes the transcript files,
//! draws the contributor's secrets from the OS (mixed with optional typed entropy) and shows
//! progress.

use std::{
    io::Write,
    path::{Path, PathBuf},
    time::Instant,
};

use ark_serialize::CanonicalSerialize;
use clap::{Args, Subcommand, ValueEnum};
use nox_zk_setup::{Phase1, Phase2};
use rand_core_06::{OsRng, RngCore, SeedableRng};

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

type CmdResult<T = ()> = Result<T, String>;

fn read(path: &Path) -> CmdResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> CmdResult {
    let tmp = path.with_extension("partial");
    let mut f = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

fn step<T>(label: &str, f: impl FnOnce() -> CmdResult<T>) -> CmdResult<T> {
    eprint!("{label}… ");
    let t = Instant::now();
    let out = f();
    eprintln!("{:.1} s", t.elapsed().as_secs_f64());
    out
}

fn phase1_file(path: &Path) -> CmdResult<Phase1> {
    let bytes = read(path)?;
    step(&format!("reading {} (checking every point)", path.display()), || {
        Phase1::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    })
}

/// A phase-1 file to make a key from (`phase2 new`, `phase2 verify`, `finalize`): parsed and
/// refused if its secrets are the public starting ones (no contribution, points still the
/// generators, a proof of knowledge that does not verify): a key made from it is forgeable.
fn contributed_phase1_file(path: &Path) -> CmdResult<Phase1> {
    let p = phase1_file(path)?;
    p.check_contributed().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(p)
}

fn phase2_file(path: &Path) -> CmdResult<Phase2> {
    let bytes = read(path)?;
    step(&format!("reading {}", path.display()), || {
        Phase2::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    })
}

/// The contributor's randomness: 32 bytes from the OS, hashed with the typed entropy.
fn contributor_rng(entropy: Option<&str>) -> rand_chacha_03::ChaCha20Rng {
    let mut os = [0u8; 32];
    OsRng.fill_bytes(&mut os);
    let mut h = blake3::Hasher::new_derive_key("NOX zk setup v1 contributor randomness");
    h.update(&os);
    h.update(entropy.unwrap_or_default().as_bytes());
    zeroize::Zeroize::zeroize(&mut os);
    rand_chacha_03::ChaCha20Rng::from_seed(*h.finalize().as_bytes())
}

fn initial_phase2(phase1: &Phase1, circuit: Circuit) -> CmdResult<Phase2> {
    step("computing the circuit's δ = 1 key from the powers (Lagrange basis, queries)", || {
        match circuit {
            Circuit::Transfer => Phase2::new(phase1, nox_zk::transfer::TransferCircuit::blank()),
            Circuit::Insert => Phase2::new(phase1, nox_zk::insert::InsertCircuit::blank()),
        }
        .map_err(|e| e.to_string())
    })
}

fn hash_line(bytes: &[u8]) -> String {
    hex::encode(nox_zk_setup::transcript_hash(bytes))
}

/// Runs a `nox zk` command.
pub fn run(command: ZkCommand) -> CmdResult {
    let ZkCommand::Setup(command) = command;
    match command {
        SetupCommand::Phase1(Phase1Command::New { power, out }) => {
            let size = 1usize.checked_shl(power).filter(|_| power < 64).ok_or("--power too large")?;
            let p = Phase1::new(size).map_err(|e| e.to_string())?;
            let bytes = p.to_bytes().map_err(|e| e.to_string())?;
            write(&out, &bytes)?;
            println!("wrote {} (size 2^{power}); transcript hash {}", out.display(), hash_line(&bytes));
        }
        SetupCommand::Phase1(Phase1Command::Contribute(a)) => {
            let prev = phase1_file(&a.input)?;
            let mut rng = contributor_rng(a.entropy.as_deref());
            let next =
                step("contributing (τ, α, β powers)", || prev.contribute(&mut rng).map_err(|e| e.to_string()))?;
            let bytes = next.to_bytes().map_err(|e| e.to_string())?;
            write(&a.out, &bytes)?;
            println!(
                "wrote {}: contribution {} ; publish its transcript hash {}",
                a.out.display(),
                next.contributions.len(),
                hash_line(&bytes)
            );
        }
        SetupCommand::Phase1(Phase1Command::Verify { prev, next }) => {
            let (p, n) = (phase1_file(&prev)?, phase1_file(&next)?);
            if p.contributions.is_empty() && !p.is_initial() {
                return Err(format!("{}: has no contributions but is not a starting transcript", prev.display()));
            }
            step("verifying the contribution and the powers' structure", || {
                Phase1::verify(&p, &n, &mut OsRng).map_err(|e| e.to_string())
            })?;
            n.check_contributed().map_err(|e| format!("{}: {e}", next.display()))?;
            println!("ok: {} is {} plus one valid contribution", next.display(), prev.display());
        }
        SetupCommand::Phase2(Phase2Command::New { phase1, circuit, out }) => {
            let p1 = contributed_phase1_file(&phase1)?;
            let p2 = initial_phase2(&p1, circuit)?;
            let bytes = p2.to_bytes().map_err(|e| e.to_string())?;
            write(&out, &bytes)?;
            println!("wrote {}; origin {}", out.display(), hex::encode(p2.origin));
        }
        SetupCommand::Phase2(Phase2Command::Contribute(a)) => {
            let prev = phase2_file(&a.input)?;
            let mut rng = contributor_rng(a.entropy.as_deref());
            let next = step("contributing (δ)", || prev.contribute(&mut rng).map_err(|e| e.to_string()))?;
            let bytes = next.to_bytes().map_err(|e| e.to_string())?;
            write(&a.out, &bytes)?;
            println!(
                "wrote {}: contribution {} ; publish its transcript hash {}",
                a.out.display(),
                next.contributions.len(),
                hash_line(&bytes)
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
            last.check_contributed().map_err(|e| format!("{}: {e}", a.input.display()))?;
            let initial = initial_phase2(&p1, a.circuit)?;
            let pk = step("checking the key against the circuit", || {
                last.finalize(&initial, &mut OsRng).map_err(|e| e.to_string())
            })?;
            std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
            let mut pk_bytes = Vec::new();
            pk.serialize_compressed(&mut pk_bytes).map_err(|e| e.to_string())?;
            let mut vk_bytes = Vec::new();
            pk.vk.serialize_compressed(&mut vk_bytes).map_err(|e| e.to_string())?;
            let provenance = format!("Keys from the ceremony with origin {}.", hex::encode(last.origin));
            let (name, sol) = match a.circuit {
                Circuit::Transfer => ("TransferVerifier", nox_zk::solidity::transfer_verifier(&pk.vk, &provenance)),
                Circuit::Insert => ("InsertVerifier", nox_zk::solidity::insert_verifier(&pk.vk, &provenance)),
            };
            let sol = sol.ok_or("the key does not have the circuit's number of inputs")?;
            write(&a.out.join("proving.key"), &pk_bytes)?;
            write(&a.out.join("verifying.key"), &vk_bytes)?;
            write(&a.out.join(format!("{name}.sol")), sol.as_bytes())?;
            println!(
                "wrote {}/proving.key, verifying.key and {name}.sol ({} contributions)",
                a.out.display(),
                last.contributions.len()
            );
        }
    }
    Ok(())
}
