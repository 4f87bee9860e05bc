//! Note ciphertexts v2 (docs/spec/notes.md §4): one length for every note, a view tag that
//! tells "mine" from "someone else's" without false alarms, and every tampering caught — a
//! wallet never accepts a wrong value and never silently drops a note sealed to it.

use ark_bn254::Fr;
use nox_wallet::{
    PaymentAddress, Seed, ViewingKey,
    memo::{self, NOTE_LEN, Opened},
};
use rand_chacha_03::{
    ChaCha20Rng,
    rand_core::{RngCore, SeedableRng},
};

fn rng(n: u8) -> ChaCha20Rng {
    ChaCha20Rng::from_seed([n; 32])
}

fn keys(n: u8) -> (PaymentAddress, ViewingKey) {
    let seed = Seed::from_bytes([n; 32]);
    (seed.address().unwrap(), seed.viewing_key().unwrap())
}

fn eth() -> Fr {
    Fr::from(0u64)
}

#[test]
fn a_note_round_trips_for_any_value_and_has_one_length() {
    let (to, vk) = keys(1);
    let token = Fr::from(0xdead_beef_u64);
    for (i, value) in [0u128, 1, 10u128.pow(18), u128::MAX].into_iter().enumerate() {
        for asset in [eth(), token] {
            let blinding = nox_zk::note::random_scalar(&mut rng(i as u8));
            let ct = memo::seal(&to, &asset, value, &blinding, &mut rng(100 + i as u8));
            assert_eq!(ct.len(), NOTE_LEN, "every note has the same length, zero-value ones too");
            assert_eq!(memo::open(&vk, &ct, &asset), Opened::Mine { value, blinding });
        }
    }
    assert_eq!(NOTE_LEN, 104);
}

#[test]
fn two_notes_of_the_same_value_share_no_bytes_an_observer_could_link() {
    let (to, _) = keys(2);
    let blinding = Fr::from(5u64);
    let a = memo::seal(&to, &eth(), 10, &blinding, &mut rng(1));
    let b = memo::seal(&to, &eth(), 10, &blinding, &mut rng(2));
    let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
    assert!(same < 8, "{same} equal bytes: a fresh ephemeral key per note makes every byte look random");
}

#[test]
fn a_note_for_someone_else_is_not_mine_and_never_corrupt() {
    let (_, me) = keys(3);
    let mut r = rng(3);
    for i in 0..200u8 {
        let (other, _) = keys(10 + (i % 50));
        let ct = memo::seal(&other, &eth(), 1_000, &Fr::from(u64::from(i)), &mut r);
        assert_eq!(memo::open(&me, &ct, &eth()), Opened::NotMine, "note {i}");
    }
    // Random bytes of the right length, and notes of any other length, are not mine either.
    for len in [0, 1, NOTE_LEN - 1, NOTE_LEN, NOTE_LEN + 1, 96, 256] {
        let mut junk = vec![0u8; len];
        r.fill_bytes(&mut junk);
        assert_eq!(memo::open(&me, &junk, &eth()), Opened::NotMine, "{len} random bytes");
    }
    // An ephemeral key of small order (shared secret zero) is refused before anything else.
    assert_eq!(memo::open(&me, &[0u8; NOTE_LEN], &eth()), Opened::NotMine);
}

/// Every byte of a note for me, flipped in several ways: the ephemeral key (bytes 0..32) and the
/// view tag (32..40) make it look like someone else's note — the privacy of the format depends
/// on that, and on chain a transaction's notes are bound into its proof so nobody but the sender
/// changes them; any other byte makes it `Corrupt`. Never `Mine` with another value.
#[test]
fn every_byte_flipped_is_corrupt_or_foreign_never_a_wrong_value() {
    let (to, vk) = keys(4);
    let value = 123_456_789u128;
    let blinding = Fr::from(42u64);
    let ct = memo::seal(&to, &eth(), value, &blinding, &mut rng(4));
    assert_eq!(memo::open(&vk, &ct, &eth()), Opened::Mine { value, blinding });
    for i in 0..NOTE_LEN {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut t = ct.clone();
            t[i] ^= mask;
            let got = memo::open(&vk, &t, &eth());
            if i < 40 {
                assert_eq!(got, Opened::NotMine, "byte {i} ^ {mask:#x}: ephemeral key or view tag");
            } else {
                assert!(matches!(got, Opened::Corrupt(_)), "byte {i} ^ {mask:#x}: {got:?}");
            }
        }
    }
}

#[test]
fn a_note_published_under_another_asset_or_sealed_for_another_owner_is_corrupt() {
    let (to, vk) = keys(5);
    let ct = memo::seal(&to, &eth(), 77, &Fr::from(1u64), &mut rng(5));
    assert!(matches!(memo::open(&vk, &ct, &Fr::from(6u64)), Opened::Corrupt(_)), "the asset is authenticated");
    // A sender who pairs my viewing key with another owner tag: I can read it but could never
    // spend it; the owner is authenticated, so I am told instead of believing the note is mine.
    let (other, _) = keys(6);
    let mixed = PaymentAddress::new(other.owner(), *to.viewing_public()).unwrap();
    let ct = memo::seal(&mixed, &eth(), 77, &Fr::from(1u64), &mut rng(6));
    assert!(matches!(memo::open(&vk, &ct, &eth()), Opened::Corrupt(_)));
}

/// The re-targeting attack: a ciphertext that opens for A published beside a commitment that is
/// not the note it describes (another note of A's, or B's). A wallet that trusted the ciphertext
/// would count value it cannot spend; `scan` checks the commitment and reports it.
#[test]
fn a_ciphertext_published_with_another_commitment_is_caught() {
    let (a, vk_a) = keys(7);
    let (b, vk_b) = keys(8);
    let blinding = Fr::from(1234u64);
    let ct = memo::seal(&a, &eth(), 500, &blinding, &mut rng(7));
    let own = vk_a.commitment(500, eth(), blinding).unwrap();
    assert_eq!(memo::scan(&vk_a, &ct, &eth(), &own), Opened::Mine { value: 500, blinding });
    // Published with B's commitment for the same value and blinding.
    let b_commitment = vk_b.commitment(500, eth(), blinding).unwrap();
    assert!(matches!(memo::scan(&vk_a, &ct, &eth(), &b_commitment), Opened::Corrupt(_)));
    // Published with a commitment to another value of A's (a sender lying about the amount).
    let inflated = vk_a.commitment(5_000, eth(), blinding).unwrap();
    assert!(matches!(memo::scan(&vk_a, &ct, &eth(), &inflated), Opened::Corrupt(_)));
    // B sees nothing at all.
    assert_eq!(memo::scan(&vk_b, &ct, &eth(), &own), Opened::NotMine);
    let _ = b;
}

/// A sender's own cipher, written from docs/spec/notes.md §4 (not with `memo::seal`), so a
/// plaintext the API cannot produce can be sealed: a blinding ≥ r.
fn seal_raw(to: &PaymentAddress, asset: &Fr, value: u128, blinding_be: [u8; 32], e: [u8; 32]) -> Vec<u8> {
    use chacha20poly1305::{
        ChaCha20Poly1305, KeyInit,
        aead::{Aead, Payload},
    };
    use curve25519_dalek::montgomery::MontgomeryPoint;
    let eph = MontgomeryPoint::mul_base_clamped(e).to_bytes();
    let shared = MontgomeryPoint(*to.viewing_public()).mul_clamped(e).to_bytes();
    let mut okm = [0u8; 40];
    blake3::Hasher::new_derive_key("NOX note v2")
        .update(&shared)
        .update(&eph)
        .update(to.viewing_public())
        .finalize_xof()
        .fill(&mut okm);
    let mut aad = nox_zk::field::to_be32(asset).to_vec();
    aad.extend_from_slice(&nox_zk::field::to_be32(&to.owner()));
    let mut plain = value.to_be_bytes().to_vec();
    plain.extend_from_slice(&blinding_be);
    let key: [u8; 32] = okm[8..].try_into().unwrap();
    let sealed =
        ChaCha20Poly1305::new(&key.into()).encrypt(&[0u8; 12].into(), Payload { msg: &plain, aad: &aad }).unwrap();
    [&eph[..], &okm[..8], &sealed].concat()
}

#[test]
fn the_spec_cipher_matches_and_a_blinding_outside_the_field_is_corrupt() {
    let (to, vk) = keys(9);
    let e = [0x31; 32];
    let blinding = Fr::from(-1i64); // r − 1, the largest scalar
    let ct = seal_raw(&to, &eth(), 1, nox_zk::field::to_be32(&blinding), e);
    let mut fixed = [0u8; 32];
    fixed.copy_from_slice(&e);
    assert_eq!(ct, memo::seal(&to, &eth(), 1, &blinding, &mut Fixed(fixed)), "the spec's cipher and seal agree");
    assert_eq!(memo::open(&vk, &ct, &eth()), Opened::Mine { value: 1, blinding });
    // r itself, and 2^256 − 1: authentic (the sender sealed them) but not a note anyone can make.
    let r_be = hex::decode("30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001").unwrap();
    for bad in [r_be.try_into().unwrap(), [0xff; 32]] {
        let ct = seal_raw(&to, &eth(), 1, bad, e);
        assert!(matches!(memo::open(&vk, &ct, &eth()), Opened::Corrupt(_)));
    }
}

/// An RNG that returns fixed bytes (the ephemeral secret) once.
struct Fixed([u8; 32]);

impl RngCore for Fixed {
    fn next_u32(&mut self) -> u32 {
        unreachable!()
    }
    fn next_u64(&mut self) -> u64 {
        unreachable!()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        dest.copy_from_slice(&self.0[..dest.len()]);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_chacha_03::rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_chacha_03::rand_core::CryptoRng for Fixed {}
