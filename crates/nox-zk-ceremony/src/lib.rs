//! The I/O half of the Groth16 setup ceremony (issue 34, moved out of `nox zk setup`): the
//! ceremony itself is `nox-zk-setup` (pure: bytes in, bytes out, randomness injected); this
//! crate reads and writes its transcript files (atomically: a `.partial` file synced, then
//! renamed), draws a contributor's randomness from the operating system (mixed with optional
//! typed entropy), computes NOX's circuits' starting phase-2 keys, and writes the final keys
//! and Solidity verifier. `cli` is `nox zk setup` itself (its clap arguments, its steps, what
//! it prints); the binary only parses the command line and calls `cli::run`.

pub mod cli;

use std::io::Write;
use std::path::{Path, PathBuf};

use ark_serialize::CanonicalSerialize;
use nox_zk_setup::{Phase1, Phase2};
use rand_core_06::{OsRng, RngCore, SeedableRng};

/// What went wrong; the `Display` texts are `nox zk setup`'s messages.
#[derive(Debug, thiserror::Error)]
pub enum CeremonyError {
    /// A file could not be read, written or renamed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A transcript file is malformed or refused.
    #[error("{}: {source}", path.display())]
    Transcript {
        /// The file.
        path: PathBuf,
        /// Why.
        source: nox_zk_setup::SetupError,
    },
    /// The ceremony refused a step (a contribution or a key that does not verify).
    #[error(transparent)]
    Setup(#[from] nox_zk_setup::SetupError),
    /// `--power` is too large for this machine's `usize`.
    #[error("--power too large")]
    PowerTooLarge,
    /// A "previous" phase-1 transcript with no contribution that is not the starting one.
    #[error("{}: has no contributions but is not a starting transcript", path.display())]
    NotStarting {
        /// The file.
        path: PathBuf,
    },
    /// A key could not be serialised.
    #[error("{0}")]
    Serialize(#[from] ark_serialize::SerializationError),
    /// The final key does not have the circuit's number of public inputs.
    #[error("the key does not have the circuit's number of inputs")]
    Inputs,
}

/// NOX's circuits (`--circuit transfer|insert`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Circuit {
    /// The 2-in/2-out private-transfer circuit (docs/design/zk-payment.md §9).
    Transfer,
    /// The batch-insertion circuit.
    Insert,
}

impl Circuit {
    /// The verifier contract's name (and its file's, `<name>.sol`).
    pub fn verifier_name(self) -> &'static str {
        match self {
            Self::Transfer => "TransferVerifier",
            Self::Insert => "InsertVerifier",
        }
    }
}

/// Reads a whole file.
pub fn read(path: &Path) -> Result<Vec<u8>, CeremonyError> {
    std::fs::read(path).map_err(|source| CeremonyError::Io { path: path.to_path_buf(), source })
}

/// Writes `bytes` to `path` atomically: `<path>.partial`, synced, then renamed over `path`.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), CeremonyError> {
    let tmp = path.with_extension("partial");
    let io = |path: &Path, source| CeremonyError::Io { path: path.to_path_buf(), source };
    let mut f = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))
}

/// A phase-1 transcript of size 2^`power`, serialised.
pub fn new_phase1(power: u32) -> Result<Vec<u8>, CeremonyError> {
    let size = 1usize.checked_shl(power).filter(|_| power < 64).ok_or(CeremonyError::PowerTooLarge)?;
    Ok(Phase1::new(size)?.to_bytes()?)
}

/// Parses a phase-1 transcript read from `path` (every point checked).
pub fn parse_phase1(path: &Path, bytes: &[u8]) -> Result<Phase1, CeremonyError> {
    Phase1::from_bytes(bytes).map_err(|source| CeremonyError::Transcript { path: path.to_path_buf(), source })
}

/// A phase-1 transcript to make a key from: refused if its secrets are the public starting
/// ones (no contribution, points still the generators, a proof of knowledge that does not
/// verify), as a key made from it is forgeable.
pub fn check_contributed_phase1(path: &Path, phase1: &Phase1) -> Result<(), CeremonyError> {
    phase1.check_contributed().map_err(|source| CeremonyError::Transcript { path: path.to_path_buf(), source })
}

/// `prev` (read from `prev_path`) may start a verification: it has contributions or is the
/// starting transcript.
pub fn check_previous_phase1(prev_path: &Path, prev: &Phase1) -> Result<(), CeremonyError> {
    if prev.contributions.is_empty() && !prev.is_initial() {
        return Err(CeremonyError::NotStarting { path: prev_path.to_path_buf() });
    }
    Ok(())
}

/// Parses a phase-2 transcript read from `path`.
pub fn parse_phase2(path: &Path, bytes: &[u8]) -> Result<Phase2, CeremonyError> {
    Phase2::from_bytes(bytes).map_err(|source| CeremonyError::Transcript { path: path.to_path_buf(), source })
}

/// A phase-2 transcript read from `path` whose δ is no longer public.
pub fn check_contributed_phase2(path: &Path, phase2: &Phase2) -> Result<(), CeremonyError> {
    phase2.check_contributed().map_err(|source| CeremonyError::Transcript { path: path.to_path_buf(), source })
}

/// The contributor's randomness: 32 bytes from the OS, hashed with the typed entropy.
pub fn contributor_rng(entropy: Option<&str>) -> rand_chacha_03::ChaCha20Rng {
    let mut os = [0u8; 32];
    OsRng.fill_bytes(&mut os);
    let mut h = blake3::Hasher::new_derive_key("NOX zk setup v1 contributor randomness");
    h.update(&os);
    h.update(entropy.unwrap_or_default().as_bytes());
    zeroize::Zeroize::zeroize(&mut os);
    rand_chacha_03::ChaCha20Rng::from_seed(*h.finalize().as_bytes())
}

/// The circuit's δ = 1 phase-2 key over `phase1`'s powers.
pub fn initial_phase2(phase1: &Phase1, circuit: Circuit) -> Result<Phase2, CeremonyError> {
    Ok(match circuit {
        Circuit::Transfer => Phase2::new(phase1, nox_zk::transfer::TransferCircuit::blank()),
        Circuit::Insert => Phase2::new(phase1, nox_zk::insert::InsertCircuit::blank()),
    }?)
}

/// A transcript's hash, hex (what contributors publish).
pub fn hash_hex(bytes: &[u8]) -> String {
    hex::encode(nox_zk_setup::transcript_hash(bytes))
}

/// What a finished ceremony publishes for one circuit.
#[derive(Clone, Debug)]
pub struct FinalKeys {
    /// The proving key (arkworks, compressed).
    pub proving: Vec<u8>,
    /// The verifying key (arkworks, compressed).
    pub verifying: Vec<u8>,
    /// The verifier contract's name.
    pub name: &'static str,
    /// The verifier contract's Solidity source.
    pub solidity: String,
}

impl FinalKeys {
    /// Serialises `pk` (the key [`Phase2::finalize`] checked) and renders its verifier, its
    /// provenance naming the ceremony's `origin`.
    pub fn new(
        pk: &ark_groth16::ProvingKey<ark_bn254::Bn254>,
        circuit: Circuit,
        origin: [u8; 32],
    ) -> Result<Self, CeremonyError> {
        let mut proving = Vec::new();
        pk.serialize_compressed(&mut proving)?;
        let mut verifying = Vec::new();
        pk.vk.serialize_compressed(&mut verifying)?;
        let provenance = format!("Keys from the ceremony with origin {}.", hex::encode(origin));
        let solidity = match circuit {
            Circuit::Transfer => nox_zk::solidity::transfer_verifier(&pk.vk, &provenance),
            Circuit::Insert => nox_zk::solidity::insert_verifier(&pk.vk, &provenance),
        }
        .ok_or(CeremonyError::Inputs)?;
        Ok(Self { proving, verifying, name: circuit.verifier_name(), solidity })
    }

    /// Writes `proving.key`, `verifying.key` and `<name>.sol` into `dir` (created if needed).
    pub fn write_to(&self, dir: &Path) -> Result<(), CeremonyError> {
        std::fs::create_dir_all(dir).map_err(|source| CeremonyError::Io { path: dir.to_path_buf(), source })?;
        write(&dir.join("proving.key"), &self.proving)?;
        write(&dir.join("verifying.key"), &self.verifying)?;
        write(&dir.join(format!("{}.sol", self.name)), self.solidity.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_whole_and_errors_name_them() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.bin");
        write(&path, b"abc").unwrap();
        assert_eq!(read(&path).unwrap(), b"abc");
        assert!(!tmp.path().join("t.partial").exists(), "the staging file was left behind");
        let missing = tmp.path().join("missing");
        let error = read(&missing).unwrap_err();
        assert!(error.to_string().starts_with(&format!("{}: ", missing.display())), "{error}");
        let error = write(&tmp.path().join("no-dir/x"), b"").unwrap_err();
        assert!(error.to_string().contains("no-dir/x.partial"), "{error}");
    }

    #[test]
    fn transcripts_round_trip_and_the_starting_one_is_refused_for_keys() {
        assert!(matches!(new_phase1(64), Err(CeremonyError::PowerTooLarge)));
        let bytes = new_phase1(2).unwrap();
        let path = Path::new("p1.bin");
        let p1 = parse_phase1(path, &bytes).unwrap();
        check_previous_phase1(path, &p1).expect("the starting transcript may be a previous one");
        let error = check_contributed_phase1(path, &p1).unwrap_err();
        assert!(error.to_string().starts_with("p1.bin: "), "{error}");
        let error = parse_phase1(path, &bytes[..bytes.len() - 1]).unwrap_err();
        assert!(matches!(error, CeremonyError::Transcript { .. }), "{error}");
        let next = p1.contribute(&mut contributor_rng(Some("typed"))).unwrap();
        check_contributed_phase1(path, &next).expect("one contribution");
        assert_eq!(hash_hex(&bytes).len(), 64);
    }

    #[test]
    fn contributor_randomness_differs_per_draw() {
        let mut a = contributor_rng(None);
        let mut b = contributor_rng(None);
        assert_ne!(a.next_u64(), b.next_u64());
    }
}
