//! The browser's client link (`ClientLink`, driven through WebSocket bytes)
//! against the node side of `nox-link` (`Responder`, as the entry's listener
//! runs it): the handshake completes whatever the chunking, the gateway
//! learns the mailbox, records pass both ways, and a tampered record fails
//! the link for good.

use nox_link::{Accept, LinkConfig, LinkError, LinkKeypair, Mailbox, Responder, Session};
use nox_sphinx::Geometry;
use nox_wasm::ClientLink;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const MAILBOX: Mailbox = Mailbox([7; 32]);

fn config() -> LinkConfig {
    LinkConfig::new(Geometry::default()).unwrap()
}

/// Node side: reads the first flight, answers, and reads the mailbox record.
fn node_accepts(cfg: &LinkConfig, node: &LinkKeypair, flight: &[u8], rng: &mut ChaCha20Rng) -> (Vec<u8>, Session) {
    let mut responder = Responder::with_rng(cfg, node, Accept { clients: true, ..Accept::default() }, rng);
    let (used, hello) = responder.feed(flight).unwrap();
    assert_eq!(used, flight.len());
    hello.expect("first flight complete").accept_with_rng(rng).unwrap()
}

/// Runs the handshake, feeding the client the node's answer in `chunk`-byte pieces.
fn established(chunk: usize) -> (ClientLink, Session, Vec<u8>) {
    let cfg = config();
    let mut rng = ChaCha20Rng::from_seed([3; 32]);
    let node = LinkKeypair::generate_with_rng(&mut rng).unwrap();
    let (mut client, first) = ClientLink::start(&cfg, &node.public(), Some(&MAILBOX), &mut rng).unwrap();
    let (answer, mut session) = node_accepts(&cfg, &node, &first, &mut rng);
    let mut send = Vec::new();
    let mut opened = 0;
    for piece in answer.chunks(chunk) {
        assert!(!client.is_open());
        let fed = client.feed(piece).unwrap();
        send.extend(fed.send);
        opened += usize::from(fed.established);
    }
    assert_eq!(opened, 1, "established exactly once");
    assert!(client.is_open());
    assert_eq!(session.feed_mailbox_record(&send).unwrap(), send.len());
    assert_eq!(session.mailbox(), Some(MAILBOX), "the gateway learns the client's mailbox");
    (client, session, send)
}

#[test]
fn the_handshake_completes_in_any_chunking_and_records_pass_both_ways() {
    for chunk in [1, 7, 1000, usize::MAX] {
        let (mut client, session, _) = established(chunk);
        let (mut node_sealer, mut node_opener) = session.into_parts();
        let packet = vec![0xA5; config().packet_len()];
        let record = client.seal(&packet).unwrap();
        let (used, opened) = node_opener.feed(&record).unwrap();
        assert_eq!((used, opened.as_deref()), (record.len(), Some(&packet[..])));

        // Two downstream records arriving in one WebSocket message, then split across two.
        let replies: Vec<Vec<u8>> = (0..2u8).map(|i| vec![i; config().packet_len()]).collect();
        let mut wire = Vec::new();
        for reply in &replies {
            node_sealer.seal_into(reply, &mut wire).unwrap();
        }
        let fed = client.feed(&wire).unwrap();
        assert_eq!(fed.records, replies);
        assert!(fed.send.is_empty() && !fed.established);
        let mut one = Vec::new();
        node_sealer.seal_into(&replies[0], &mut one).unwrap();
        let (a, b) = one.split_at(one.len() / 2);
        assert!(client.feed(a).unwrap().records.is_empty());
        assert_eq!(client.feed(b).unwrap().records, vec![replies[0].clone()]);
    }
}

#[test]
fn a_tampered_record_fails_the_link_for_good() {
    let (mut client, session, _) = established(usize::MAX);
    let (mut node_sealer, _) = session.into_parts();
    let mut record = Vec::new();
    node_sealer.seal_into(&vec![1; config().packet_len()], &mut record).unwrap();
    record[40] ^= 1;
    assert_eq!(client.feed(&record).unwrap_err(), LinkError::Decrypt);
    // Failed: no more records opened, nothing sealed.
    let mut good = Vec::new();
    node_sealer.seal_into(&vec![2; config().packet_len()], &mut good).unwrap();
    assert!(client.feed(&good).is_err());
    assert!(client.seal(&vec![0; config().packet_len()]).is_err());
}

#[test]
fn a_wrong_answer_or_a_wrong_node_key_fails_the_handshake() {
    let cfg = config();
    let mut rng = ChaCha20Rng::from_seed([4; 32]);
    let node = LinkKeypair::generate_with_rng(&mut rng).unwrap();
    let impostor = LinkKeypair::generate_with_rng(&mut rng).unwrap();
    // The client dials `node`, an impostor answers: authentication fails.
    let (mut client, first) = ClientLink::start(&cfg, &node.public(), None, &mut rng).unwrap();
    let mut responder = Responder::with_rng(&cfg, &impostor, Accept { clients: true, ..Accept::default() }, &mut rng);
    assert!(responder.feed(&first).is_err(), "the impostor cannot read a first flight sealed to another key");
    // Garbage in place of message 2.
    let garbage = vec![0x55; nox_link::RESPONSE_LEN];
    assert!(client.feed(&garbage).is_err());
    assert!(!client.is_open());
    assert!(client.seal(&vec![0; cfg.packet_len()]).is_err(), "nothing is sealed before the handshake");
}

#[test]
fn no_mailbox_on_an_entry_link() {
    let cfg = config();
    let mut rng = ChaCha20Rng::from_seed([5; 32]);
    let node = LinkKeypair::generate_with_rng(&mut rng).unwrap();
    let (mut client, first) = ClientLink::start(&cfg, &node.public(), None, &mut rng).unwrap();
    let (answer, mut session) = node_accepts(&cfg, &node, &first, &mut rng);
    let fed = client.feed(&answer).unwrap();
    session.feed_mailbox_record(&fed.send).unwrap();
    assert!(session.is_established());
    assert_eq!(session.mailbox(), None);
}
