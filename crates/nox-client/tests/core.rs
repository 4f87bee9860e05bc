//! The client core against an in-memory mixnet: round trips, loss, SURB
//! reuse, timeouts, difficulty notices.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::Mixnet;
use nox_client::{ClientConfig, ClientCore, ClientError, Completed};
use nox_message::{RequestBody, Response, Status};
use nox_sphinx::{Geometry, NodeId};

fn deliver(core: &mut ClientCore, net: &Mixnet, records: Vec<(NodeId, NodeId, Vec<u8>)>) -> Vec<Completed> {
    let now = net.now(Duration::from_secs(1));
    records
        .into_iter()
        .filter_map(|(gateway, recipient, record)| {
            assert_eq!(gateway, core.gateway(), "replies come back through the client's gateway");
            assert_eq!(recipient.0, core.mailbox().0, "SURBs name the client's mailbox");
            core.on_downstream(Some(gateway), &record, now)
        })
        .collect()
}

#[test]
fn echo_round_trip() {
    let mut net = Mixnet::new(1, Geometry::new(4096, 3).unwrap(), 2);
    let mut core = net.client(ClientConfig::default(), 10);
    assert_eq!(net.layer(&core.gateway()), 2);
    let (id, packets) = core.request(RequestBody::Echo(b"hello mixnet".to_vec()), 64, net.now(Duration::ZERO)).unwrap();
    assert!(!packets.is_empty());
    let mut requests = net.forward(packets, 0);
    assert_eq!(requests.len(), 1);
    let (_, request) = requests.pop().unwrap();
    let RequestBody::Echo(text) = &request.body else { panic!("not an echo") };
    let response = Response::ok(text.clone());
    let records = net.answer(request, &response);
    let done = deliver(&mut core, &net, records);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].id, id);
    let reply = done[0].result.as_ref().unwrap();
    assert_eq!(reply.status, Status::Ok);
    assert_eq!(reply.body, b"hello mixnet");
    assert_eq!(core.pending(), 0);
    assert_eq!(core.surbs_held(), 0, "unused SURB keys are dropped at completion");
}

#[test]
fn one_exit_per_request_and_fresh_entries_per_fragment() {
    let mut net = Mixnet::new(2, Geometry::new(4096, 3).unwrap(), 0);
    let mut core = net.client(ClientConfig::default(), 11);
    // ~40 KiB of request: about ten fragments of a 4 KiB geometry.
    let (_, packets) = core.request(RequestBody::Echo(vec![7u8; 40_000]), 64, net.now(Duration::ZERO)).unwrap();
    assert!(packets.len() >= 10);
    let entries: BTreeSet<NodeId> = packets.iter().map(|p| p.entry).collect();
    assert!(entries.len() > 1, "entries are drawn per fragment");
    let mut exits = BTreeSet::new();
    for out in packets {
        if let common::Outcome::Exit { exit, payload } = net.route(out.entry, out.packet, 0) {
            exits.insert(exit);
            if let Some(request) = net.exit_accept(exit, &payload) {
                assert_eq!(request.body, RequestBody::Echo(vec![7u8; 40_000]));
            }
        }
    }
    assert_eq!(exits.len(), 1, "every fragment goes to the same exit");
}

#[test]
fn a_pinned_exit_carries_every_fragment_and_only_exits_can_be_pinned() {
    let mut net = Mixnet::new(3, Geometry::new(4096, 3).unwrap(), 0);
    let mut core = net.client(ClientConfig::default(), 12);
    let exits = net.nodes_in(2);
    assert!(exits.len() > 1);
    for &pinned in &exits {
        let body = RequestBody::Relay(vec![1u8; 20_000]);
        let (_, packets) = core.request_via(body, 64, Some(pinned), net.now(Duration::ZERO)).unwrap();
        for out in packets {
            let common::Outcome::Exit { exit, .. } = net.route(out.entry, out.packet, 0) else {
                panic!("not delivered")
            };
            assert_eq!(exit, pinned, "every fragment reaches the pinned exit");
        }
    }
    let mix = net.nodes_in(1)[0];
    let refused = core.request_via(RequestBody::Relay(vec![1]), 64, Some(mix), net.now(Duration::ZERO));
    assert!(matches!(refused, Err(ClientError::NoRoute(_))), "a mix node is not an exit");
    let unknown = core.request_via(RequestBody::Relay(vec![1]), 64, Some(NodeId([9; 32])), net.now(Duration::ZERO));
    assert!(matches!(unknown, Err(ClientError::NoRoute(_))));
}

#[test]
fn large_reply_with_lost_packets_completes() {
    let mut net = Mixnet::new(3, Geometry::default(), 0);
    let mut core = net.client(ClientConfig::default(), 12);
    let big: Vec<u8> = (0..200 * 1024).map(|i| (i * 31 % 251) as u8).collect();
    let (_, packets) = core.request(RequestBody::Echo(b"big".to_vec()), big.len(), net.now(Duration::ZERO)).unwrap();
    let (_, request) = net.forward(packets, 0).pop().unwrap();
    let surbs = request.surbs.len();
    let mut records = net.answer(request, &Response::ok(big.clone()));
    assert!(records.len() > 7, "a 200 KiB reply spans several SURBs ({} of {surbs})", records.len());
    // Lose two reply packets (within the parity the budget provides).
    records.remove(0);
    records.remove(3);
    let done = deliver(&mut core, &net, records);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].result.as_ref().unwrap().body, big);
    assert_eq!(core.surbs_held(), 0);
}

#[test]
fn a_surb_answers_once() {
    let mut net = Mixnet::new(4, Geometry::new(4096, 3).unwrap(), 0);
    let mut core = net.client(ClientConfig::default(), 13);
    // A reply that needs several SURBs, so the request is still pending after the first.
    let (_, packets) = core.request(RequestBody::Echo(vec![1]), 20_000, net.now(Duration::ZERO)).unwrap();
    let (_, request) = net.forward(packets, 0).pop().unwrap();
    let records = net.answer(request, &Response::ok(vec![9u8; 20_000]));
    assert!(records.len() > 2);
    let now = net.now(Duration::from_secs(1));
    let (gateway, _, first) = records[0].clone();
    assert!(core.on_downstream(Some(gateway), &first, now).is_none());
    assert_eq!(core.stats().replies, 1);
    // The same reply again (a replayed or duplicated frame) is refused and counted.
    assert!(core.on_downstream(Some(gateway), &first, now).is_none());
    assert_eq!(core.stats().reused_surb, 1);
    assert_eq!(core.stats().replies, 1);
    // An id never issued.
    let mut unknown = first.clone();
    unknown[1] ^= 0xff;
    assert!(core.on_downstream(Some(gateway), &unknown, now).is_none());
    assert_eq!(core.stats().unknown_surb, 1);
    // A tampered body fails authentication and burns the SURB.
    let (_, _, mut tampered) = records[1].clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert!(core.on_downstream(Some(gateway), &tampered, now).is_none());
    assert_eq!(core.stats().bad_replies, 1);
    // Garbage.
    assert!(core.on_downstream(Some(gateway), &[0x07; 4096], now).is_none());
    assert_eq!(core.stats().malformed_downstream, 1);
}

#[test]
fn timeout_fails_the_request_without_retransmitting() {
    let mut net = Mixnet::new(5, Geometry::new(4096, 3).unwrap(), 0);
    let config = ClientConfig { timeout: Duration::from_secs(30), ..ClientConfig::default() };
    let mut core = net.client(config, 14);
    let (id, packets) = core.request(RequestBody::Echo(b"lost".to_vec()), 64, net.now(Duration::ZERO)).unwrap();
    let sent = core.stats().real_packets;
    assert_eq!(core.next_timeout(), Some(net.now(Duration::from_secs(30)).at));
    assert!(core.poll_timeouts(net.now(Duration::from_millis(29_999))).is_empty());
    let done = core.poll_timeouts(net.now(Duration::from_secs(30)));
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].id, id);
    assert_eq!(done[0].result.as_ref().unwrap_err(), &ClientError::Timeout);
    assert_eq!(core.surbs_held(), 0, "SURB keys are dropped at the timeout");
    assert_eq!(core.next_timeout(), None);
    // Nothing is resent: no new packets, nothing to transmit, no second timeout.
    assert!(core.poll_transmit(net.now(Duration::from_secs(60))).is_none());
    assert!(core.poll_timeouts(net.now(Duration::from_secs(120))).is_empty());
    assert_eq!(core.stats().real_packets, sent);
    assert_eq!(core.stats().timeouts, 1);
    // A reply that arrives late is counted and ignored.
    let (_, request) = net.forward(packets, 0).pop().unwrap();
    let records = net.answer(request, &Response::error(Status::Timeout, "slow"));
    let late = records.len() as u64;
    assert!(deliver(&mut core, &net, records).is_empty());
    assert_eq!(core.stats().late_replies, late);
}

#[test]
fn exit_errors_are_responses() {
    let mut net = Mixnet::new(6, Geometry::new(4096, 3).unwrap(), 0);
    let mut core = net.client(ClientConfig::default(), 15);
    let (_, packets) = core.request(RequestBody::JsonRpc(b"{}".to_vec()), 64, net.now(Duration::ZERO)).unwrap();
    let (_, request) = net.forward(packets, 0).pop().unwrap();
    let records = net.answer(request, &Response::error(Status::Forbidden, "no"));
    let done = deliver(&mut core, &net, records);
    let response = done[0].result.as_ref().unwrap();
    assert_eq!(response.status, Status::Forbidden);
    assert_eq!(response.error_message(), Some("no"));
}

#[test]
fn difficulty_notice_raises_the_entry_proof_of_work() {
    let mut net = Mixnet::new(7, Geometry::new(4096, 3).unwrap(), 1);
    let mut core = net.client(ClientConfig::default(), 16);
    let entries = net.nodes_in(0);
    let now = net.now(Duration::ZERO);
    for entry in &entries {
        let notice = nox_link::encode_difficulty(4096, 12);
        assert!(core.on_downstream(Some(*entry), &notice, now).is_none());
    }
    let (_, packets) = core.request(RequestBody::Echo(vec![0u8; 20_000]), 64, now).unwrap();
    // `forward` checks every hop's work: 12 bits at the entry, 1 elsewhere.
    assert_eq!(net.forward(packets, 12).len(), 1);
}

#[test]
fn avoided_nodes_are_never_used() {
    let mut net = Mixnet::new(8, Geometry::new(4096, 3).unwrap(), 0);
    let avoid: BTreeSet<NodeId> = [net.nodes_in(0)[0], net.nodes_in(1)[1], net.nodes_in(2)[2]].into();
    let config = ClientConfig { avoid: avoid.clone(), ..ClientConfig::default() };
    let mut core = net.client(config, 17);
    assert!(!avoid.contains(&core.gateway()));
    for _ in 0..10 {
        let (_, packets) = core.request(RequestBody::Echo(vec![0u8; 9_000]), 64, net.now(Duration::ZERO)).unwrap();
        for out in &packets {
            assert!(!avoid.contains(&out.entry));
        }
        let (exit, _) = net.forward(packets, 0).pop().unwrap();
        assert!(!avoid.contains(&exit));
    }
}

#[test]
fn a_new_topology_keeps_or_replaces_the_gateway() {
    let net = Mixnet::new(9, Geometry::new(4096, 3).unwrap(), 0);
    let mut core = net.client(ClientConfig::default(), 18);
    let gateway = core.gateway();
    let now = net.now(Duration::ZERO);
    assert_eq!(core.set_topology(net.topology.clone(), now).unwrap(), None, "same nodes: same gateway");
    assert_eq!(core.gateway(), gateway);
    // Entirely new nodes: a new gateway from the new last layer, same mailbox.
    let mut other = Mixnet::new(10, Geometry::new(4096, 3).unwrap(), 0);
    let mailbox = core.mailbox();
    let new = core.set_topology(other.topology.clone(), now).unwrap().expect("gateway replaced");
    assert_eq!(core.gateway(), new);
    assert_eq!(other.layer(&new), 2);
    assert_eq!(core.mailbox(), mailbox);
    let (_, packets) = core.request(RequestBody::Echo(b"x".to_vec()), 8, now).unwrap();
    let (_, request) = other.forward(packets, 0).pop().unwrap();
    let records = other.answer(request, &Response::ok(b"x".to_vec()));
    assert_eq!(deliver(&mut core, &other, records).len(), 1);
}

/// On an X-Wing network (geometry taken from the topology, keys of its scheme): the header is
/// 3,584 bytes and a SURB 3,648, so a packet carries less and a request its SURBs in more
/// bytes; an echo and a multi-SURB reply still round trip. A topology of another geometry is
/// refused by name.
#[test]
fn an_xwing_network_round_trips_and_refuses_a_classical_topology() {
    use nox_sphinx::{Scheme, Surb};
    // 32 KiB: at the 4 KiB default (issue 32) an X-Wing packet keeps 495 payload bytes, less
    // than one 3,648-byte SURB, so a post-quantum network runs at a larger configured length.
    const XWING_LEN: usize = 32_768;
    let xwing = Geometry::with_scheme(XWING_LEN, 3, Scheme::XWing).unwrap();
    assert_eq!((xwing.header_len(), Surb::encoded_len(&xwing)), (3584, 3648));
    let mut net = Mixnet::new(21, xwing, 0);
    let mut core = net.client(ClientConfig::default(), 22);
    assert_eq!(core.geometry(), &xwing, "the client's geometry is the topology's");

    let (id, packets) = core.request(RequestBody::Echo(b"post-quantum".to_vec()), 64, net.now(Duration::ZERO)).unwrap();
    assert!(packets.iter().all(|p| p.packet.len() == XWING_LEN));
    let (_, request) = net.forward(packets, 0).pop().unwrap();
    let records = net.answer(request, &Response::ok(b"post-quantum".to_vec()));
    let done = deliver(&mut core, &net, records);
    assert_eq!((done[0].id, done[0].result.as_ref().unwrap().body.as_slice()), (id, &b"post-quantum"[..]));

    // A reply of several SURBs: sized with the smaller X-Wing payload.
    let big: Vec<u8> = (0..100 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    let surbs = nox_message::surbs_needed(&xwing, big.len(), 0.05, 0.999).unwrap();
    assert!(
        surbs > nox_message::surbs_needed(&Geometry::new(XWING_LEN, 3).unwrap(), big.len(), 0.05, 0.999).unwrap() - 1
    );
    let (_, packets) = core.request(RequestBody::Echo(b"big".to_vec()), big.len(), net.now(Duration::ZERO)).unwrap();
    let (_, request) = net.forward(packets, 0).pop().unwrap();
    assert!(request.surbs.len() >= big.len().div_ceil(xwing.payload_capacity()));
    let records = net.answer(request, &Response::ok(big.clone()));
    let done = deliver(&mut core, &net, records);
    assert_eq!(done[0].result.as_ref().unwrap().body, big);

    let classical = Mixnet::new(23, Geometry::default(), 0);
    let refused = core.set_topology(classical.topology.clone(), net.now(Duration::ZERO));
    let Err(ClientError::WrongGeometry { expected, found }) = refused else { panic!("accepted: {refused:?}") };
    assert!(expected.starts_with("xwing") && found.starts_with("ristretto255"), "{expected} / {found}");
    assert_eq!(core.topology().geometry(), &xwing);
}
