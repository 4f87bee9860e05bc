//! The wallet's proving keys on disk (issue 34: moved out of the `nox wallet` command): the
//! testnet keys cached in the wallet directory with their length and keccak-256 beside them,
//! and a ceremony's transfer key read from a file and checked before use. The caller shows
//! progress (deriving a testnet key takes seconds) and prints what these return.
//!
//! TESTNET: the cached keys are the `testnet_setup()` keys of `nox_zk`, whose randomness is
//! public; a deployment with value uses keys from `nox zk setup` (`--proving-key`) and verifiers
//! generated from them.

use std::path::{Path, PathBuf};

use alloy::primitives::{B256, keccak256};
use ark_serialize::CanonicalSerialize;
use thiserror::Error;

use crate::dir::{DirError, write_private};

/// A Groth16 proving key over BN254.
pub type ProvingKey = nox_zk::groth16::ProvingKey<ark_bn254::Bn254>;
type VerifyingKey = nox_zk::groth16::VerifyingKey<ark_bn254::Bn254>;

/// A circuit whose testnet proving key the wallet caches.
#[derive(Clone, Copy)]
pub struct CachedKey {
    /// The cache file's name in the wallet directory (the digest is `<file>.keccak`).
    pub file: &'static str,
    /// The circuit's name in messages ("transfer", "insertion").
    pub what: &'static str,
    setup: fn() -> Result<(ProvingKey, VerifyingKey), nox_zk::ZkError>,
    shape: fn(&ProvingKey) -> Result<(), nox_zk::ZkError>,
}

/// The 2-in/2-out transfer circuit's testnet key.
pub const TRANSFER: CachedKey = CachedKey {
    file: "testnet-transfer.pk",
    what: "transfer",
    setup: nox_zk::transfer::testnet_setup,
    shape: nox_zk::transfer::check_shape,
};

/// The batch insertion circuit's testnet key.
pub const INSERT: CachedKey =
    CachedKey { file: "testnet-insert.pk", what: "insertion", setup: nox_zk::insert::testnet_setup, shape: |_| Ok(()) };

/// Why a proving key could not be had.
#[derive(Debug, Error)]
pub enum KeyError {
    /// The ceremony key file could not be read.
    #[error("--proving-key {}: {reason}", path.display())]
    ReadCeremony {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        reason: String,
    },
    /// The ceremony key file is not a transfer proving key (truncated, corrupt, another circuit's).
    #[error(
        "--proving-key {}: {reason} ({len} bytes, keccak {keccak}); give the proving.key that `nox zk setup finalize \
         --circuit transfer` wrote for the pool's verifier",
        path.display()
    )]
    BadCeremony {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
        /// Its length.
        len: usize,
        /// Its keccak-256.
        keccak: B256,
    },
    /// Deriving or encoding a testnet key failed.
    #[error("{0}")]
    Zk(String),
    /// Writing the cache failed.
    #[error(transparent)]
    Write(#[from] DirError),
}

/// A ceremony key as read: the key, and the file's length and keccak-256 (to print).
pub struct CeremonyKey {
    /// The key.
    pub key: ProvingKey,
    /// The file's length in bytes.
    pub len: usize,
    /// The file's keccak-256.
    pub keccak: B256,
}

/// A transfer proving key from a ceremony (`nox zk setup finalize --circuit transfer` writes
/// it), checked before use: arkworks' encoding with nothing after it and the transfer circuit's
/// shape (a truncated or corrupt file, or another circuit's key, is refused by name).
pub fn ceremony_transfer_key(file: &Path) -> Result<CeremonyKey, KeyError> {
    let bytes =
        std::fs::read(file).map_err(|e| KeyError::ReadCeremony { path: file.to_owned(), reason: e.to_string() })?;
    let (len, keccak) = (bytes.len(), keccak256(&bytes));
    let key = nox_zk::transfer::proving_key_from_bytes(&bytes).map_err(|e| KeyError::BadCeremony {
        path: file.to_owned(),
        reason: e.to_string(),
        len,
        keccak,
    })?;
    Ok(CeremonyKey { key, len, keccak })
}

/// The record written beside a cached key: its length and keccak-256.
fn digest_line(bytes: &[u8]) -> String {
    format!("{} {}", bytes.len(), keccak256(bytes))
}

/// The cached key of `circuit` in the wallet directory `dir`: `Ok(None)` if there is none,
/// `Err(why)` if there is one that must not be used (its length or hash does not match the
/// recorded one, it does not decode, or the circuit's shape check refuses it).
pub fn load_cached(dir: &Path, circuit: &CachedKey) -> Result<Option<ProvingKey>, String> {
    let Ok(bytes) = std::fs::read(dir.join(circuit.file)) else {
        return Ok(None);
    };
    let recorded = std::fs::read_to_string(dir.join(format!("{}.keccak", circuit.file))).unwrap_or_default();
    if recorded.trim() != digest_line(&bytes) {
        return Err("its length or hash does not match the one recorded when it was written".to_owned());
    }
    nox_zk::groth16::proving_key_from_compressed_unchecked(&bytes[..])
        .map_err(|e| e.to_string())
        .and_then(|pk| (circuit.shape)(&pk).map(|()| Some(pk)).map_err(|e| e.to_string()))
}

/// Derives `circuit`'s testnet key and caches it in `dir` (mode 0600, with its digest).
pub fn derive(dir: &Path, circuit: &CachedKey) -> Result<ProvingKey, KeyError> {
    let (pk, _) = (circuit.setup)().map_err(|e| KeyError::Zk(e.to_string()))?;
    let mut bytes = Vec::new();
    pk.serialize_compressed(&mut bytes).map_err(|e| KeyError::Zk(e.to_string()))?;
    write_private(&dir.join(circuit.file), &bytes)?;
    write_private(&dir.join(format!("{}.keccak", circuit.file)), format!("{}\n", digest_line(&bytes)).as_bytes())?;
    Ok(pk)
}

/// The path of `circuit`'s cache file in `dir` (for messages).
pub fn cache_path(dir: &Path, circuit: &CachedKey) -> PathBuf {
    dir.join(circuit.file)
}
