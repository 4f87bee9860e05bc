//! Round trips and security properties of forward packets and SURBs.

mod common;

use common::*;
use nox_sphinx::{
    Geometry, HeaderView, NodeId, Processed, SphinxError, Surb, build_forward, build_surb, pow, process_packet,
};
use proptest::prelude::*;

fn deliver(geometry: &Geometry, hops: usize, payload: &[u8], seed: u64) -> Vec<u8> {
    let mut rng = rng(seed);
    let nodes = nodes(hops, &mut rng);
    let mut packet = build_forward(geometry, &options(), &path(&nodes), payload, &mut rng).unwrap();
    match run_path(geometry, &nodes, &mut packet).0 {
        Ok(Processed::Deliver { payload, delay }) => {
            assert_eq!(delay.0, 1000 + hops as u32 - 1);
            packet[payload].to_vec()
        }
        other => panic!("unexpected outcome {other:?}"),
    }
}

#[test]
fn forward_round_trip_every_hop_count() {
    for max_hops in [1, 3, 5] {
        let geometry = Geometry::new(4096, max_hops).unwrap();
        for hops in 1..=max_hops {
            let payload = vec![hops as u8; 100 * hops];
            assert_eq!(deliver(&geometry, hops, &payload, hops as u64), payload);
        }
    }
    let geometry = Geometry::default();
    let full = vec![0x5a; geometry.payload_capacity()];
    assert_eq!(deliver(&geometry, 3, &full, 9), full);
    assert_eq!(deliver(&geometry, 3, b"", 10), b"");
}

#[test]
fn oversized_payload_and_bad_paths_are_refused() {
    let geometry = Geometry::new(2048, 3).unwrap();
    let mut rng = rng(1);
    let nodes = nodes(4, &mut rng);
    let too_big = vec![0; geometry.payload_capacity() + 1];
    assert!(matches!(
        build_forward(&geometry, &options(), &path(&nodes[..3]), &too_big, &mut rng),
        Err(SphinxError::PayloadTooLarge { .. })
    ));
    assert!(matches!(
        build_forward(&geometry, &options(), &path(&nodes), b"x", &mut rng),
        Err(SphinxError::PathLength { max: 3, actual: 4 })
    ));
    assert!(matches!(build_forward(&geometry, &options(), &[], b"x", &mut rng), Err(SphinxError::PathLength { .. })));
}

#[test]
fn wrong_geometry_truncated_and_oversized_packets() {
    let geometry = Geometry::new(2048, 3).unwrap();
    let other = Geometry::new(2048, 2).unwrap();
    let mut rng = rng(2);
    let nodes = nodes(2, &mut rng);
    let packet = build_forward(&other, &options(), &path(&nodes), b"hello", &mut rng).unwrap();
    let mut copy = packet.clone();
    assert!(matches!(process_packet(&geometry, &nodes[0].secret, &mut copy), Err(SphinxError::WrongGeometry { .. })));
    let mut truncated = packet[..2047].to_vec();
    assert!(matches!(
        process_packet(&other, &nodes[0].secret, &mut truncated),
        Err(SphinxError::WrongLength { actual: 2047, .. })
    ));
    let mut long = packet.clone();
    long.push(0);
    assert!(matches!(process_packet(&other, &nodes[0].secret, &mut long), Err(SphinxError::WrongLength { .. })));
    assert!(HeaderView::parse(&other, &[]).is_err());
}

#[test]
fn wrong_key_fails_the_mac() {
    let geometry = Geometry::new(2048, 3).unwrap();
    let mut rng = rng(3);
    let nodes = nodes(4, &mut rng);
    let mut packet = build_forward(&geometry, &options(), &path(&nodes[..3]), b"x", &mut rng).unwrap();
    assert_eq!(process_packet(&geometry, &nodes[3].secret, &mut packet), Err(SphinxError::MacMismatch));
}

#[test]
fn replay_tag_ignores_the_pow_nonce_and_changes_per_hop() {
    let geometry = Geometry::new(2048, 3).unwrap();
    let mut rng = rng(4);
    let nodes = nodes(3, &mut rng);
    let mut hops = path(&nodes);
    for hop in &mut hops {
        hop.pow_difficulty = 8;
    }
    let mut packet = build_forward(&geometry, &options(), &hops, b"x", &mut rng).unwrap();
    let view = HeaderView::parse(&geometry, &packet).unwrap();
    let tag = view.replay_tag();
    view.check_work(&tag, 8).unwrap();
    // A relay re-sends the packet with another nonce: same tag, and the
    // new nonce most likely fails the work check.
    let mut resent = packet.clone();
    let nonce_at = geometry.header_len() - 8;
    resent[nonce_at] ^= 0xff;
    let resent_view = HeaderView::parse(&geometry, &resent).unwrap();
    assert_eq!(resent_view.replay_tag(), tag);
    // The MAC does not cover the nonce: the re-sent packet still processes,
    // which is exactly why the replay tag must not cover it.
    assert!(process_packet(&geometry, &nodes[0].secret, &mut resent).is_ok());
    // Each hop sees a different tag, and every hop's nonce was solved.
    let mut tags = vec![tag];
    for node in &nodes[..2] {
        process_packet(&geometry, &node.secret, &mut packet).unwrap();
        let view = HeaderView::parse(&geometry, &packet).unwrap();
        let tag = view.replay_tag();
        view.check_work(&tag, 8).unwrap();
        tags.push(tag);
    }
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), 3);
}

#[test]
fn pow_difficulty_enforced() {
    let geometry = Geometry::new(2048, 1).unwrap();
    let mut rng = rng(5);
    let nodes = nodes(1, &mut rng);
    let mut hops = path(&nodes);
    hops[0].pow_difficulty = 12;
    let packet = build_forward(&geometry, &options(), &hops, b"x", &mut rng).unwrap();
    let view = HeaderView::parse(&geometry, &packet).unwrap();
    let tag = view.replay_tag();
    let bits = pow::work_bits(&tag, &view.pow_nonce());
    assert!(bits >= 12);
    assert_eq!(
        view.check_work(&tag, bits + 1),
        Err(SphinxError::InsufficientWork { required: bits + 1, actual: bits })
    );
}

#[test]
fn surb_round_trip_and_single_use_shape() {
    let geometry = Geometry::default();
    let mut rng = rng(6);
    let nodes = nodes(3, &mut rng);
    let client = NodeId([0xC1; 32]);
    let (surb, recovery) = build_surb(&geometry, &options(), &path(&nodes), client, &mut rng).unwrap();
    assert_eq!(surb.first_hop(), nodes[0].id);
    let wire = surb.to_bytes();
    assert_eq!(wire.len(), Surb::encoded_len(&geometry));
    let surb = Surb::from_bytes(&geometry, &wire).unwrap();
    let reply = b"the answer is 42".repeat(100);
    let mut packet = surb.into_reply(&geometry, &reply).unwrap();
    assert_eq!(packet.len(), geometry.packet_len());
    match run_path(&geometry, &nodes, &mut packet).0 {
        Ok(Processed::Reply { recipient, surb_id, body, .. }) => {
            assert_eq!(recipient, client);
            assert_eq!(surb_id, recovery.id());
            assert_eq!(recovery.open(&surb_id, &packet[body.clone()]).unwrap(), reply);
            let mut tampered = packet[body.clone()].to_vec();
            tampered[1000] ^= 4;
            assert_eq!(recovery.open(&surb_id, &tampered), Err(SphinxError::PayloadIntegrity));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(Surb::from_bytes(&geometry, &wire[1..]).is_err());
    // Short or long bodies are refused, not a panic (found by fuzzing).
    let id = recovery.id();
    assert!(matches!(recovery.open(&id, &[0u8; 5]), Err(SphinxError::WrongLength { .. })));
    assert!(matches!(recovery.open(&id, &vec![0u8; geometry.body_len() + 1]), Err(SphinxError::WrongLength { .. })));
}

#[test]
fn reply_cannot_be_opened_with_another_surbs_keys() {
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut rng = rng(7);
    let nodes = nodes(3, &mut rng);
    let client = NodeId([0xC1; 32]);
    let (surb_a, recovery_a) = build_surb(&geometry, &options(), &path(&nodes), client, &mut rng).unwrap();
    let (_surb_b, recovery_b) = build_surb(&geometry, &options(), &path(&nodes), client, &mut rng).unwrap();
    let mut packet = surb_a.into_reply(&geometry, b"for a").unwrap();
    let Ok(Processed::Reply { surb_id, body, .. }) = run_path(&geometry, &nodes, &mut packet).0 else {
        panic!("no reply");
    };
    assert_eq!(recovery_b.open(&surb_id, &packet[body.clone()]), Err(SphinxError::SurbMismatch));
    // Even when told the id matches, B's keys reject A's reply.
    assert_eq!(recovery_b.open(&recovery_b.id(), &packet[body.clone()]), Err(SphinxError::PayloadIntegrity));
    assert_eq!(recovery_a.open(&surb_id, &packet[body]).unwrap(), b"for a");
}

fn bytes_in_common(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x == y).count()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn prop_round_trip(seed in any::<u64>(), max_hops in 1usize..=5, hops_less in 0usize..5, len in 0usize..1900) {
        let geometry = Geometry::new(2048, max_hops).unwrap();
        let hops = max_hops - hops_less.min(max_hops - 1);
        let payload: Vec<u8> = (0..len.min(geometry.payload_capacity())).map(|i| (i as u64 ^ seed) as u8).collect();
        prop_assert_eq!(deliver(&geometry, hops, &payload, seed), payload);
    }

    #[test]
    fn prop_any_header_bit_flip_is_rejected(seed in any::<u64>(), bit in 0usize..(248 * 8)) {
        // Every bit of the header except the PoW nonce (the last 8 bytes).
        let geometry = Geometry::new(2048, 3).unwrap();
        let mut rng = rng(seed);
        let nodes = nodes(3, &mut rng);
        let mut packet = build_forward(&geometry, &options(), &path(&nodes), b"payload", &mut rng).unwrap();
        prop_assume!(bit / 8 < geometry.header_len() - 8);
        packet[bit / 8] ^= 1 << (bit % 8);
        let result = process_packet(&geometry, &nodes[0].secret, &mut packet);
        prop_assert!(result.is_err(), "flipped bit {} accepted", bit);
    }

    #[test]
    fn prop_any_body_bit_flip_fails_at_exit(seed in any::<u64>(), hop in 0usize..3, bit in 0usize..(1792 * 8)) {
        let geometry = Geometry::new(2048, 3).unwrap();
        let mut rng = rng(seed);
        let nodes = nodes(3, &mut rng);
        let payload = vec![0x33u8; 1500];
        let mut packet = build_forward(&geometry, &options(), &path(&nodes), &payload, &mut rng).unwrap();
        let body_len = geometry.body_len();
        for node in &nodes[..hop] {
            process_packet(&geometry, &node.secret, &mut packet).unwrap();
        }
        packet[geometry.header_len() + bit % body_len] ^= 1 << (bit % 8);
        let mut result = Ok(Processed::Forward { next_hop: NodeId([0; 32]), delay: Default::default() });
        for node in &nodes[hop..] {
            result = process_packet(&geometry, &node.secret, &mut packet);
        }
        prop_assert_eq!(result, Err(SphinxError::PayloadIntegrity));
    }

    #[test]
    fn prop_consecutive_hops_share_no_bytes_beyond_chance(seed in any::<u64>()) {
        let geometry = Geometry::default();
        let mut rng = rng(seed);
        let nodes = nodes(3, &mut rng);
        let mut packet = build_forward(&geometry, &options(), &path(&nodes), b"x", &mut rng).unwrap();
        let (_, headers) = run_path(&geometry, &nodes, &mut packet);
        for pair in headers.windows(2) {
            // Compare α, β and γ (skip the 8-byte prefix shared by design
            // and the nonce, all zero at difficulty 0).
            let end = geometry.header_len() - 8;
            let common = bytes_in_common(&pair[0][8..end], &pair[1][8..end]);
            // 240 bytes, each equal with p = 1/256: mean ~0.94; 8 is > 7 sigma.
            prop_assert!(common < 8, "{} bytes in common", common);
            prop_assert!(bytes_in_common(&pair[0][8..40], &pair[1][8..40]) < 4);
        }
    }
}

#[test]
fn honest_body_layer_garbles_half_the_plaintext() {
    let geometry = Geometry::default();
    let mut rng = rng(11);
    let nodes = nodes(3, &mut rng);
    let payload = vec![0u8; geometry.payload_capacity()];
    let mut packet = build_forward(&geometry, &options(), &path(&nodes), &payload, &mut rng).unwrap();
    process_packet(&geometry, &nodes[0].secret, &mut packet).unwrap();
    // Tag the body at a corrupt hop, then let honest hops process.
    packet[geometry.header_len() + 40] ^= 0x80;
    process_packet(&geometry, &nodes[1].secret, &mut packet).unwrap();
    // The exit refuses it; look at what the plaintext became by peeling
    // the last layer with the bench helper-free path: process and inspect.
    let err = process_packet(&geometry, &nodes[2].secret, &mut packet).unwrap_err();
    assert_eq!(err, SphinxError::PayloadIntegrity);
    let body = &packet[geometry.header_len()..];
    let changed = body.iter().filter(|b| **b != 0).count() as f64 / body.len() as f64;
    // Expected 255/256 of bytes changed versus the all-zero plaintext
    // (about 50% of bits); anything below 95% would mean weak diffusion.
    assert!(changed > 0.95, "only {changed} of bytes changed");
}
