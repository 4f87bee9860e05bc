//! `nox zk setup` (docs/spec/ceremony.md): its arguments (clap) and its steps, printing results
//! to `out` (the binary's stdout) and timed progress to `progress` (its stderr). The binary
//! only parses the command line and calls [`run`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Subcommand};
use nox_zk_setup::{Phase1, Phase2};
use rand_core_06::OsRng;

use crate::{CeremonyError, Circuit, FinalKeys};

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
    pub input: PathBuf,
    /// Output file.
    #[arg(long)]
    pub out: PathBuf,
    /// Extra entropy (any text), mixed with the operating system's randomness.
    #[arg(long)]
    pub entropy: Option<String>,
}

/// `finalize` arguments.
#[derive(Args)]
pub struct FinalizeArgs {
    /// The phase-1 transcript.
    #[arg(long)]
    pub phase1: PathBuf,
    /// Which circuit.
    #[arg(long, value_enum)]
    pub circuit: Circuit,
    /// The last phase-2 transcript.
    #[arg(long = "in")]
    pub input: PathBuf,
    /// Output directory: `proving.key`, `verifying.key` (arkworks, compressed) and the verifier
    /// contract `<Name>.sol`.
    #[arg(long)]
    pub out: PathBuf,
}

/// Where a command writes: its results and its timed progress lines.
struct Console<'a> {
    out: &'a mut dyn Write,
    progress: &'a mut dyn Write,
}

impl Console<'_> {
    /// `label… ` then, once `f` returns, its time (`1.2 s`), on the progress stream. Progress
    /// that cannot be written is not an error of the ceremony.
    fn step<T>(&mut self, label: &str, f: impl FnOnce() -> Result<T, CeremonyError>) -> Result<T, CeremonyError> {
        let _ = write!(self.progress, "{label}… ");
        let _ = self.progress.flush();
        let t = Instant::now();
        let out = f();
        let _ = writeln!(self.progress, "{:.1} s", t.elapsed().as_secs_f64());
        out
    }

    fn say(&mut self, line: std::fmt::Arguments<'_>) {
        let _ = writeln!(self.out, "{line}");
    }

    fn phase1_file(&mut self, path: &Path) -> Result<Phase1, CeremonyError> {
        let bytes = crate::read(path)?;
        self.step(&format!("reading {} (checking every point)", path.display()), || crate::parse_phase1(path, &bytes))
    }

    /// A phase-1 file to make a key from (`phase2 new`, `phase2 verify`, `finalize`): parsed
    /// and refused if its secrets are the public starting ones: a key made from it is forgeable.
    fn contributed_phase1_file(&mut self, path: &Path) -> Result<Phase1, CeremonyError> {
        let p = self.phase1_file(path)?;
        crate::check_contributed_phase1(path, &p)?;
        Ok(p)
    }

    fn phase2_file(&mut self, path: &Path) -> Result<Phase2, CeremonyError> {
        let bytes = crate::read(path)?;
        self.step(&format!("reading {}", path.display()), || crate::parse_phase2(path, &bytes))
    }

    fn initial_phase2(&mut self, phase1: &Phase1, circuit: Circuit) -> Result<Phase2, CeremonyError> {
        self.step("computing the circuit's δ = 1 key from the powers (Lagrange basis, queries)", || {
            crate::initial_phase2(phase1, circuit)
        })
    }

    fn wrote_contribution(&mut self, out: &Path, contributions: usize, bytes: &[u8]) {
        self.say(format_args!(
            "wrote {}: contribution {contributions} ; publish its transcript hash {}",
            out.display(),
            crate::hash_hex(bytes)
        ));
    }
}

/// Runs a `nox zk` command: results to `out`, progress (`reading …… 0.3 s`) to `progress`. The
/// errors' `Display` is the command's message.
pub fn run(command: ZkCommand, out: &mut dyn Write, progress: &mut dyn Write) -> Result<(), CeremonyError> {
    let mut c = Console { out, progress };
    let ZkCommand::Setup(command) = command;
    match command {
        SetupCommand::Phase1(Phase1Command::New { power, out }) => {
            let bytes = crate::new_phase1(power)?;
            crate::write(&out, &bytes)?;
            c.say(format_args!(
                "wrote {} (size 2^{power}); transcript hash {}",
                out.display(),
                crate::hash_hex(&bytes)
            ));
        }
        SetupCommand::Phase1(Phase1Command::Contribute(a)) => {
            let prev = c.phase1_file(&a.input)?;
            let mut rng = crate::contributor_rng(a.entropy.as_deref());
            let next = c.step("contributing (τ, α, β powers)", || Ok(prev.contribute(&mut rng)?))?;
            let bytes = next.to_bytes()?;
            crate::write(&a.out, &bytes)?;
            c.wrote_contribution(&a.out, next.contributions.len(), &bytes);
        }
        SetupCommand::Phase1(Phase1Command::Verify { prev, next }) => {
            let (p, n) = (c.phase1_file(&prev)?, c.phase1_file(&next)?);
            crate::check_previous_phase1(&prev, &p)?;
            c.step("verifying the contribution and the powers' structure", || Ok(Phase1::verify(&p, &n, &mut OsRng)?))?;
            crate::check_contributed_phase1(&next, &n)?;
            c.say(format_args!("ok: {} is {} plus one valid contribution", next.display(), prev.display()));
        }
        SetupCommand::Phase2(Phase2Command::New { phase1, circuit, out }) => {
            let p1 = c.contributed_phase1_file(&phase1)?;
            let p2 = c.initial_phase2(&p1, circuit)?;
            let bytes = p2.to_bytes()?;
            crate::write(&out, &bytes)?;
            c.say(format_args!("wrote {}; origin {}", out.display(), hex::encode(p2.origin)));
        }
        SetupCommand::Phase2(Phase2Command::Contribute(a)) => {
            let prev = c.phase2_file(&a.input)?;
            let mut rng = crate::contributor_rng(a.entropy.as_deref());
            let next = c.step("contributing (δ)", || Ok(prev.contribute(&mut rng)?))?;
            let bytes = next.to_bytes()?;
            crate::write(&a.out, &bytes)?;
            c.wrote_contribution(&a.out, next.contributions.len(), &bytes);
        }
        SetupCommand::Phase2(Phase2Command::Verify { phase1, circuit, prev, next }) => {
            let p1 = c.contributed_phase1_file(&phase1)?;
            let initial = c.initial_phase2(&p1, circuit)?;
            let (p, n) = (c.phase2_file(&prev)?, c.phase2_file(&next)?);
            c.step("verifying the contribution and the key against the circuit", || {
                Ok(Phase2::verify(&initial, &p, &n, &mut OsRng)?)
            })?;
            c.say(format_args!("ok: {} is {} plus one valid contribution", next.display(), prev.display()));
        }
        SetupCommand::Finalize(a) => {
            let p1 = c.contributed_phase1_file(&a.phase1)?;
            let last = c.phase2_file(&a.input)?;
            // Refused before the minutes of recomputation if δ is still public.
            crate::check_contributed_phase2(&a.input, &last)?;
            let initial = c.initial_phase2(&p1, a.circuit)?;
            let pk = c.step("checking the key against the circuit", || Ok(last.finalize(&initial, &mut OsRng)?))?;
            let keys = FinalKeys::new(pk, a.circuit, last.origin)?;
            keys.write_to(&a.out)?;
            c.say(format_args!(
                "wrote {}/proving.key, verifying.key and {}.sol ({} contributions)",
                a.out.display(),
                keys.name,
                last.contributions.len()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        zk: ZkCommand,
    }

    fn parse(args: &[&str]) -> ZkCommand {
        Cli::try_parse_from(std::iter::once("zk").chain(args.iter().copied())).expect("parses").zk
    }

    /// Runs `args`; (stdout, stderr) as text, or the error's message.
    fn run_text(args: &[&str]) -> Result<(String, String), String> {
        let (mut out, mut progress) = (Vec::new(), Vec::new());
        run(parse(args), &mut out, &mut progress).map_err(|e| e.to_string())?;
        Ok((String::from_utf8(out).expect("utf-8"), String::from_utf8(progress).expect("utf-8")))
    }

    #[test]
    fn defaults_and_circuit_names_parse_as_documented() {
        let ZkCommand::Setup(SetupCommand::Phase1(Phase1Command::New { power, .. })) =
            parse(&["setup", "phase1", "new", "--out", "x"])
        else {
            panic!("phase1 new")
        };
        assert_eq!(power, 15, "the default covers both of NOX's circuits");
        for (name, circuit) in [("transfer", Circuit::Transfer), ("insert", Circuit::Insert)] {
            let ZkCommand::Setup(SetupCommand::Finalize(a)) =
                parse(&["setup", "finalize", "--phase1", "p", "--circuit", name, "--in", "i", "--out", "o"])
            else {
                panic!("finalize")
            };
            assert_eq!(a.circuit, circuit);
        }
        assert!(
            Cli::try_parse_from(["zk", "setup", "phase2", "new", "--phase1", "p", "--circuit", "x", "--out", "o"])
                .is_err()
        );
    }

    /// new → contribute → verify at a tiny size: the printed lines (hashes of the files written),
    /// the timed progress, and a verify of a transcript against itself refused.
    #[test]
    fn a_phase1_round_prints_what_it_wrote_and_verifies() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (p0, p1) = (dir.path().join("p0"), dir.path().join("p1"));
        let s = |p: &Path| p.to_str().expect("utf-8").to_owned();
        let (out, progress) = run_text(&["setup", "phase1", "new", "--power", "3", "--out", &s(&p0)]).expect("new");
        let hash0 = crate::hash_hex(&std::fs::read(&p0).expect("p0"));
        assert_eq!(out, format!("wrote {} (size 2^3); transcript hash {hash0}\n", p0.display()));
        assert!(progress.is_empty());

        let (out, progress) =
            run_text(&["setup", "phase1", "contribute", "--in", &s(&p0), "--out", &s(&p1), "--entropy", "t"])
                .expect("contribute");
        let hash1 = crate::hash_hex(&std::fs::read(&p1).expect("p1"));
        assert_eq!(out, format!("wrote {}: contribution 1 ; publish its transcript hash {hash1}\n", p1.display()));
        assert!(progress.starts_with(&format!("reading {} (checking every point)… ", p0.display())), "{progress}");
        assert!(progress.contains("contributing (τ, α, β powers)… ") && progress.ends_with(" s\n"), "{progress}");

        let (out, _) = run_text(&["setup", "phase1", "verify", &s(&p0), &s(&p1)]).expect("verify");
        assert_eq!(out, format!("ok: {} is {} plus one valid contribution\n", p1.display(), p0.display()));
        let refused = run_text(&["setup", "phase1", "verify", &s(&p1), &s(&p1)]).expect_err("no new contribution");
        assert!(!refused.is_empty());
        let missing = run_text(&["setup", "phase1", "verify", &s(&p0), &s(&dir.path().join("none"))])
            .expect_err("a missing file");
        assert!(missing.starts_with(&s(&dir.path().join("none"))), "the error names the file: {missing}");
    }
}
