//! Link input: arbitrary bytes, in arbitrary chunks, into the responder
//! handshake state machine and into the record decoder (`FrameOpener`).
//! Must never panic, never consume past the first Noise message, never
//! yield a packet from bytes that were not sealed, and always yield the
//! packets that were. With `mode & 0x20`, message 1 is a properly
//! authenticated one whose payload (the ML-KEM-768 encapsulation key) is
//! the input: the responder's payload parsing and FIPS 203 key check.
//!
//! cargo +nightly fuzz run link_frame
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nox_link::{
    Accept, CipherSuite, FrameOpener, FrameSealer, Initiator, KEM_EK_LEN, LinkConfig, LinkError, LinkKeypair, LinkKind,
    PREAMBLE_LEN, RESPONSE_LEN, Responder,
};
use nox_sphinx::Geometry;

const PACKET_LEN: usize = 1024;

struct Fixture {
    config: LinkConfig,
    server: LinkKeypair,
    client: LinkKeypair,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| Fixture {
        config: LinkConfig::new(Geometry::new(PACKET_LEN, 3).expect("geometry")).expect("config"),
        server: LinkKeypair::from_secret_bytes([0x11; 32]).expect("key"),
        client: LinkKeypair::from_secret_bytes([0x22; 32]).expect("key"),
    })
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

fuzz_target!(|data: &[u8]| {
    let [chunk, mode, rest @ ..] = data else { return };
    let selector = *chunk;
    let chunk = usize::from(*chunk) * 7 % 1100 + 1;
    let f = fixture();

    // 1. The responder, on raw bytes or on a valid first flight XORed with the input.
    let (init, first) =
        Initiator::node_with_fixed_randomness(&f.config, &f.client, &f.server.public(), &[0x33; 32], &[0x55; 64])
            .expect("initiator");
    if mode & 0x20 != 0 {
        forged_payload(f, selector, rest);
        return;
    }
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
        // Only the untouched flight authenticates; finish the link and push
        // the remaining input through it after two valid records.
        assert_eq!(&input[..consumed], &first[..]);
        let (reply, server) = hello.accept().expect("accept");
        let client = init.finish(&reply).expect("finish");
        let (mut tx, _) = client.into_parts();
        let (_, mut rx) = server.into_parts();
        let mut wire = Vec::new();
        tx.seal_into(&[1; PACKET_LEN], &mut wire).expect("seal");
        tx.seal_into(&[2; PACKET_LEN], &mut wire).expect("seal");
        wire.extend_from_slice(&input[consumed..]);
        let (packets, _) = drain(&mut rx, &wire, chunk);
        assert!(packets.len() >= 2 && packets[0] == [1; PACKET_LEN] && packets[1] == [2; PACKET_LEN]);
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
