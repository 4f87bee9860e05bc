//! Client → exit → client in memory, through real SURBs on a 3-hop return path.

mod common;

use common::*;
use nox_message::*;
use nox_sphinx::{Geometry, NodeId, Processed, SurbRecovery, process_packet};
use rand_core::RngCore;

/// Runs one reply packet through the return path and opens it.
fn deliver_reply(geometry: &Geometry, nodes: &[TestNode], recoveries: &[SurbRecovery], packet: &mut [u8]) -> Vec<u8> {
    let mut hop: NodeId = nodes[0].id;
    for node in nodes {
        assert_eq!(node.id, hop);
        match process_packet(geometry, &node.secret, packet).unwrap() {
            Processed::Forward { next_hop, .. } => hop = next_hop,
            Processed::Reply { recipient, surb_id, body, .. } => {
                assert_eq!(recipient, CLIENT);
                let recovery = recoveries.iter().find(|r| r.id() == surb_id).expect("known SURB");
                return recovery.open(&surb_id, &packet[body]).unwrap();
            }
            Processed::Deliver { .. } => panic!("a reply must not be delivered as a forward payload"),
        }
    }
    panic!("reply still forwarding after the last hop");
}

/// Sends a request with `n_surbs` SURBs, answers it with `response_len`
/// bytes, drops the reply packets `drop` selects, and returns the client's
/// result (None if the reply could not be rebuilt).
fn exchange(
    n_surbs: usize,
    response_len: usize,
    drop: impl Fn(usize) -> bool,
    seed: u64,
) -> Result<Option<Response>, MessageError> {
    let geometry = Geometry::default();
    let mut rng = rng(seed);
    let nodes = nodes(3, &mut rng);
    let (surbs, recoveries) = surbs(&geometry, &nodes, n_surbs, &mut rng);
    let request = Request { surbs, body: RequestBody::Echo(vec![7; response_len]) };
    let fragments = request_fragments(&geometry, &request.encode(), 30, &mut rng)?;
    assert!(fragments.iter().all(|f| f.len() <= geometry.payload_capacity()));

    let mut exit = RequestAssembler::new(REQUEST_LIMITS)?;
    let mut received = None;
    for (i, fragment) in fragments.iter().enumerate().rev() {
        if let Some(request) = exit.accept(&geometry, fragment, i as u64)? {
            received = Some(request);
        }
    }
    let received = received.expect("request rebuilt");
    assert_eq!(received.surbs.len(), n_surbs);
    let RequestBody::Echo(echo) = &received.body else { panic!("kind changed") };
    let response = Response::ok(echo.clone()).encode();
    let packets = reply_packets(&geometry, &response, received.surbs, 0.3, 0.999, &mut rng)?;
    assert!(packets.len() <= n_surbs);
    assert!(packets.iter().all(|(hop, p)| *hop == nodes[0].id && p.len() == geometry.packet_len()));

    let mut client = ReplyAssembler::new(REPLY_LIMITS)?;
    let mut rebuilt = None;
    for (i, (_, mut packet)) in packets.into_iter().enumerate() {
        if drop(i) {
            continue;
        }
        let fragment = deliver_reply(&geometry, &nodes, &recoveries, &mut packet);
        if let Some(bytes) = client.accept(&fragment, 1000 + i as u64)? {
            assert!(rebuilt.is_none(), "completed twice");
            rebuilt = Some(Response::decode(&bytes)?);
        }
    }
    Ok(rebuilt)
}

const KIB: usize = 1024;
/// A reply of 7 data shards at the default 4 KiB geometry (3,798 bytes a shard; at 32 KiB,
/// before issue 32, these tests used 200 KiB for the same 7 shards).
const SEVEN_SHARDS: usize = 25 * KIB;

#[test]
fn a_seven_shard_reply_comes_back_exactly() {
    let surbs = surbs_needed(&Geometry::default(), SEVEN_SHARDS, 0.3, 0.999).unwrap();
    let response = exchange(surbs, SEVEN_SHARDS, |_| false, 1).unwrap().expect("reply rebuilt");
    assert_eq!(response, Response::ok(vec![7; SEVEN_SHARDS]));
}

#[test]
fn a_seven_shard_reply_survives_30_percent_loss_when_parity_suffices() {
    let surbs = surbs_needed(&Geometry::default(), SEVEN_SHARDS, 0.3, 0.999).unwrap();
    // 25 KiB needs 7 data shards; the SURBs bring the parity.
    assert!(surbs >= 7 + 3, "{surbs}");
    // Drop every third packet starting with the first data shard (>= 30 %).
    let response = exchange(surbs, SEVEN_SHARDS, |i| i % 3 == 0, 2).unwrap().expect("reply rebuilt");
    assert_eq!(response.body, vec![7; SEVEN_SHARDS]);
}

#[test]
fn losing_more_than_the_parity_loses_the_reply() {
    // 7 data shards and 7 SURBs: no parity, any loss is fatal.
    assert_eq!(exchange(7, SEVEN_SHARDS, |i| i == 3, 3).unwrap(), None);
}

#[test]
fn too_few_surbs_is_reported_and_the_error_reply_fits_one() {
    let err = exchange(3, SEVEN_SHARDS, |_| false, 4).unwrap_err();
    assert_eq!(err, MessageError::NotEnoughSurbs { needed: 7, have: 3 });
    // The exit answers with the short error through a single SURB instead.
    let geometry = Geometry::default();
    let mut rng = rng(5);
    let nodes = nodes(3, &mut rng);
    let (surbs, recoveries) = surbs(&geometry, &nodes, 1, &mut rng);
    let error = Response::error(Status::NotEnoughSurbs, &"x".repeat(5000));
    let mut packets = reply_packets(&geometry, &error.encode(), surbs, 0.3, 0.999, &mut rng).unwrap();
    assert_eq!(packets.len(), 1);
    let fragment = deliver_reply(&geometry, &nodes, &recoveries, &mut packets[0].1);
    let mut client = ReplyAssembler::new(REPLY_LIMITS).unwrap();
    let bytes = client.accept(&fragment, 0).unwrap().expect("one fragment suffices");
    assert_eq!(Response::decode(&bytes).unwrap(), error);
}

#[test]
fn max_reply_len_is_exact_for_real_surbs() {
    let geometry = Geometry::default();
    for n in [1usize, 2, 5] {
        let max = max_reply_len(&geometry, n);
        let mut rng = rng(n as u64);
        let nodes = nodes(3, &mut rng);
        let fits = vec![0xab; max];
        let (surbs_a, _) = surbs(&geometry, &nodes, n, &mut rng);
        let packets = reply_packets(&geometry, &fits, surbs_a, 0.0, 0.5, &mut rng).unwrap();
        assert_eq!(packets.len(), n);
        let (surbs_b, _) = surbs(&geometry, &nodes, n, &mut rng);
        let err = reply_packets(&geometry, &vec![0; max + 1], surbs_b, 0.0, 0.5, &mut rng).unwrap_err();
        assert_eq!(err, MessageError::NotEnoughSurbs { needed: n + 1, have: n });
    }
    // A reply body carries the forward payload capacity.
    assert_eq!(max_reply_len(&geometry, 1), (geometry.payload_capacity() - 24) & !1);
    assert_eq!(max_reply_len(&geometry, 1000), max_reply_len(&geometry, 255));
}

#[test]
fn the_exit_uses_spare_surbs_for_parity_and_never_refuses_an_unreachable_target() {
    let geometry = Geometry::default();
    let mut rng = rng(9);
    let nodes = nodes(3, &mut rng);
    let response = vec![1u8; 14 * KIB]; // 4 data shards at 4 KiB
    let (surbs_a, _) = surbs(&geometry, &nodes, 20, &mut rng);
    // Target out of reach at 90 % loss: all 20 SURBs are used.
    let packets = reply_packets(&geometry, &response, surbs_a, 0.9, 0.999, &mut rng).unwrap();
    assert_eq!(packets.len(), 20);
    // No loss: no parity needed.
    let (surbs_b, _) = surbs(&geometry, &nodes, 20, &mut rng);
    let packets = reply_packets(&geometry, &response, surbs_b, 0.0, 0.999, &mut rng).unwrap();
    assert_eq!(packets.len(), 4);
    let (surbs_c, _) = surbs(&geometry, &nodes, 20, &mut rng);
    assert!(matches!(
        reply_packets(&geometry, &response, surbs_c, f64::NAN, 0.9, &mut rng),
        Err(MessageError::Planning(_))
    ));
}

#[test]
fn request_fragments_parity_rule() {
    let geometry = Geometry::default();
    let mut rng = rng(11);
    let one = request_fragments(&geometry, &[5; 100], 30, &mut rng).unwrap();
    assert_eq!(one.len(), 1);
    let cap = geometry.payload_capacity();
    // 10 data shards at 30 %: p = 3.
    let mut big = vec![0u8; 10 * ((cap - 24) & !1)];
    rng.fill_bytes(&mut big);
    let ten = request_fragments(&geometry, &big, 30, &mut rng).unwrap();
    assert_eq!(ten.len(), 13);
    assert!(ten.iter().all(|f| f.len() <= cap));
    // Any 10 of the 13 rebuild it at the exit (here: the last 10), but it is
    // not a valid request, so the exit reports a decode error.
    let mut exit = RequestAssembler::new(REQUEST_LIMITS).unwrap();
    let mut outcome = Ok(None);
    for f in &ten[3..] {
        outcome = exit.accept(&geometry, f, 0);
    }
    assert!(matches!(outcome, Err(MessageError::UnknownVersion(_))));
    let too_big = vec![0u8; MAX_REQUEST_LEN + 1];
    assert!(matches!(request_fragments(&geometry, &too_big, 0, &mut rng), Err(MessageError::MessageTooLarge { .. })));
}

#[test]
fn surbs_needed_bounds() {
    let geometry = Geometry::default();
    assert_eq!(surbs_needed(&geometry, 0, 0.0, 0.99).unwrap(), 1);
    assert_eq!(surbs_needed(&geometry, 10, 0.0, 0.99).unwrap(), 1);
    // d = 1: 1 - 0.1^2 = 0.99 with one parity shard.
    assert_eq!(surbs_needed(&geometry, 10, 0.1, 0.99).unwrap(), 2);
    assert_eq!(surbs_needed(&geometry, 10, 0.1, 0.999).unwrap(), 3);
    assert_eq!(surbs_needed(&geometry, 900_000, 0.99, 0.999).unwrap(), 255);
    assert!(matches!(surbs_needed(&geometry, 9 << 20, 0.1, 0.99), Err(MessageError::MessageTooLarge { .. })));
    assert!(matches!(surbs_needed(&geometry, 10, 2.0, 0.99), Err(MessageError::Planning(_))));
}

#[test]
fn an_exit_can_answer_a_request_it_cannot_decode() {
    let geometry = Geometry::default();
    let mut rng = rng(21);
    let mut bytes = request(&geometry, 1, RequestBody::Echo(vec![])).encode();
    bytes[1] = 0x42; // a kind this exit does not know
    let fragments = request_fragments(&geometry, &bytes, 30, &mut rng).unwrap();
    let mut exit = RequestAssembler::new(REQUEST_LIMITS).unwrap();
    let raw = exit.accept_raw(&fragments[0], 0).unwrap().expect("one fragment");
    assert_eq!(Request::decode(&geometry, &raw).unwrap_err(), MessageError::UnknownKind(0x42));
    assert_eq!(Request::decode_surbs(&geometry, &raw).unwrap().len(), 1);
    // The same fragment again is a late duplicate of a completed message.
    assert_eq!(exit.accept(&geometry, &fragments[0], 1).unwrap().map(|r| r.surbs.len()), None);
}
