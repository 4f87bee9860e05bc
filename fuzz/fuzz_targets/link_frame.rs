//! Link input: arbitrary bytes, in arbitrary chunks, into the responder
//! handshake state machine, a client's mailbox record reader and the record
//! decoder (`FrameOpener`). Must never panic, never consume past the first
//! Noise message nor past the mailbox record, never yield a packet (nor
//! establish a client link) from bytes that were not sealed, and always
//! yield the packets that were.
//!
//! Input: `chunk(1) ‖ mode(1) ‖ rest`.
//! - `mode & 0x40`: the valid first flight is a client's (`NK`), else a
//!   node's (`IK`); both use fixed randomness, so they are the same bytes in
//!   every run (and can be seeds).
//! - `mode & 1`: the responder reads that valid flight XORed with `rest`
//!   (then the rest of `rest`); otherwise `rest` as it is. `mode & 2`: the
//!   responder accepts clients.
//! - After a flight that authenticates, the link is finished: on a client
//!   link the client's mailbox record XORed with the next 48 input bytes
//!   (all zero: untouched), then two valid records, then the remaining
//!   input; on a node link the two records and the remaining input.
//! - `mode & 0x20`: message 1 is a properly authenticated node message whose
//!   payload (the ML-KEM-768 encapsulation key) is the input: the
//!   responder's payload parsing and FIPS 203 key check.
//! - Then the record decoder on its own: `mode >> 2 & 3` valid records
//!   (ChaCha20-Poly1305 with `mode & 0x10`, else AES-GCM), then `rest`.
//!
//! cargo +nightly fuzz run link_frame
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nox_link::{
    Accept, CipherSuite, FrameOpener, FrameSealer, Initiator, KEM_EK_LEN, LinkConfig, LinkError, LinkKeypair, LinkKind,
    MAILBOX_RECORD_LEN, Mailbox, PREAMBLE_LEN, RESPONSE_LEN, Remote, Responder,
};
use nox_sphinx::Geometry;

const PACKET_LEN: usize = 1024;
const EPHEMERAL: [u8; 32] = [0x33; 32];
const KEM_SEED: [u8; 64] = [0x55; 64];
/// The mailbox the fixed client flight's link names.
const MAILBOX: Mailbox = Mailbox([0x66; 32]);

struct Fixture {
    config: LinkConfig,
    server: LinkKeypair,
    client: LinkKeypair,
    /// The node's and the client's first flights with the fixed randomness.
    node_first: Vec<u8>,
    client_first: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let config = LinkConfig::new(Geometry::new(PACKET_LEN, 3).expect("geometry")).expect("config");
        let server = LinkKeypair::from_secret_bytes([0x11; 32]).expect("key");
        let client = LinkKeypair::from_secret_bytes([0x22; 32]).expect("key");
        let mut f = Fixture { config, server, client, node_first: Vec::new(), client_first: Vec::new() };
        f.node_first = node_initiator(&f).1;
        f.client_first = client_initiator(&f).1;
        f
    })
}

fn node_initiator(f: &Fixture) -> (Initiator, Vec<u8>) {
    Initiator::node_with_fixed_randomness(&f.config, &f.client, &f.server.public(), &EPHEMERAL, &KEM_SEED)
        .expect("node initiator")
}

fn client_initiator(f: &Fixture) -> (Initiator, Vec<u8>) {
    Initiator::client_with_fixed_randomness(&f.config, &f.server.public(), Some(&MAILBOX), &EPHEMERAL, &KEM_SEED)
        .expect("client initiator")
}

/// Feeds `input` to `opener` in chunks; returns the packets and the first error.
fn drain(opener: &mut FrameOpener, input: &[u8], chunk: usize) -> (Vec<Vec<u8>>, Option<LinkError>) {
    let mut packets = Vec::new();
    for mut piece in input.chunks(chunk) {
        while !piece.is_empty() {
            match opener.feed(piece) {
                Ok((n, p)) => {
                    assert!(n > 0 && n <= piece.len());
                    piece = &piece[n..];
                    packets.extend(p);
                }
                Err(e) => {
                    assert!(opener.feed(&[0]).is_err(), "a failed opener stays failed");
                    return (packets, Some(e));
                }
            }
        }
    }
    (packets, None)
}

/// An authenticated node message 1 whose payload comes from the input: an
/// encapsulation key of the right length (zero-padded) when `selector` is
/// even, otherwise `selector`-derived length. Only a right-length payload can
/// authenticate; a key that does not pass the modulus check is `KemKey`.
fn forged_payload(f: &Fixture, selector: u8, rest: &[u8]) {
    let payload: Vec<u8> = if selector & 1 == 0 {
        let mut ek = rest.iter().copied().take(KEM_EK_LEN).collect::<Vec<u8>>();
        ek.resize(KEM_EK_LEN, 0);
        ek
    } else {
        rest.iter().copied().take(usize::from(selector) * 11).collect()
    };
    let flight = Initiator::forged_node_flight(&f.config, &f.client, &f.server.public(), &payload).expect("forge");
    let mut responder = Responder::new(&f.config, &f.server, Accept::default());
    match responder.feed(&flight) {
        Ok((n, Some(hello))) => {
            assert_eq!(payload.len(), KEM_EK_LEN, "only a key-length payload authenticates");
            assert_eq!(n, flight.len());
            let (reply, _) = hello.accept().expect("a valid key encapsulates");
            assert_eq!(reply.len(), RESPONSE_LEN);
        }
        Ok((n, None)) => {
            assert_eq!(n, flight.len());
            assert!(payload.len() < KEM_EK_LEN, "a pending responder was given less than message 1");
        }
        Err(LinkError::KemKey) => assert_eq!(payload.len(), KEM_EK_LEN),
        Err(LinkError::HandshakeAuth) => assert!(payload.len() > KEM_EK_LEN, "cut inside message 1"),
        Err(e) => panic!("unexpected refusal of a forged payload: {e:?}"),
    }
}

/// Finishes a link whose first flight authenticated, and pushes the input
/// that follows it through: a client's mailbox record (XORed with the next
/// bytes of `after`), two valid records, then the rest of `after`.
fn finish_link(f: &Fixture, hello: nox_link::Hello, flight: &[u8], after: &[u8], chunk: usize) {
    let (init, first) = if flight == f.node_first {
        node_initiator(f)
    } else if flight == f.client_first {
        client_initiator(f)
    } else {
        panic!("bytes that were not a sealed first flight authenticated");
    };
    assert_eq!(first, flight, "fixed randomness gives the same flight");
    let client_link = matches!(hello.remote(), Remote::Client);
    assert_eq!(client_link, flight == f.client_first);
    let (reply, mut server) = hello.accept().expect("accept");
    let mut client = init.finish(&reply).expect("finish");

    // The mailbox record (nothing on a node link), tampered by the input.
    let mut wire = Vec::new();
    let record_len = client.write_mailbox_record(&mut wire).expect("mailbox record");
    assert_eq!(record_len, if client_link { MAILBOX_RECORD_LEN } else { 0 });
    let (mask, after) = after.split_at(record_len.min(after.len()));
    for (b, x) in wire.iter_mut().zip(mask) {
        *b ^= x;
    }
    let tampered = mask.iter().any(|&x| x != 0);
    let (mut tx, _) = client.into_parts();
    tx.seal_into(&[1; PACKET_LEN], &mut wire).expect("seal");
    tx.seal_into(&[2; PACKET_LEN], &mut wire).expect("seal");
    wire.extend_from_slice(after);

    let mut rest = &wire[..];
    let mut refused = None;
    while server.mailbox_wanted() > 0 {
        let wanted = server.mailbox_wanted();
        match server.feed_mailbox_record(&rest[..chunk.min(rest.len())]) {
            Ok(n) => {
                assert!(n > 0 && n <= wanted, "reads within the mailbox record");
                rest = &rest[n..];
            }
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let (_, mut rx) = if tampered {
        assert_eq!(refused, Some(LinkError::MailboxRecordAuth), "a tampered mailbox record authenticated");
        assert!(!server.is_established() && server.mailbox().is_none());
        server.into_parts()
    } else {
        assert_eq!(refused, None);
        assert_eq!(wire.len() - rest.len(), record_len, "read exactly the mailbox record");
        assert!(server.is_established());
        assert_eq!(server.mailbox(), client_link.then_some(MAILBOX));
        server.into_parts()
    };
    let (packets, _) = drain(&mut rx, rest, chunk);
    if tampered {
        assert!(packets.is_empty(), "a packet on a link that is not established");
    } else {
        assert!(packets.len() >= 2 && packets[0] == [1; PACKET_LEN] && packets[1] == [2; PACKET_LEN]);
    }
}

fuzz_target!(|data: &[u8]| {
    let [chunk, mode, rest @ ..] = data else { return };
    let selector = *chunk;
    let chunk = usize::from(*chunk) * 7 % 1100 + 1;
    let f = fixture();
    if mode & 0x20 != 0 {
        forged_payload(f, selector, rest);
        return;
    }

    // 1. The responder, on raw bytes or on a valid first flight XORed with the input.
    let first = if mode & 0x40 != 0 { &f.client_first } else { &f.node_first };
    let input: Vec<u8> = if mode & 1 == 1 {
        let mut v = first.clone();
        for (b, x) in v.iter_mut().zip(rest) {
            *b ^= x;
        }
        v.extend(rest.iter().skip(first.len()));
        v
    } else {
        rest.to_vec()
    };
    let accept = Accept { clients: mode & 2 == 2, ..Accept::default() };
    let mut responder = Responder::new(&f.config, &f.server, accept);
    let mut consumed = 0;
    let mut hello = None;
    'feed: for mut piece in input.chunks(chunk) {
        while !piece.is_empty() && hello.is_none() {
            match responder.feed(piece) {
                Ok((n, h)) => {
                    assert!(n <= piece.len());
                    consumed += n;
                    piece = &piece[n..];
                    hello = h;
                    if hello.is_none() {
                        assert_eq!(piece.len(), 0, "a pending responder takes all it is given");
                    }
                }
                Err(_) => break 'feed,
            }
        }
        if hello.is_some() {
            break;
        }
    }
    assert!(consumed <= PREAMBLE_LEN + LinkKind::Node.first_message_len());
    if let Some(hello) = hello {
        // Only an untouched flight authenticates.
        finish_link(f, hello, &input[..consumed], &input[consumed..], chunk);
    }

    // 2. The record decoder on its own: `mode >> 2 & 3` valid records, then the input.
    let cipher = if mode & 0x10 == 0 { CipherSuite::AesGcm } else { CipherSuite::ChaChaPoly };
    let mut tx = FrameSealer::from_raw_key(cipher, [0x44; 32], PACKET_LEN);
    let mut rx = FrameOpener::from_raw_key(cipher, [0x44; 32], PACKET_LEN);
    let valid = usize::from(mode >> 2 & 3);
    let mut wire = Vec::new();
    for i in 0..valid {
        tx.seal_into(&[i as u8; PACKET_LEN], &mut wire).expect("seal");
    }
    wire.extend_from_slice(rest);
    let (packets, err) = drain(&mut rx, &wire, chunk);
    assert!(packets.len() >= valid, "valid records must open");
    for (i, p) in packets.iter().enumerate().take(valid) {
        assert_eq!(p, &[i as u8; PACKET_LEN]);
    }
    if err.is_none() {
        assert_eq!(packets.len(), wire.len() / rx.record_len());
        assert_eq!(rx.buffered(), wire.len() % rx.record_len());
        assert_eq!(rx.finish().is_ok(), rx.buffered() == 0);
    }
});
