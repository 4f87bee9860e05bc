//! The wallet's files (docs/spec/notes.md §6): the seed sealed under a passphrase, and the
//! pool view sealed under a key derived from the seed. Bytes in, bytes out: the caller does the
//! disk I/O (and writes atomically).
//!
//! ```text
//! seed file  = "NOXWLT01" ‖ m_cost (u32 BE, KiB) ‖ t_cost (u32 BE) ‖ lanes (u32 BE) ‖ salt (16) ‖ nonce (12)
//!              ‖ ChaCha20-Poly1305(Argon2id(passphrase, salt, m, t, lanes), nonce, aad = all of the above, seed (32))
//! state file = "NOXWST01" ‖ nonce (12) ‖ ChaCha20-Poly1305(BLAKE3 derive_key("NOX wallet v1 state key", seed),
//!              nonce, aad = "NOXWST01", PoolView JSON)
//! ```
//! The Argon2id parameters are in the header (authenticated as associated data), so a file
//! written with stronger parameters stays readable and a tampered header fails to open.

use crate::{error::WalletError, keys::Seed};
use chacha20poly1305::{
    ChaCha20Poly1305, KeyInit,
    aead::{Aead, Payload},
};
use rand_core_06::{CryptoRng, RngCore};
use zeroize::Zeroizing;

const SEED_MAGIC: &[u8; 8] = b"NOXWLT01";
const STATE_MAGIC: &[u8; 8] = b"NOXWST01";
const SEED_HEADER: usize = 8 + 12 + 16 + 12;
const STATE_CONTEXT: &str = "NOX wallet v1 state key";

/// Argon2id cost parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KdfParams {
    /// Memory in KiB.
    pub m_cost: u32,
    /// Passes.
    pub t_cost: u32,
    /// Lanes.
    pub lanes: u32,
}

impl Default for KdfParams {
    /// 64 MiB, 3 passes, 1 lane (≈ 0.2–0.4 s on one core): the RFC 9106 second recommended
    /// option's shape with less memory, for a wallet opened per command.
    fn default() -> Self {
        KdfParams { m_cost: 64 * 1024, t_cost: 3, lanes: 1 }
    }
}

fn passphrase_key(passphrase: &[u8], salt: &[u8], p: KdfParams) -> Result<Zeroizing<[u8; 32]>, WalletError> {
    let params = argon2::Params::new(p.m_cost, p.t_cost, p.lanes, Some(32)).map_err(WalletError::Kdf)?;
    let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let mut key = Zeroizing::new([0u8; 32]);
    argon.hash_password_into(passphrase, salt, &mut key[..]).map_err(WalletError::Kdf)?;
    Ok(key)
}

/// Seals the seed under a passphrase.
pub fn seal_seed<R: RngCore + CryptoRng>(
    seed: &Seed,
    passphrase: &[u8],
    params: KdfParams,
    rng: &mut R,
) -> Result<Vec<u8>, WalletError> {
    let mut header = Vec::with_capacity(SEED_HEADER);
    header.extend_from_slice(SEED_MAGIC);
    for v in [params.m_cost, params.t_cost, params.lanes] {
        header.extend_from_slice(&v.to_be_bytes());
    }
    let mut salt = [0u8; 16];
    rng.fill_bytes(&mut salt);
    let mut nonce = [0u8; 12];
    rng.fill_bytes(&mut nonce);
    header.extend_from_slice(&salt);
    header.extend_from_slice(&nonce);
    let key = passphrase_key(passphrase, &salt, params)?;
    let cipher = ChaCha20Poly1305::new((&*key).into());
    let sealed =
        cipher.encrypt(&nonce.into(), Payload { msg: seed.as_bytes(), aad: &header }).map_err(|_| WalletError::Seal)?;
    header.extend_from_slice(&sealed);
    Ok(header)
}

/// Opens a seed file. Refuses Argon2 parameters beyond 4 GiB or 64 passes (a file cannot make the
/// wallet allocate without bound).
pub fn open_seed(bytes: &[u8], passphrase: &[u8]) -> Result<Seed, WalletError> {
    if bytes.len() != SEED_HEADER + 32 + 16 {
        return Err(WalletError::BadFile("wrong length for a seed file"));
    }
    let (header, sealed) = bytes.split_at(SEED_HEADER);
    if &header[..8] != SEED_MAGIC {
        return Err(WalletError::BadFile("bad magic (not a NOX wallet key file, or another version)"));
    }
    let word =
        |i: usize| u32::from_be_bytes([header[8 + 4 * i], header[9 + 4 * i], header[10 + 4 * i], header[11 + 4 * i]]);
    let params = KdfParams { m_cost: word(0), t_cost: word(1), lanes: word(2) };
    if params.m_cost > 4 * 1024 * 1024 || params.t_cost > 64 || params.lanes > 16 {
        return Err(WalletError::BadFile("key-derivation parameters out of range"));
    }
    let salt = &header[20..36];
    let nonce: [u8; 12] = header[36..48].try_into().map_err(|_| WalletError::BadFile("nonce"))?;
    let key = passphrase_key(passphrase, salt, params)?;
    let cipher = ChaCha20Poly1305::new((&*key).into());
    let plain = Zeroizing::new(
        cipher.decrypt(&nonce.into(), Payload { msg: sealed, aad: header }).map_err(|_| WalletError::Decrypt)?,
    );
    let seed: [u8; 32] = plain[..].try_into().map_err(|_| WalletError::Decrypt)?;
    Ok(Seed::from_bytes(seed))
}

fn state_cipher(seed: &Seed) -> ChaCha20Poly1305 {
    let key = Zeroizing::new(blake3::derive_key(STATE_CONTEXT, seed.as_bytes()));
    ChaCha20Poly1305::new((&*key).into())
}

/// Seals the serialised pool view under the seed's state key.
pub fn seal_state<R: RngCore + CryptoRng>(seed: &Seed, plain: &[u8], rng: &mut R) -> Result<Vec<u8>, WalletError> {
    let mut nonce = [0u8; 12];
    rng.fill_bytes(&mut nonce);
    let sealed = state_cipher(seed)
        .encrypt(&nonce.into(), Payload { msg: plain, aad: STATE_MAGIC })
        .map_err(|_| WalletError::Seal)?;
    let mut out = Vec::with_capacity(8 + 12 + sealed.len());
    out.extend_from_slice(STATE_MAGIC);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    Ok(out)
}

/// Opens a state file.
pub fn open_state(seed: &Seed, bytes: &[u8]) -> Result<Vec<u8>, WalletError> {
    if bytes.len() < 8 + 12 + 16 || &bytes[..8] != STATE_MAGIC {
        return Err(WalletError::BadFile("not a NOX wallet state file"));
    }
    let nonce: [u8; 12] = bytes[8..20].try_into().map_err(|_| WalletError::BadFile("nonce"))?;
    state_cipher(seed)
        .decrypt(&nonce.into(), Payload { msg: &bytes[20..], aad: STATE_MAGIC })
        .map_err(|_| WalletError::Decrypt)
}
