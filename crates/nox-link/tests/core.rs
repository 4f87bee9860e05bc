//! The sans-I/O core: handshakes and records in memory.

use nox_link::*;
use nox_sphinx::Geometry;
use proptest::prelude::*;

fn small() -> LinkConfig {
    LinkConfig::new(Geometry::new(1024, 3).unwrap()).unwrap()
}

/// Runs a whole handshake through the byte interfaces, feeding the
/// responder in chunks of `chunk` bytes.
fn handshake(
    config: &LinkConfig,
    server_config: &LinkConfig,
    client: Option<&LinkKeypair>,
    server: &LinkKeypair,
    accept: Accept,
    chunk: usize,
) -> Result<(Session, Session), LinkError> {
    let (init, first) = match client {
        Some(kp) => Initiator::node(config, kp, &server.public())?,
        None => Initiator::client(config, &server.public(), None)?,
    };
    let mut responder = Responder::new(server_config, server, accept);
    let mut hello = None;
    for piece in first.chunks(chunk) {
        let (used, h) = responder.feed(piece)?;
        assert_eq!(used, piece.len());
        if h.is_some() {
            hello = h;
        }
    }
    let hello = hello.expect("complete first flight yields a Hello");
    let (reply, server_session) = hello.accept()?;
    let client_session = init.finish(&reply)?;
    Ok((client_session, server_session))
}

fn exchange(a: Session, b: Session, packet_len: usize) {
    let (mut a_tx, mut a_rx) = a.into_parts();
    let (mut b_tx, mut b_rx) = b.into_parts();
    for i in 0..3u8 {
        let packet = vec![i; packet_len];
        let mut wire = Vec::new();
        a_tx.seal_into(&packet, &mut wire).unwrap();
        assert_eq!(wire.len(), packet_len + TAG_LEN);
        assert_ne!(&wire[..packet_len], &packet[..], "encrypted");
        assert_eq!(b_rx.feed(&wire).unwrap(), (wire.len(), Some(packet.clone())));
        wire.clear();
        b_tx.seal_into(&packet, &mut wire).unwrap();
        assert_eq!(a_rx.feed(&wire).unwrap(), (wire.len(), Some(packet)));
    }
}

#[test]
fn node_and_client_links_round_trip_both_ways_with_both_ciphers() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let accept = Accept { clients: true, ..Accept::default() };
    for cipher in [CipherSuite::AesGcm, CipherSuite::ChaChaPoly] {
        let cfg = small().with_cipher(cipher);
        let (c, s) = handshake(&cfg, &small(), Some(&node), &server, accept, 7).unwrap();
        assert_eq!(c.remote(), &Remote::Node(server.public()));
        assert_eq!(s.remote(), &Remote::Node(node.public()));
        assert_eq!(s.cipher(), cipher);
        exchange(c, s, 1024);
        let (c, s) = handshake(&cfg, &small(), None, &server, accept, 1).unwrap();
        assert_eq!(s.remote(), &Remote::Client);
        exchange(c, s, 1024);
    }
}

#[test]
fn default_geometry_round_trip() {
    let cfg = LinkConfig::new(Geometry::default()).unwrap();
    assert_eq!(cfg.record_len(), 32_768 + 16);
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let (c, s) = handshake(&cfg, &cfg, Some(&node), &server, Accept::default(), 1000).unwrap();
    exchange(c, s, 32_768);
}

#[test]
fn wire_sizes_are_fixed() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let (init, first) = Initiator::node(&small(), &node, &server.public()).unwrap();
    // e ‖ enc(s) ‖ enc(ML-KEM-768 ek)
    assert_eq!(first.len(), PREAMBLE_LEN + 32 + 48 + KEM_EK_LEN + 16);
    assert_eq!(first.len(), 39 + 1280);
    assert_eq!(&first[..5], b"NOX1\x02", "magic and version 2 (hybrid)");
    let mut r = Responder::new(&small(), &server, Accept::default());
    let (reply, _) = r.feed(&first).unwrap().1.unwrap().accept().unwrap();
    // e ‖ enc(ML-KEM-768 ciphertext)
    assert_eq!(reply.len(), RESPONSE_LEN);
    assert_eq!(RESPONSE_LEN, 32 + KEM_CT_LEN + 16);
    assert_eq!(RESPONSE_LEN, 1136);
    assert_eq!(init.response_len(), RESPONSE_LEN);
    let (_, first) = Initiator::client(&small(), &server.public(), None).unwrap();
    // e ‖ enc(ek ‖ mailbox)
    assert_eq!(first.len(), PREAMBLE_LEN + 32 + KEM_EK_LEN + 32 + 16);
    assert_eq!(first.len(), 39 + 1264);
    let (_, with_mailbox) = Initiator::client(&small(), &server.public(), Some(&Mailbox([3; 32]))).unwrap();
    assert_eq!(with_mailbox.len(), first.len(), "a mailbox must not change the message size");
    assert_eq!(LinkKind::Node.first_message_len(), 1280);
    assert_eq!(LinkKind::Client.first_message_len(), 1264);
}

/// A version 1 (classical X25519 only) first flight, as a peer that has not
/// been upgraded sends it: the version 1 preamble as Noise prologue, message
/// 1 with an empty payload (nodes) or the mailbox (clients).
fn version1_flight(
    kind: LinkKind,
    cipher: CipherSuite,
    client: Option<&LinkKeypair>,
    server: &LinkPublicKey,
) -> Vec<u8> {
    let mut flight = b"NOX1\x01".to_vec();
    flight.extend([kind.to_byte(), cipher.to_byte()]);
    flight.extend(small().geometry().identifier());
    let params = kind.protocol_name(cipher).parse().unwrap();
    let mut b = snow::Builder::new(params).prologue(&flight).unwrap().remote_public_key(server.as_bytes()).unwrap();
    if let Some(kp) = client {
        b = b.local_private_key(kp.secret_bytes()).unwrap();
    }
    let mut hs = b.build_initiator().unwrap();
    let payload: &[u8] = if client.is_some() { &[] } else { &[0; 32] };
    let mut msg = [0u8; 128];
    let n = hs.write_message(payload, &mut msg).unwrap();
    flight.extend(&msg[..n]);
    flight
}

#[test]
fn a_classical_only_version_1_peer_is_refused_with_a_typed_error() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    for cipher in [CipherSuite::AesGcm, CipherSuite::ChaChaPoly] {
        for client in [Some(&node), None] {
            let kind = if client.is_some() { LinkKind::Node } else { LinkKind::Client };
            let old = version1_flight(kind, cipher, client, &server.public());
            assert_eq!(old.len(), PREAMBLE_LEN + if client.is_some() { 96 } else { 80 });
            // Refused on the preamble, before any public-key work, in any chunking.
            for chunk in [1, 5, old.len()] {
                let mut r = Responder::new(&small(), &server, Accept { clients: true, ..Accept::default() });
                let mut result = Ok((0, None));
                for piece in old.chunks(chunk) {
                    result = r.feed(piece);
                    if result.is_err() {
                        break;
                    }
                }
                assert_eq!(result.err(), Some(LinkError::UnsupportedVersion(1)));
                assert_eq!(r.wanted(), 0, "spent: the listener closes the connection");
            }
            // A man in the middle relabelling it version 2 gains nothing: the
            // preamble is the prologue, so the MAC fails once message 1 is full.
            let mut relabelled = old.clone();
            relabelled[4] = 2;
            relabelled.resize(PREAMBLE_LEN + kind.first_message_len(), 0);
            let mut r = Responder::new(&small(), &server, Accept { clients: true, ..Accept::default() });
            assert_eq!(r.feed(&relabelled).err(), Some(LinkError::HandshakeAuth));
        }
    }
    // And a version 2 flight relabelled version 1 (a downgrade attempt) is refused.
    let (_, mut first) = Initiator::node(&small(), &node, &server.public()).unwrap();
    first[4] = 1;
    let mut r = Responder::new(&small(), &server, Accept::default());
    assert_eq!(r.feed(&first).err(), Some(LinkError::UnsupportedVersion(1)));
    // A version 1 responder's 48-byte answer is a typed error at a version 2 initiator.
    let (init, _) = Initiator::node(&small(), &node, &server.public()).unwrap();
    assert_eq!(init.finish(&[0; 48]).err(), Some(LinkError::HandshakeLength { got: 48, expected: RESPONSE_LEN }));
}

#[test]
fn the_responder_learns_the_clients_mailbox_and_nothing_for_zero() {
    let server = LinkKeypair::generate().unwrap();
    for (mailbox, expected) in [(Some(Mailbox([3; 32])), Some(Mailbox([3; 32]))), (None, None)] {
        let (init, first) = Initiator::client(&small(), &server.public(), mailbox.as_ref()).unwrap();
        let mut responder = Responder::new(&small(), &server, Accept { clients: true, ..Accept::default() });
        let (_, hello) = responder.feed(&first).unwrap();
        let hello = hello.expect("first message complete");
        assert_eq!(hello.mailbox(), expected);
        let (reply, session) = hello.accept().unwrap();
        assert_eq!(session.mailbox(), expected);
        assert!(init.finish(&reply).is_ok());
    }
}

#[test]
fn other_geometry_is_refused_before_any_crypto() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let other = LinkConfig::new(Geometry::new(2048, 3).unwrap()).unwrap();
    let r = handshake(&other, &small(), Some(&node), &server, Accept::default(), 200);
    assert_eq!(r.err(), Some(LinkError::WrongGeometry));
}

#[test]
fn altered_preamble_fails_authentication() {
    // Rewrite the geometry id in flight to the responder's: the prologue no
    // longer matches what the initiator hashed, so message 1 fails.
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let other = LinkConfig::new(Geometry::new(2048, 3).unwrap()).unwrap();
    let (_, mut first) = Initiator::node(&other, &node, &server.public()).unwrap();
    first[7..PREAMBLE_LEN].copy_from_slice(&small().geometry().identifier());
    let mut r = Responder::new(&small(), &server, Accept::default());
    assert_eq!(r.feed(&first).err(), Some(LinkError::HandshakeAuth));
    assert_eq!(r.feed(&[0]).err(), Some(LinkError::HandshakeSpent));
}

#[test]
fn wrong_responder_key_fails_authentication() {
    let server = LinkKeypair::generate().unwrap();
    let impostor = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let (_, first) = Initiator::node(&small(), &node, &server.public()).unwrap();
    let mut r = Responder::new(&small(), &impostor, Accept::default());
    assert_eq!(r.feed(&first).err(), Some(LinkError::HandshakeAuth));
}

#[test]
fn policy_refusals_are_typed() {
    let server = LinkKeypair::generate().unwrap();
    let r = handshake(&small(), &small(), None, &server, Accept::default(), 64);
    assert_eq!(r.err(), Some(LinkError::KindNotAccepted(LinkKind::Client)));
    let only_aes = Accept { chacha_poly: false, ..Accept::default() };
    let node = LinkKeypair::generate().unwrap();
    let cfg = small().with_cipher(CipherSuite::ChaChaPoly);
    let r = handshake(&cfg, &small(), Some(&node), &server, only_aes, 64);
    assert_eq!(r.err(), Some(LinkError::CipherNotAccepted(CipherSuite::ChaChaPoly)));
    let mut resp = Responder::new(&small(), &server, Accept::default());
    assert_eq!(resp.feed(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n........").err(), Some(LinkError::BadMagic));
}

#[test]
fn oversized_geometry_is_refused_at_setup() {
    let too_big = Geometry::new(MAX_PACKET_LEN + 1, 3).unwrap();
    assert_eq!(
        LinkConfig::new(too_big).err(),
        Some(LinkError::PacketTooLarge { packet_len: MAX_PACKET_LEN + 1, max: 65_519 })
    );
    assert!(LinkConfig::new(Geometry::new(MAX_PACKET_LEN, 3).unwrap()).is_ok());
}

#[test]
fn tampered_record_closes_the_stream_and_truncation_is_reported() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let (c, s) = handshake(&small(), &small(), Some(&node), &server, Accept::default(), 500).unwrap();
    let (mut tx, _) = c.into_parts();
    let (_, mut rx) = s.into_parts();
    let mut wire = Vec::new();
    for _ in 0..3 {
        tx.seal_into(&[9; 1024], &mut wire).unwrap();
    }
    assert_eq!(tx.seal_into(&[9; 1025], &mut wire), Err(LinkError::WrongLength { got: 1025, expected: 1024 }));
    assert_eq!(wire.len(), 3 * 1040, "a refused packet leaves the buffer unchanged");
    let (n, p) = rx.feed(&wire[..1040]).unwrap();
    assert_eq!((n, p.map(|p| p.len())), (1040, Some(1024)));
    // Half a record, then end of stream: truncated.
    rx.feed(&wire[1040..1040 + 500]).unwrap();
    assert_eq!(rx.finish(), Err(LinkError::Truncated { buffered: 500, record_len: 1040 }));
    // Flip a bit in the rest: that record fails, and the opener stays failed.
    wire[1040 + 600] ^= 1;
    assert_eq!(rx.feed(&wire[1040 + 500..2080]), Err(LinkError::Decrypt));
    assert_eq!(rx.feed(&wire[2080..]), Err(LinkError::Decrypt));
}

#[test]
fn replayed_or_reordered_record_fails() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let (c, s) = handshake(&small(), &small(), Some(&node), &server, Accept::default(), 500).unwrap();
    let (mut tx, _) = c.into_parts();
    let (_, mut rx) = s.into_parts();
    let mut first = Vec::new();
    tx.seal_into(&[1; 1024], &mut first).unwrap();
    assert!(rx.feed(&first).unwrap().1.is_some());
    assert_eq!(rx.feed(&first), Err(LinkError::Decrypt), "same record again: nonce moved on");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any chunking of a stream of records yields exactly the packets sent.
    #[test]
    fn random_chunking_yields_the_same_packets(
        seeds in proptest::collection::vec(any::<u8>(), 1..6),
        cuts in proptest::collection::vec(1usize..3000, 1..40),
    ) {
        let server = LinkKeypair::from_secret_bytes([3; 32]).unwrap();
        let node = LinkKeypair::from_secret_bytes([4; 32]).unwrap();
        let (c, s) = handshake(&small(), &small(), Some(&node), &server, Accept::default(), 33).unwrap();
        let (mut tx, _) = c.into_parts();
        let (_, mut rx) = s.into_parts();
        let sent: Vec<Vec<u8>> = seeds.iter().map(|&b| vec![b; 1024]).collect();
        let mut wire = Vec::new();
        for p in &sent {
            tx.seal_into(p, &mut wire).unwrap();
        }
        let mut got = Vec::new();
        let mut rest = &wire[..];
        let mut i = 0;
        while !rest.is_empty() {
            let mut chunk = &rest[..cuts[i % cuts.len()].min(rest.len())];
            rest = &rest[chunk.len()..];
            i += 1;
            while !chunk.is_empty() {
                let (n, p) = rx.feed(chunk).unwrap();
                prop_assert!(n > 0);
                chunk = &chunk[n..];
                got.extend(p);
            }
        }
        prop_assert_eq!(got, sent);
        prop_assert_eq!(rx.finish(), Ok(()));
    }

    /// Garbage after a handshake never panics and never yields a packet.
    #[test]
    fn garbage_never_yields_a_packet(garbage in proptest::collection::vec(any::<u8>(), 0..5000)) {
        let server = LinkKeypair::from_secret_bytes([3; 32]).unwrap();
        let node = LinkKeypair::from_secret_bytes([4; 32]).unwrap();
        let (_, s) = handshake(&small(), &small(), Some(&node), &server, Accept::default(), 135).unwrap();
        let (_, mut rx) = s.into_parts();
        let mut rest = &garbage[..];
        while !rest.is_empty() {
            match rx.feed(rest) {
                Ok((n, p)) => { prop_assert!(p.is_none()); rest = &rest[n..]; }
                Err(e) => { prop_assert_eq!(e, LinkError::Decrypt); break; }
            }
        }
    }

    /// The responder never panics on arbitrary input and never reads past
    /// its first message.
    #[test]
    fn responder_survives_arbitrary_input(input in proptest::collection::vec(any::<u8>(), 0..1500), valid_prefix in any::<bool>()) {
        let server = LinkKeypair::from_secret_bytes([3; 32]).unwrap();
        let mut bytes = input;
        if valid_prefix && bytes.len() >= PREAMBLE_LEN {
            let node = LinkKeypair::from_secret_bytes([4; 32]).unwrap();
            let (_, first) = Initiator::node(&small(), &node, &server.public()).unwrap();
            bytes[..PREAMBLE_LEN].copy_from_slice(&first[..PREAMBLE_LEN]);
        }
        let mut r = Responder::new(&small(), &server, Accept { clients: true, ..Accept::default() });
        let mut total = 0;
        while total < bytes.len() {
            match r.feed(&bytes[total..]) {
                Ok((n, None)) => { prop_assert_eq!(n, bytes.len() - total); total += n; }
                Ok((_, Some(_))) => prop_assert!(false, "random bytes authenticated"),
                Err(_) => break,
            }
        }
        prop_assert!(total <= PREAMBLE_LEN + LinkKind::Node.first_message_len());
    }
}
