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
    let (reply, mut server_session) = hello.accept()?;
    let mut client_session = init.finish(&reply)?;
    // A client's mailbox record, fed in the same chunks.
    let mut tail = Vec::new();
    let written = client_session.write_mailbox_record(&mut tail)?;
    assert_eq!(written, if client.is_some() { 0 } else { MAILBOX_RECORD_LEN });
    assert_eq!(server_session.mailbox_wanted(), written);
    for piece in tail.chunks(chunk) {
        assert_eq!(server_session.feed_mailbox_record(piece)?, piece.len());
    }
    assert!(client_session.is_established() && server_session.is_established());
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
    assert_eq!(cfg.record_len(), nox_sphinx::DEFAULT_PACKET_LEN + 16);
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let (c, s) = handshake(&cfg, &cfg, Some(&node), &server, Accept::default(), 1000).unwrap();
    exchange(c, s, nox_sphinx::DEFAULT_PACKET_LEN);
}

#[test]
fn wire_sizes_are_fixed() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    let (init, first) = Initiator::node(&small(), &node, &server.public()).unwrap();
    // e ‖ enc(s) ‖ enc(ML-KEM-768 ek)
    assert_eq!(first.len(), PREAMBLE_LEN + 32 + 48 + KEM_EK_LEN + 16);
    assert_eq!(first.len(), 39 + 1280);
    assert_eq!(&first[..5], b"NOX1\x03", "magic and version 3 (hybrid, mailbox after message 2)");
    let mut r = Responder::new(&small(), &server, Accept::default());
    let (reply, _) = r.feed(&first).unwrap().1.unwrap().accept().unwrap();
    // e ‖ enc(ML-KEM-768 ciphertext)
    assert_eq!(reply.len(), RESPONSE_LEN);
    assert_eq!(RESPONSE_LEN, 32 + KEM_CT_LEN + 16);
    assert_eq!(RESPONSE_LEN, 1136);
    assert_eq!(init.response_len(), RESPONSE_LEN);
    let (_, first) = Initiator::client(&small(), &server.public(), None).unwrap();
    // e ‖ enc(ek): no mailbox in message 1
    assert_eq!(first.len(), PREAMBLE_LEN + 32 + KEM_EK_LEN + 16);
    assert_eq!(first.len(), 39 + 1232);
    let (_, with_mailbox) = Initiator::client(&small(), &server.public(), Some(&Mailbox([3; 32]))).unwrap();
    assert_eq!(with_mailbox.len(), first.len(), "a mailbox must not change the message size");
    assert_eq!(LinkKind::Node.first_message_len(), 1280);
    assert_eq!(LinkKind::Client.first_message_len(), 1232);
    // The mailbox record: enc(mailbox), with or without a mailbox.
    assert_eq!(MAILBOX_RECORD_LEN, 32 + 16);
    for mailbox in [None, Some(Mailbox([3; 32]))] {
        let (init, first) = Initiator::client(&small(), &server.public(), mailbox.as_ref()).unwrap();
        let mut r = Responder::new(&small(), &server, Accept { clients: true, ..Accept::default() });
        let (reply, _) = r.feed(&first).unwrap().1.unwrap().accept().unwrap();
        let mut tail = Vec::new();
        init.finish(&reply).unwrap().write_mailbox_record(&mut tail).unwrap();
        assert_eq!(tail.len(), 48);
        // Client handshake bytes on the wire: the same 2,455 as a node's.
        assert_eq!(first.len() + reply.len() + tail.len(), 2455);
    }
}

/// The first flight of a peer that has not been upgraded, with its version
/// as Noise prologue: version 1 (classical X25519 only; message 1 with an
/// empty payload for nodes, the mailbox for clients) or version 2 (hybrid;
/// the 1,184-byte `ek`, followed for clients by the mailbox in message 1).
fn old_flight(
    version: u8,
    kind: LinkKind,
    cipher: CipherSuite,
    client: Option<&LinkKeypair>,
    server: &LinkPublicKey,
) -> Vec<u8> {
    let mut flight = b"NOX1".to_vec();
    flight.extend([version, kind.to_byte(), cipher.to_byte()]);
    flight.extend(small().geometry().identifier());
    let params = kind.protocol_name(cipher).parse().unwrap();
    let mut b = snow::Builder::new(params).prologue(&flight).unwrap().remote_public_key(server.as_bytes()).unwrap();
    if let Some(kp) = client {
        b = b.local_private_key(kp.secret_bytes()).unwrap();
    }
    let mut hs = b.build_initiator().unwrap();
    let mut payload = if version == 1 { vec![] } else { vec![7; KEM_EK_LEN] };
    if client.is_none() {
        payload.extend([0x5c; MAILBOX_LEN]);
    }
    let mut msg = vec![0u8; 96 + payload.len() + 16];
    let n = hs.write_message(&payload, &mut msg).unwrap();
    flight.extend(&msg[..n]);
    flight
}

#[test]
fn version_1_and_2_peers_are_refused_with_a_typed_error() {
    let server = LinkKeypair::generate().unwrap();
    let node = LinkKeypair::generate().unwrap();
    for cipher in [CipherSuite::AesGcm, CipherSuite::ChaChaPoly] {
        for client in [Some(&node), None] {
            let kind = if client.is_some() { LinkKind::Node } else { LinkKind::Client };
            for version in [1u8, 2] {
                let old = old_flight(version, kind, cipher, client, &server.public());
                let old_len = match (version, client.is_some()) {
                    (1, true) => 96,
                    (1, false) => 80,
                    (_, true) => 1280,
                    (_, false) => 1264, // version 2 carried the mailbox in message 1
                };
                assert_eq!(old.len(), PREAMBLE_LEN + old_len);
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
                    assert_eq!(result.err(), Some(LinkError::UnsupportedVersion(version)));
                    assert_eq!(r.wanted(), 0, "spent: the listener closes the connection");
                }
                // A man in the middle relabelling it version 3 gains nothing: the
                // preamble is the prologue, so the MAC fails once message 1 is full.
                let mut relabelled = old.clone();
                relabelled[4] = 3;
                relabelled.resize(PREAMBLE_LEN + kind.first_message_len(), 0);
                let mut r = Responder::new(&small(), &server, Accept { clients: true, ..Accept::default() });
                assert_eq!(r.feed(&relabelled).err(), Some(LinkError::HandshakeAuth));
            }
        }
    }
    // And a version 3 flight relabelled version 2 or 1 (a downgrade attempt) is refused.
    for version in [1u8, 2] {
        let (_, mut first) = Initiator::node(&small(), &node, &server.public()).unwrap();
        first[4] = version;
        let mut r = Responder::new(&small(), &server, Accept::default());
        assert_eq!(r.feed(&first).err(), Some(LinkError::UnsupportedVersion(version)));
    }
    // A version 1 responder's 48-byte answer is a typed error at a version 3 initiator.
    let (init, _) = Initiator::node(&small(), &node, &server.public()).unwrap();
    assert_eq!(init.finish(&[0; 48]).err(), Some(LinkError::HandshakeLength { got: 48, expected: RESPONSE_LEN }));
}

/// Runs a client handshake through message 2; returns the client's session
/// (mailbox record not yet written) and the responder's (not established).
fn client_through_message_2(server: &LinkKeypair, mailbox: Option<&Mailbox>) -> (Session, Session) {
    let (init, first) = Initiator::client(&small(), &server.public(), mailbox).unwrap();
    let mut responder = Responder::new(&small(), server, Accept { clients: true, ..Accept::default() });
    let (_, hello) = responder.feed(&first).unwrap();
    let hello = hello.expect("first message complete");
    assert_eq!(hello.remote(), &Remote::Client);
    let (reply, session) = hello.accept().unwrap();
    (init.finish(&reply).unwrap(), session)
}

#[test]
fn the_responder_learns_the_clients_mailbox_from_its_mailbox_record() {
    let server = LinkKeypair::generate().unwrap();
    for (mailbox, expected) in [(Some(Mailbox([3; 32])), Some(Mailbox([3; 32]))), (None, None)] {
        for chunk in [1, 7, MAILBOX_RECORD_LEN] {
            let (mut client, mut session) = client_through_message_2(&server, mailbox.as_ref());
            // Not established, and no mailbox, until the record is in.
            assert!(!client.is_established() && !session.is_established());
            assert_eq!(session.mailbox(), None);
            assert_eq!(session.check_established(), Err(LinkError::MailboxRecordMissing));
            assert_eq!(session.mailbox_wanted(), MAILBOX_RECORD_LEN);
            let mut wire = Vec::new();
            assert_eq!(client.write_mailbox_record(&mut wire), Ok(MAILBOX_RECORD_LEN));
            assert_eq!(client.write_mailbox_record(&mut wire), Ok(0), "written once");
            assert!(client.is_established());
            // Records follow at once, in the same stream.
            let (mut tx, mut client_rx) = client.into_parts();
            tx.seal_into(&[9; 1024], &mut wire).unwrap();
            let mut rest = &wire[..];
            while session.mailbox_wanted() > 0 {
                let n = session.feed_mailbox_record(&rest[..chunk.min(rest.len())]).unwrap();
                rest = &rest[n..];
            }
            assert_eq!(rest.len(), 1040, "the record reader never reads past the mailbox record");
            assert!(session.is_established());
            assert_eq!(session.mailbox(), expected);
            assert_eq!(session.feed_mailbox_record(rest), Ok(0), "established: consumes nothing");
            let (mut server_tx, mut rx) = session.into_parts();
            assert_eq!(rx.feed(rest).unwrap(), (1040, Some(vec![9; 1024])));
            let mut down = Vec::new();
            server_tx.seal_into(&[4; 1024], &mut down).unwrap();
            assert_eq!(client_rx.feed(&down).unwrap(), (1040, Some(vec![4; 1024])));
        }
    }
}

/// Any bit flipped in the mailbox record fails its authentication, and the
/// session stays failed: no packet is ever accepted on it.
#[test]
fn a_tampered_mailbox_record_fails_authentication() {
    let server = LinkKeypair::generate().unwrap();
    for byte in [0, 1, 31, 32, 47] {
        let (mut client, mut session) = client_through_message_2(&server, Some(&Mailbox([3; 32])));
        let mut wire = Vec::new();
        client.write_mailbox_record(&mut wire).unwrap();
        let (mut tx, _) = client.into_parts();
        tx.seal_into(&[9; 1024], &mut wire).unwrap();
        wire[byte] ^= 0x80;
        assert_eq!(session.feed_mailbox_record(&wire), Err(LinkError::MailboxRecordAuth), "byte {byte}");
        assert_eq!(session.mailbox(), None);
        assert_eq!(session.mailbox_wanted(), 0);
        assert_eq!(session.check_established(), Err(LinkError::MailboxRecordAuth));
        assert_eq!(session.feed_mailbox_record(&wire[48..]), Err(LinkError::MailboxRecordAuth));
        let (mut server_tx, mut rx) = session.into_parts();
        assert_eq!(rx.feed(&wire[48..]), Err(LinkError::MailboxRecordAuth));
        assert_eq!(server_tx.seal_into(&[1; 1024], &mut Vec::new()), Err(LinkError::MailboxRecordAuth));
    }
}

/// Without its mailbox record a client link is not established: the
/// responder's halves refuse (`MailboxRecordMissing`) and never yield a
/// packet; a client cannot seal a packet before writing the record; a
/// packet record sent where the mailbox record belongs fails.
#[test]
fn a_client_link_is_not_established_without_its_mailbox_record() {
    let server = LinkKeypair::generate().unwrap();
    // The responder gives up (end of stream, timeout): a typed error.
    let (mut client, mut session) = client_through_message_2(&server, Some(&Mailbox([3; 32])));
    assert_eq!(session.feed_mailbox_record(&[]), Ok(0));
    assert_eq!(session.check_established(), Err(LinkError::MailboxRecordMissing));
    let mut record = Vec::new();
    client.write_mailbox_record(&mut record).unwrap();
    let (mut tx, _) = client.into_parts();
    let mut packets = Vec::new();
    tx.seal_into(&[9; 1024], &mut packets).unwrap();
    let (_, mut rx) = session.into_parts();
    assert_eq!(rx.feed(&packets), Err(LinkError::MailboxRecordMissing));
    assert_eq!(rx.feed(&record), Err(LinkError::MailboxRecordMissing));

    // The client's halves before it wrote the record refuse too.
    let (client, _) = client_through_message_2(&server, None);
    assert_eq!(client.check_established(), Err(LinkError::MailboxRecordMissing));
    let (mut tx, _) = client.into_parts();
    assert_eq!(tx.seal_into(&[9; 1024], &mut Vec::new()), Err(LinkError::MailboxRecordMissing));

    // A packet record (nonce 1) where the mailbox record (nonce 0) belongs.
    let (mut client, mut session) = client_through_message_2(&server, Some(&Mailbox([3; 32])));
    client.write_mailbox_record(&mut Vec::new()).unwrap();
    let (mut tx, _) = client.into_parts();
    let mut packet = Vec::new();
    tx.seal_into(&[9; 1024], &mut packet).unwrap();
    assert_eq!(session.feed_mailbox_record(&packet), Err(LinkError::MailboxRecordAuth));

    // Node links have no mailbox record: established at once.
    let node = LinkKeypair::generate().unwrap();
    let (init, first) = Initiator::node(&small(), &node, &server.public()).unwrap();
    let mut r = Responder::new(&small(), &server, Accept::default());
    let (reply, s) = r.feed(&first).unwrap().1.unwrap().accept().unwrap();
    let mut c = init.finish(&reply).unwrap();
    assert!(s.is_established() && c.is_established());
    assert_eq!((s.mailbox_wanted(), c.write_mailbox_record(&mut Vec::new())), (0, Ok(0)));
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
