//! Adversarial tests of the hybrid handshake that need the crate's insides:
//! fixed randomness, forged payloads, and an adversary who knows every
//! X25519 secret (a quantum computer in the future, "harvest now, decrypt
//! later") — who must learn neither the records nor a client's mailbox.

use nox_sphinx::Geometry;
use zeroize::Zeroizing;

use super::*;
use crate::config::{Accept, LinkConfig, LinkKind, RESPONSE_LEN};
use crate::kem::{DecapsulationKey, KEM_CT_LEN, KEM_EK_LEN, KEYGEN_SEED_LEN};
use crate::mailbox::{MAILBOX_LEN, MAILBOX_RECORD_LEN};
use crate::preamble::PREAMBLE_LEN;

const PACKET: usize = 1024;
/// The mailbox every client link of these tests names.
const MAILBOX: Mailbox = Mailbox([5; 32]);

fn config(cipher: CipherSuite) -> LinkConfig {
    LinkConfig::new(Geometry::new(PACKET, 3).unwrap()).unwrap().with_cipher(cipher)
}

fn accept_all() -> Accept {
    Accept { clients: true, ..Accept::default() }
}

const SUITES: [CipherSuite; 2] = [CipherSuite::AesGcm, CipherSuite::ChaChaPoly];

/// A node (`Some`) or client (`None`) first flight with fixed randomness.
fn start(
    cfg: &LinkConfig,
    client: Option<&LinkKeypair>,
    server: &LinkKeypair,
    fixed: &FixedRandomness,
) -> (Initiator, Vec<u8>) {
    let kind = if client.is_some() { LinkKind::Node } else { LinkKind::Client };
    let mailbox = client.is_none().then_some(&MAILBOX);
    Initiator::start(cfg, kind, client, &server.public(), mailbox, Randomness::Fixed(fixed)).unwrap()
}

/// Sends a client's mailbox record from `client` to `server` (nothing for a
/// node link) and returns it: both sessions are then established.
fn establish(client: &mut Session, server: &mut Session) -> Option<Vec<u8>> {
    let mut record = Vec::new();
    if client.write_mailbox_record(&mut record).unwrap() == 0 {
        assert!(client.is_established() && server.is_established());
        return None;
    }
    assert_eq!(server.feed_mailbox_record(&record), Ok(MAILBOX_RECORD_LEN));
    assert_eq!(server.mailbox(), Some(MAILBOX));
    Some(record)
}

fn respond(cfg: &LinkConfig, server: &LinkKeypair, first: &[u8]) -> Result<Hello, LinkError> {
    let mut r = Responder::new(cfg, server, accept_all());
    match r.feed(first)? {
        (n, Some(hello)) if n == first.len() => Ok(hello),
        other => panic!("first flight incomplete: {:?}", other.0),
    }
}

fn seal(session: Session) -> (Vec<u8>, FrameOpener) {
    let (mut tx, rx) = session.into_parts();
    let mut wire = Vec::new();
    tx.seal_into(&[0x42; PACKET], &mut wire).unwrap();
    (wire, rx)
}

/// Whether a fresh opener under `key` opens the mailbox record to
/// [`MAILBOX`] (at nonce 0).
fn opens_mailbox(cipher: CipherSuite, key: [u8; 32], mailbox_record: &[u8]) -> bool {
    let mut rx = FrameOpener::new(cipher, Zeroizing::new(key), PACKET);
    let mut m = mailbox_record.to_vec();
    matches!(rx.open_message(&mut m), Ok(n) if m[..n] == MAILBOX.0)
}

/// Whether a fresh opener under `key` opens `record` to the packet [`seal`]
/// sealed, after the mailbox record on a client link (nonce 0, then 1).
fn opens(cipher: CipherSuite, key: [u8; 32], mailbox_record: Option<&[u8]>, record: &[u8]) -> bool {
    let mut rx = FrameOpener::new(cipher, Zeroizing::new(key), PACKET);
    if let Some(mailbox_record) = mailbox_record {
        let mut m = mailbox_record.to_vec();
        if !matches!(rx.open_message(&mut m), Ok(n) if m[..n] == MAILBOX.0) {
            return false;
        }
    }
    matches!(rx.feed(record), Ok((_, Some(p))) if p == [0x42; PACKET])
}

/// Message 1's plaintext payload, as the responder (with its static secret)
/// reads it — and so as an adversary who later breaks X25519 reads it.
fn message_1_payload(server: &LinkKeypair, first: &[u8]) -> Vec<u8> {
    let prologue: [u8; PREAMBLE_LEN] = first[..PREAMBLE_LEN].try_into().unwrap();
    let preamble = Preamble::decode(&prologue).unwrap();
    let mut r = handshake_state(&preamble, &prologue, Some(server), None, None, false, None).unwrap();
    let mut payload = vec![0u8; first.len()];
    let n = r.read_message(&first[PREAMBLE_LEN..], &mut payload).unwrap();
    payload.truncate(n);
    payload
}

/// The adversary of "harvest now, decrypt later": it recorded the first
/// flight and the answer, and later recovered every X25519 secret (both
/// static keys and the initiator's ephemeral). It replays the Noise
/// handshake and so learns what a classical-only link would have used: the
/// split keys, the handshake hash, and the ML-KEM ciphertext — everything
/// but the ML-KEM shared secret.
struct Harvest {
    k1: [u8; 32],
    k2: [u8; 32],
    h: [u8; 32],
    ct: [u8; KEM_CT_LEN],
}

fn harvest(
    client: Option<&LinkKeypair>,
    server: &LinkKeypair,
    fixed: &FixedRandomness,
    first: &[u8],
    reply: &[u8],
) -> Harvest {
    let prologue: [u8; PREAMBLE_LEN] = first[..PREAMBLE_LEN].try_into().unwrap();
    let preamble = Preamble::decode(&prologue).unwrap();
    // As the responder (its static secret): message 1's payload, the ek.
    let payload = message_1_payload(server, first);
    let n = payload.len();
    // As the initiator (its static and ephemeral secrets): the same message 1
    // byte for byte, then message 2's payload, the split and the hash.
    let mut i =
        handshake_state(&preamble, &prologue, client, Some(&server.public()), Some(&fixed.x25519), true, None).unwrap();
    let mut again = vec![0u8; first.len()];
    let m = i.write_message(&payload[..n], &mut again).unwrap();
    assert_eq!(&again[..m], &first[PREAMBLE_LEN..], "the adversary's replay must match the recording");
    let mut ct = [0u8; RESPONSE_LEN];
    assert_eq!(i.read_message(reply, &mut ct).unwrap(), KEM_CT_LEN);
    let h = i.get_handshake_hash().try_into().unwrap();
    let (k1, k2) = i.dangerously_get_raw_split();
    Harvest { k1, k2, h, ct: ct[..KEM_CT_LEN].try_into().unwrap() }
}

/// Records recorded today, and a client's mailbox record, stay sealed for
/// an adversary who later breaks X25519: neither the raw Noise split (the
/// version 1 keys) nor the combiner without the true ML-KEM secret opens
/// them, while the combiner with it does (so the adversary's replay is
/// exact and the keys are `docs/spec/link.md` §1.3's formula). Fails if the
/// KEM secret were not mixed in, or mixed in as a constant.
#[test]
fn a_quantum_adversary_with_every_x25519_secret_cannot_open_records() {
    let server = LinkKeypair::from_secret_bytes([1; 32]).unwrap();
    let node = LinkKeypair::from_secret_bytes([2; 32]).unwrap();
    let fixed = FixedRandomness { x25519: [3; 32], kem: [4; KEYGEN_SEED_LEN] };
    for cipher in SUITES {
        let cfg = config(cipher);
        for client in [Some(&node), None] {
            let (init, first) = start(&cfg, client, &server, &fixed);
            let (reply, mut server_session) = respond(&cfg, &server, &first).unwrap().accept().unwrap();
            let mut client_session = init.finish(&reply).unwrap();
            let mailbox_record = establish(&mut client_session, &mut server_session);
            let mr = mailbox_record.as_deref();
            let (up, _) = seal(client_session);
            let (down, _) = seal(server_session);

            let seen = harvest(client, &server, &fixed, &first, &reply);
            assert!(!opens(cipher, seen.k1, mr, &up), "raw Noise split opened an upstream record");
            assert!(!opens(cipher, seen.k2, None, &down), "raw Noise split opened a downstream record");
            if let Some(mr) = mr {
                assert!(!opens_mailbox(cipher, seen.k1, mr), "raw Noise split opened the mailbox record");
            }
            for guess in [[0u8; 32], [0xA5; 32]] {
                let k_i2r = *kem::combine(CONTEXT_I2R, &seen.k1, &guess, &seen.h);
                assert!(!opens(cipher, k_i2r, mr, &up));
                assert!(!opens(cipher, *kem::combine(CONTEXT_R2I, &seen.k2, &guess, &seen.h), None, &down));
                if let Some(mr) = mr {
                    assert!(!opens_mailbox(cipher, k_i2r, mr), "the mailbox record opened without the ML-KEM secret");
                }
            }
            // Nor is the mailbox anywhere in what X25519 alone protects.
            let payload = message_1_payload(&server, &first);
            assert!(!payload.windows(MAILBOX_LEN).any(|w| w == MAILBOX.0), "mailbox in message 1");
            // Control: with the ML-KEM secret (here from the fixed seed) the
            // same reconstruction opens both directions.
            let (dk, _) = DecapsulationKey::generate(&fixed.kem);
            let ss = dk.decapsulate(&seen.ct);
            let mut material = [0u8; 96];
            material[..32].copy_from_slice(&seen.k1);
            material[32..64].copy_from_slice(&*ss);
            material[64..].copy_from_slice(&seen.h);
            let k_i2r = blake3::derive_key("NOX link v2 hybrid i2r", &material);
            assert!(opens(cipher, k_i2r, mr, &up));
            if let Some(mr) = mr {
                assert!(opens_mailbox(cipher, k_i2r, mr), "control: the true keys open the mailbox record");
            }
            material[..32].copy_from_slice(&seen.k2);
            assert!(opens(cipher, blake3::derive_key("NOX link v2 hybrid r2i", &material), None, &down));
        }
    }
}

/// Same Noise transcript and split keys, different ML-KEM secret (the
/// initiator decapsulates with another key; ML-KEM's implicit rejection
/// gives it an unrelated secret): the handshake "succeeds" but the two ends
/// hold different keys and no record opens.
#[test]
fn same_noise_keys_with_another_kem_secret_disagree() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    for cipher in SUITES {
        let cfg = config(cipher);
        for client in [Some(&node), None] {
            let fixed = FixedRandomness { x25519: [7; 32], kem: [8; KEYGEN_SEED_LEN] };
            let (mut init, first) = start(&cfg, client, &server, &fixed);
            init.kem = DecapsulationKey::generate(&[9; KEYGEN_SEED_LEN]).0;
            let (reply, mut server_session) = respond(&cfg, &server, &first).unwrap().accept().unwrap();
            let mut client_session = init.finish(&reply).unwrap();
            let mut mailbox_record = Vec::new();
            if client_session.write_mailbox_record(&mut mailbox_record).unwrap() > 0 {
                // A client link fails already on its mailbox record.
                let refused = server_session.feed_mailbox_record(&mailbox_record);
                assert_eq!(refused.err(), Some(LinkError::MailboxRecordAuth));
                continue;
            }
            let (up, _) = seal(client_session);
            let (_, mut rx) = server_session.into_parts();
            assert_eq!(rx.feed(&up).err(), Some(LinkError::Decrypt));
        }
    }
}

/// Both ends derive the same keys whatever the randomness: fixed and OS.
#[test]
fn fixed_randomness_links_work_and_are_reproducible() {
    let server = LinkKeypair::from_secret_bytes([1; 32]).unwrap();
    let node = LinkKeypair::from_secret_bytes([2; 32]).unwrap();
    let fixed = FixedRandomness { x25519: [3; 32], kem: [4; KEYGEN_SEED_LEN] };
    let cfg = config(CipherSuite::AesGcm);
    let (_, a) = start(&cfg, Some(&node), &server, &fixed);
    let (init, b) = start(&cfg, Some(&node), &server, &fixed);
    assert_eq!(a, b);
    let (reply, s) = respond(&cfg, &server, &b).unwrap().accept_with(&[6; 32]).unwrap();
    let (up, _) = seal(init.finish(&reply).unwrap());
    let (_, mut rx) = s.into_parts();
    assert!(rx.feed(&up).unwrap().1.is_some());
}

/// A client's first flight does not depend on its mailbox (byte for byte,
/// with fixed randomness), and message 1's plaintext — all an adversary who
/// breaks X25519 later reads of it — is the encapsulation key alone. Fails
/// if the mailbox were back in message 1. The responder learns the mailbox
/// from the mailbox record only.
#[test]
fn the_mailbox_is_not_in_message_1() {
    let server = LinkKeypair::from_secret_bytes([1; 32]).unwrap();
    let fixed = FixedRandomness { x25519: [3; 32], kem: [4; KEYGEN_SEED_LEN] };
    let (_, ek) = DecapsulationKey::generate(&fixed.kem);
    for cipher in SUITES {
        let cfg = config(cipher);
        let flight = |mailbox: Option<&Mailbox>| {
            Initiator::start(&cfg, LinkKind::Client, None, &server.public(), mailbox, Randomness::Fixed(&fixed))
                .unwrap()
        };
        let (init, first) = flight(Some(&MAILBOX));
        assert_eq!(first, flight(Some(&Mailbox([0xA7; 32]))).1, "message 1 depends on the mailbox");
        assert_eq!(first, flight(None).1, "message 1 depends on the mailbox");
        assert_eq!(first.len(), PREAMBLE_LEN + LinkKind::Client.first_message_len());
        let payload = message_1_payload(&server, &first);
        assert_eq!(payload, ek[..], "message 1's payload is the encapsulation key alone");
        assert!(!payload.windows(MAILBOX_LEN).any(|w| w == MAILBOX.0));

        let hello = respond(&cfg, &server, &first).unwrap();
        let (reply, mut session) = hello.accept().unwrap();
        assert_eq!(session.mailbox(), None, "not known before the mailbox record");
        let mut client = init.finish(&reply).unwrap();
        assert_eq!(establish(&mut client, &mut session).map(|r| r.len()), Some(MAILBOX_RECORD_LEN));
        assert_eq!(session.mailbox(), Some(MAILBOX));
    }
}

/// A bit flipped anywhere in the encrypted encapsulation key (message 1) or
/// ciphertext (message 2) fails Noise's MAC: `HandshakeAuth`, no session.
#[test]
fn tampered_ek_or_ct_in_transit_fails_authentication() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    for cipher in SUITES {
        let cfg = config(cipher);
        for client in [Some(&node), None] {
            // The ek starts after e (and enc(s) for IK).
            let ek_at = PREAMBLE_LEN + 32 + if client.is_some() { 48 } else { 0 };
            for offset in [0, 1, 600, KEM_EK_LEN - 1] {
                let fixed = FixedRandomness { x25519: [3; 32], kem: [4; KEYGEN_SEED_LEN] };
                let (_, mut first) = start(&cfg, client, &server, &fixed);
                first[ek_at + offset] ^= 0x10;
                assert_eq!(respond(&cfg, &server, &first).err(), Some(LinkError::HandshakeAuth), "ek byte {offset}");
            }
            for offset in [0, 1, 500, KEM_CT_LEN - 1] {
                let fixed = FixedRandomness { x25519: [3; 32], kem: [4; KEYGEN_SEED_LEN] };
                let (init, first) = start(&cfg, client, &server, &fixed);
                let (mut reply, _) = respond(&cfg, &server, &first).unwrap().accept().unwrap();
                reply[32 + offset] ^= 0x10;
                assert_eq!(init.finish(&reply).err(), Some(LinkError::HandshakeAuth), "ct byte {offset}");
            }
        }
    }
}

/// An initiator that authenticates properly but sends an encapsulation key
/// failing the FIPS 203 modulus check is refused with `KemKey` before any
/// encapsulation; payloads of the wrong length cannot even authenticate.
#[test]
fn malformed_payloads_are_typed_errors() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let cfg = config(CipherSuite::AesGcm);
    let (_, ek) = DecapsulationKey::generate(&[4; KEYGEN_SEED_LEN]);
    let good = Initiator::forged_node_flight(&cfg, &node, &server.public(), &ek[..]).unwrap();
    assert!(respond(&cfg, &server, &good).is_ok(), "a well-formed forged flight authenticates");
    let mut bad = *ek;
    bad[0] = 0xFF;
    bad[1] |= 0x0F; // coefficient 4095 ≥ q
    let flight = Initiator::forged_node_flight(&cfg, &node, &server.public(), &bad).unwrap();
    assert_eq!(respond(&cfg, &server, &flight).err(), Some(LinkError::KemKey));
    let all_ones = Initiator::forged_node_flight(&cfg, &node, &server.public(), &[0xFF; KEM_EK_LEN]).unwrap();
    assert_eq!(respond(&cfg, &server, &all_ones).err(), Some(LinkError::KemKey));
    // One byte short: the responder waits for one more, then the MAC fails.
    let short = Initiator::forged_node_flight(&cfg, &node, &server.public(), &ek[..KEM_EK_LEN - 1]).unwrap();
    let mut r = Responder::new(&cfg, &server, accept_all());
    assert!(matches!(r.feed(&short), Ok((n, None)) if n == short.len()));
    assert_eq!(r.wanted(), 1);
    assert_eq!(r.feed(&[0]).err(), Some(LinkError::HandshakeAuth));
    // One byte long: the responder reads exactly message 1's length, the MAC fails.
    let mut long = ek.to_vec();
    long.push(0);
    let long = Initiator::forged_node_flight(&cfg, &node, &server.public(), &long).unwrap();
    let mut r = Responder::new(&cfg, &server, accept_all());
    assert_eq!(r.feed(&long).err(), Some(LinkError::HandshakeAuth));
    // An empty payload (a version 1 message 1 under a version 2 preamble).
    let empty = Initiator::forged_node_flight(&cfg, &node, &server.public(), &[]).unwrap();
    let mut r = Responder::new(&cfg, &server, accept_all());
    assert!(matches!(r.feed(&empty), Ok((n, None)) if n == empty.len()), "waits for the rest of message 1");
    assert_eq!(r.feed(&[0; KEM_EK_LEN]).err(), Some(LinkError::HandshakeAuth));
}

/// Answers of the wrong length (a version 1 responder's 48 bytes, nothing,
/// one byte too many) are typed errors at the initiator.
#[test]
fn wrong_length_answers_are_typed_errors() {
    let server = LinkKeypair::generate().unwrap();
    let cfg = config(CipherSuite::AesGcm);
    for len in [0, 48, RESPONSE_LEN - 1, RESPONSE_LEN + 1] {
        let (init, _) = Initiator::client(&cfg, &server.public(), None).unwrap();
        assert_eq!(
            init.finish(&vec![0; len]).err(),
            Some(LinkError::HandshakeLength { got: len, expected: RESPONSE_LEN })
        );
    }
    let (init, _) = Initiator::client(&cfg, &server.public(), None).unwrap();
    assert_eq!(init.finish(&[0; RESPONSE_LEN]).err(), Some(LinkError::HandshakeAuth));
}

/// The injected-randomness constructors (what a wasm32 client uses, with no
/// OS RNG): both ends of a client link and of a node link establish with
/// every cipher; the first flight is a function of the caller's RNG alone
/// (same seed: same bytes, so nothing else, e.g. getrandom, feeds it),
/// and two seeds give different ephemerals and KEM keys. Fails if the
/// injected RNG were ignored (flights equal across seeds) or if any other
/// source fed the handshake (flights differ for one seed).
#[test]
fn injected_randomness_links_work_and_depend_only_on_the_rng() {
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    let mut keys = ChaCha20Rng::from_seed([9; 32]);
    let server = LinkKeypair::generate_with_rng(&mut keys).unwrap();
    let node = LinkKeypair::generate_with_rng(&mut keys).unwrap();
    assert_ne!(server.public(), node.public());
    for cipher in SUITES {
        let cfg = config(cipher);
        let client_flight = |seed: u8| {
            let mut rng = ChaCha20Rng::from_seed([seed; 32]);
            Initiator::client_with_rng(&cfg, &server.public(), Some(&MAILBOX), &mut rng).unwrap()
        };
        let (init, first) = client_flight(1);
        assert_eq!(first, client_flight(1).1, "the flight depends on something besides the injected RNG");
        let other = client_flight(2).1;
        assert_ne!(first[PREAMBLE_LEN..PREAMBLE_LEN + 32], other[PREAMBLE_LEN..PREAMBLE_LEN + 32], "same ephemeral");
        assert_ne!(message_1_payload(&server, &first), message_1_payload(&server, &other), "same ML-KEM key");

        let mut server_rng = ChaCha20Rng::from_seed([3; 32]);
        let mut r = Responder::with_rng(&cfg, &server, accept_all(), &mut server_rng);
        let (n, hello) = r.feed(&first).unwrap();
        assert_eq!(n, first.len());
        let (reply, mut session) = hello.unwrap().accept_with_rng(&mut server_rng).unwrap();
        let mut client = init.finish(&reply).unwrap();
        assert_eq!(establish(&mut client, &mut session).map(|r| r.len()), Some(MAILBOX_RECORD_LEN));
        let (up, _) = seal(client);
        let (_, mut rx) = session.into_parts();
        assert!(rx.feed(&up).unwrap().1.is_some());

        let mut rng = ChaCha20Rng::from_seed([4; 32]);
        let (init, first) = Initiator::node_with_rng(&cfg, &node, &server.public(), &mut rng).unwrap();
        let mut r = Responder::with_rng(&cfg, &server, accept_all(), &mut server_rng);
        let hello = r.feed(&first).unwrap().1.unwrap();
        assert_eq!(hello.remote(), &Remote::Node(node.public()));
        let (reply, session) = hello.accept_with_rng(&mut server_rng).unwrap();
        let (up, _) = seal(init.finish(&reply).unwrap());
        let (_, mut rx) = session.into_parts();
        assert!(rx.feed(&up).unwrap().1.is_some());
    }
}
