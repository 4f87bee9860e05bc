//! The wallet's keys, all derived from one 32-byte seed, and the two strings a person handles:
//! the payment address (`nox1…`) and the viewing key (`noxview1…`) (docs/spec/notes.md §2).
//!
//! ```text
//! spending key  sk = wide_reduce(BLAKE3-XOF(derive_key("NOX wallet v1 spending key", seed), 64 bytes))
//! viewing key   vk = BLAKE3 derive_key("NOX wallet v1 viewing key", seed)   (an X25519 secret)
//! owner         = Poseidon(sk)            VK = X25519(vk, 9)
//! address       = bech32m("nox",     0x00 ‖ BE256(owner) ‖ VK)        114 characters
//! viewing key   = bech32m("noxview", 0x00 ‖ vk ‖ BE256(owner))        118 characters
//! ```
//! The spending key spends (it derives nullifiers). The [`ViewingKey`] opens notes sent to the
//! address and recognises their commitments, but cannot spend them and cannot tell whether they
//! were spent (a nullifier needs `sk`).

use crate::error::{AddressError, WalletError};
use ark_bn254::Fr;
use bech32::{
    Bech32m, Hrp,
    primitives::decode::{ChecksumError, UncheckedHrpstring},
};
use curve25519_dalek::montgomery::MontgomeryPoint;
use nox_zk::{SpendingKey, field, note, poseidon};
use rand_core_06::{CryptoRng, RngCore};
use std::{fmt, str::FromStr};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

const SPENDING_CONTEXT: &str = "NOX wallet v1 spending key";
const VIEWING_CONTEXT: &str = "NOX wallet v1 viewing key";

/// The human-readable part of a payment address.
pub const ADDRESS_HRP: &str = "nox";
/// The human-readable part of an exported viewing key.
pub const VIEWING_KEY_HRP: &str = "noxview";
/// The format version byte both strings carry (the first data byte).
pub const KEY_FORMAT_VERSION: u8 = 0;
/// Data bytes of both strings: version ‖ 32 ‖ 32. 65 bytes are exactly 104 bech32 characters
/// (520 bits), so there are no padding bits and each value has exactly one encoding.
const DATA_LEN: usize = 1 + 32 + 32;
const DATA_CHARS: usize = DATA_LEN * 8 / 5;
const BECH32_ALPHABET: &str = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

/// The wallet seed: everything else is derived from it. Zeroized on drop; no `Debug`.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct Seed([u8; 32]);

impl Seed {
    /// A fresh seed from a cryptographic RNG.
    pub fn random<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        let mut s = [0u8; 32];
        rng.fill_bytes(&mut s);
        Seed(s)
    }

    /// A seed from its bytes (a backup, or a test vector).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Seed(bytes)
    }

    /// The seed's bytes: for the sealed wallet file, and for a host that keeps the seed itself
    /// (the browser SDK opens `wallet.key` through nox-wasm). Never log them.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The spending key (a fresh value each call: the prover's witness takes ownership of one).
    pub fn spending_key(&self) -> SpendingKey {
        let mut wide = Zeroizing::new([0u8; 64]);
        blake3::Hasher::new_derive_key(SPENDING_CONTEXT).update(&self.0).finalize_xof().fill(&mut wide[..]);
        SpendingKey::from_wide_bytes(&wide)
    }

    /// The read-only viewing key: opens this wallet's notes, cannot spend them.
    pub fn viewing_key(&self) -> Result<ViewingKey, WalletError> {
        let secret = Zeroizing::new(blake3::derive_key(VIEWING_CONTEXT, &self.0));
        Ok(ViewingKey::new(*secret, self.spending_key().owner()?))
    }

    /// The payment address others use to make notes for this wallet.
    pub fn address(&self) -> Result<PaymentAddress, WalletError> {
        Ok(self.viewing_key()?.address())
    }
}

/// True if `point` is an X25519 public key of small order: every shared secret with it is all
/// zeros, so nobody could open a note sealed to it. For any other point the shared secret with a
/// clamped scalar is never zero (a clamped scalar is below 8·ℓ and a multiple of 8), so one
/// fixed scalar decides.
fn is_low_order(point: &[u8; 32]) -> bool {
    MontgomeryPoint(*point).mul_clamped([0x55; 32]).to_bytes() == [0u8; 32]
}

/// What a payer needs to make a note for this wallet: the owner tag `Poseidon(sk)` and the
/// X25519 viewing public key. Written `nox1…` (bech32m, [`ADDRESS_HRP`]); upper case is
/// accepted when parsing (the bech32 rule), mixed case is not, and the string is always written in
/// lower case. The viewing public key is never of small order (checked when made or parsed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaymentAddress {
    owner: Fr,
    viewing: [u8; 32],
}

impl PaymentAddress {
    /// An address from its parts; refuses a small-order viewing key (nobody could read notes
    /// sealed to it).
    pub fn new(owner: Fr, viewing: [u8; 32]) -> Result<Self, AddressError> {
        if is_low_order(&viewing) {
            return Err(AddressError::LowOrderViewingKey);
        }
        Ok(PaymentAddress { owner, viewing })
    }

    /// The owner tag `Poseidon(sk)` that the notes for this address carry.
    pub fn owner(&self) -> Fr {
        self.owner
    }

    /// The X25519 public key that notes for this address are sealed to.
    pub fn viewing_public(&self) -> &[u8; 32] {
        &self.viewing
    }
}

fn data(first: &[u8; 32], second: &[u8; 32]) -> [u8; DATA_LEN] {
    let mut d = [0u8; DATA_LEN];
    d[0] = KEY_FORMAT_VERSION;
    d[1..33].copy_from_slice(first);
    d[33..].copy_from_slice(second);
    d
}

fn encode(hrp: &str, data: &[u8; DATA_LEN]) -> Result<String, fmt::Error> {
    let hrp = Hrp::parse(hrp).map_err(|_| fmt::Error)?;
    bech32::encode_lower::<Bech32m>(hrp, data).map_err(|_| fmt::Error)
}

impl fmt::Display for PaymentAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&encode(ADDRESS_HRP, &data(&field::to_be32(&self.owner), &self.viewing))?)
    }
}

/// True for `0x` followed by 40 hex digits, or 40 hex digits alone.
fn looks_like_ethereum(s: &str) -> bool {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Decodes a bech32m string with human-readable part `want` into its 65 data bytes, with the
/// error that says what is wrong: the checks of docs/spec/notes.md §2.2 in its order (empty,
/// Ethereum address, the retired `noxpay:` form, characters, case, prefix, checksum, length,
/// version).
fn decode(s: &str, want: &str) -> Result<[u8; DATA_LEN], AddressError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(AddressError::Empty);
    }
    if looks_like_ethereum(s) {
        return Err(AddressError::EthereumAddress);
    }
    if s.get(..7).is_some_and(|p| p.eq_ignore_ascii_case("noxpay:")) {
        return Err(AddressError::RetiredForm);
    }
    if !s.contains('1') {
        return Err(AddressError::NotBech32);
    }
    if let Some(c) = s.chars().find(|c| !(33..=126).contains(&u32::from(*c))) {
        return Err(AddressError::InvalidCharacter(c));
    }
    if s.bytes().any(|b| b.is_ascii_uppercase()) && s.bytes().any(|b| b.is_ascii_lowercase()) {
        return Err(AddressError::MixedCase);
    }
    let (prefix, rest) = s.rsplit_once('1').ok_or(AddressError::NotBech32)?;
    if prefix.is_empty() || prefix.len() > 83 {
        return Err(AddressError::NotBech32);
    }
    if let Some(c) = rest.chars().find(|c| !BECH32_ALPHABET.contains(c.to_ascii_lowercase())) {
        return Err(AddressError::InvalidCharacter(c));
    }
    // Steps 1–8 passed: the library's own character checks cannot fail any more.
    let unchecked = UncheckedHrpstring::new(s).map_err(|_| AddressError::NotBech32)?;
    let hrp = unchecked.hrp().to_lowercase();
    if hrp != want {
        return Err(match (want, hrp.as_str()) {
            (ADDRESS_HRP, VIEWING_KEY_HRP) => AddressError::ViewingKeyNotAddress,
            (VIEWING_KEY_HRP, ADDRESS_HRP) => AddressError::AddressNotViewingKey,
            _ => AddressError::WrongPrefix { expected: if want == ADDRESS_HRP { "nox1" } else { "noxview1" } },
        });
    }
    let checked = unchecked.validate_and_remove_checksum::<Bech32m>().map_err(|e| match e {
        ChecksumError::InvalidResidue => AddressError::Checksum,
        _ => AddressError::WrongLength { chars: s.len() },
    })?;
    let chars = checked.data_part_ascii_no_checksum().len();
    if chars != DATA_CHARS {
        return Err(AddressError::WrongLength { chars: s.len() });
    }
    let mut out = [0u8; DATA_LEN];
    for (o, b) in out.iter_mut().zip(checked.byte_iter()) {
        *o = b;
    }
    if out[0] != KEY_FORMAT_VERSION {
        return Err(AddressError::UnknownVersion(out[0]));
    }
    Ok(out)
}

fn halves(d: &[u8; DATA_LEN]) -> ([u8; 32], [u8; 32]) {
    let mut a = [0u8; 32];
    let mut b = [0u8; 32];
    a.copy_from_slice(&d[1..33]);
    b.copy_from_slice(&d[33..]);
    (a, b)
}

impl FromStr for PaymentAddress {
    type Err = AddressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (owner, viewing) = halves(&decode(s, ADDRESS_HRP)?);
        let owner = field::from_be32(&owner).map_err(|_| AddressError::OwnerOutOfRange)?;
        PaymentAddress::new(owner, viewing)
    }
}

/// A read-only key: the X25519 viewing secret and the owner tag. It opens the notes sealed to
/// the wallet's address and recognises their commitments ([`ViewingKey::commitment`]), so an
/// auditor holding it sees every incoming note (value, asset, when). It cannot spend and cannot
/// see which notes were spent: a nullifier is `Poseidon(sk, commitment, leafIndex)` and `sk` is
/// not in it. Exported as `noxview1…` ([`ViewingKey::export`]). Zeroized on drop; its `Debug`
/// shows only the public parts.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct ViewingKey {
    secret: [u8; 32],
    #[zeroize(skip)]
    owner: Fr,
    public: [u8; 32],
}

impl ViewingKey {
    fn new(secret: [u8; 32], owner: Fr) -> Self {
        let public = MontgomeryPoint::mul_base_clamped(secret).to_bytes();
        ViewingKey { secret, owner, public }
    }

    /// The X25519 secret, for the note cipher only.
    pub(crate) fn secret(&self) -> &[u8; 32] {
        &self.secret
    }

    /// The X25519 public key `X25519(vk, 9)` (computed once, when the key is made).
    pub fn public(&self) -> &[u8; 32] {
        &self.public
    }

    /// The owner tag `Poseidon(sk)` of the wallet's notes.
    pub fn owner(&self) -> Fr {
        self.owner
    }

    /// The payment address this key reads for.
    pub fn address(&self) -> PaymentAddress {
        // A public key X25519(clamped, 9) lies in the prime-order subgroup: never low order.
        PaymentAddress { owner: self.owner, viewing: self.public }
    }

    /// The commitment of a note of this wallet: `Poseidon(value, asset, Poseidon(owner,
    /// blinding))`. A note opened from a ciphertext is the wallet's only if this equals the
    /// commitment published beside it.
    pub fn commitment(&self, value: u128, asset: Fr, blinding: Fr) -> Result<Fr, WalletError> {
        let inner = poseidon::hash(&[self.owner, blinding])?;
        Ok(note::commitment(value, asset, inner)?)
    }

    /// The `noxview1…` string: anyone holding it reads every note of this wallet. Zeroized when
    /// dropped; never printed by `Debug` or `Display`.
    pub fn export(&self) -> Result<Zeroizing<String>, WalletError> {
        let d = Zeroizing::new(data(&self.secret, &field::to_be32(&self.owner)));
        encode(VIEWING_KEY_HRP, &d).map(Zeroizing::new).map_err(|_| WalletError::BadAddress(AddressError::NotBech32))
    }
}

impl fmt::Debug for ViewingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ViewingKey").field("public", &hex::encode(self.public)).finish_non_exhaustive()
    }
}

impl FromStr for ViewingKey {
    type Err = AddressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let d = Zeroizing::new(decode(s, VIEWING_KEY_HRP)?);
        let (secret, owner) = halves(&d);
        let secret = Zeroizing::new(secret);
        let owner = field::from_be32(&owner).map_err(|_| AddressError::OwnerOutOfRange)?;
        Ok(ViewingKey::new(*secret, owner))
    }
}
