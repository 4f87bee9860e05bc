//! The same round trips and security properties on every scheme: the
//! classical ristretto255 geometry and the three KEM geometries. A property
//! that holds for the classical packets must hold for the post-quantum ones.

mod common;

use common::*;
use nox_sphinx::{
    Geometry, HeaderView, NodeId, Processed, Scheme, SecretKey, SphinxError, Surb, build_forward, build_surb,
    process_packet,
};
use proptest::prelude::*;

/// Large enough for a 5-hop X-Wing header (5,952 bytes) and a body.
const PACKET_LEN: usize = 8192;

fn geometry(scheme: Scheme, hops: usize) -> Geometry {
    Geometry::with_scheme(PACKET_LEN, hops, scheme).unwrap()
}

fn scheme_strategy() -> impl Strategy<Value = Scheme> {
    prop::sample::select(Scheme::ALL.to_vec())
}

#[test]
fn header_sizes_as_specified() {
    // docs/spec/sphinx.md §13.2: 8 + ε + 64·H + (H−1)·|ct| + 16 + 8.
    for (scheme, three, five) in [
        (Scheme::Ristretto255, 256, 384),
        (Scheme::X25519Kem, 320, 512),
        (Scheme::MlKem768, 3488, 5792),
        (Scheme::XWing, 3584, 5952),
    ] {
        assert_eq!(geometry(scheme, 3).header_len(), three, "{scheme}");
        assert_eq!(geometry(scheme, 5).header_len(), five, "{scheme}");
    }
    // A 32 KiB packet keeps 89 % of its payload on the largest scheme.
    let xwing = Geometry::with_scheme(32_768, 3, Scheme::XWing).unwrap();
    assert_eq!(xwing.body_len(), 32_768 - 3584);
    assert!(Geometry::with_scheme(4096, 5, Scheme::XWing).is_err(), "header larger than the packet");
}

#[test]
fn forward_round_trip_every_scheme_and_hop_count() {
    for scheme in Scheme::ALL {
        for max_hops in [1, 3, 5] {
            let geometry = geometry(scheme, max_hops);
            for hops in 1..=max_hops {
                let mut rng = rng(hops as u64);
                let nodes = nodes_for(scheme, hops, &mut rng);
                let payload = vec![hops as u8; geometry.payload_capacity() - hops];
                let mut packet = build_forward(&geometry, &options(), &path(&nodes), &payload, &mut rng).unwrap();
                match run_path(&geometry, &nodes, &mut packet).0 {
                    Ok(Processed::Deliver { payload: range, .. }) => assert_eq!(packet[range], payload[..]),
                    other => panic!("{scheme} {hops}/{max_hops}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn keys_of_another_scheme_are_refused() {
    let mut rng = rng(11);
    let xwing = geometry(Scheme::XWing, 3);
    let classical_nodes = nodes_for(Scheme::Ristretto255, 3, &mut rng);
    assert_eq!(
        build_forward(&xwing, &options(), &path(&classical_nodes), b"x", &mut rng),
        Err(SphinxError::WrongKeyScheme { expected: Scheme::XWing, actual: Scheme::Ristretto255 })
    );
    let nodes = nodes_for(Scheme::XWing, 3, &mut rng);
    let mut packet = build_forward(&xwing, &options(), &path(&nodes), b"x", &mut rng).unwrap();
    let mlkem_key = SecretKey::generate_for(Scheme::MlKem768, &mut rng);
    assert_eq!(
        process_packet(&xwing, &mlkem_key, &mut packet),
        Err(SphinxError::WrongKeyScheme { expected: Scheme::XWing, actual: Scheme::MlKem768 })
    );
    // Another node's key of the right scheme: the MAC fails.
    assert_eq!(process_packet(&xwing, &nodes[1].secret, &mut packet), Err(SphinxError::MacMismatch));
}

#[test]
fn secret_keys_restore_from_their_32_bytes_and_public_keys_decode() {
    let mut rng = rng(12);
    for scheme in Scheme::ALL {
        let key = SecretKey::generate_for(scheme, &mut rng);
        let restored = SecretKey::from_seed(scheme, &key.to_bytes()).unwrap();
        assert_eq!(restored.public_key(), key.public_key());
        let public = key.public_key();
        assert_eq!(public.as_bytes().len(), scheme.public_key_len());
        assert_eq!(nox_sphinx::PublicKey::decode(scheme, public.as_bytes()).unwrap(), public);
        assert!(matches!(
            nox_sphinx::PublicKey::decode(scheme, &public.as_bytes()[1..]),
            Err(SphinxError::WrongLength { .. })
        ));
    }
    // An ML-KEM key whose coefficients are not reduced mod q is refused
    // (FIPS 203 §7.2 modulus check), in both KEM schemes that carry one.
    for scheme in [Scheme::MlKem768, Scheme::XWing] {
        let bad = vec![0xff; scheme.public_key_len()];
        assert_eq!(nox_sphinx::PublicKey::decode(scheme, &bad), Err(SphinxError::InvalidPublicKey));
    }
}

#[test]
fn low_order_x25519_ciphertexts_are_refused() {
    let geometry = geometry(Scheme::X25519Kem, 3);
    let mut rng = rng(13);
    let nodes = nodes_for(Scheme::X25519Kem, 3, &mut rng);
    let mut packet = build_forward(&geometry, &options(), &path(&nodes), b"x", &mut rng).unwrap();
    // u = 0 and u = 1 are of low order: X25519 gives all zeros.
    for u in [0u8, 1] {
        let mut copy = packet.clone();
        copy[geometry.alpha_range()].fill(0);
        copy[geometry.alpha_range().start] = u;
        assert_eq!(process_packet(&geometry, &nodes[0].secret, &mut copy), Err(SphinxError::InvalidEphemeralKey));
    }
    assert!(process_packet(&geometry, &nodes[0].secret, &mut packet).is_ok());
}

#[test]
fn surbs_round_trip_and_authenticate_on_every_scheme() {
    for scheme in Scheme::ALL {
        let geometry = geometry(scheme, 3);
        let mut rng = rng(14);
        let nodes = nodes_for(scheme, 3, &mut rng);
        let client = NodeId([0xC1; 32]);
        let (surb, recovery) = build_surb(&geometry, &options(), &path(&nodes), client, &mut rng).unwrap();
        let (_other, other_recovery) = build_surb(&geometry, &options(), &path(&nodes), client, &mut rng).unwrap();
        let wire = surb.to_bytes();
        assert_eq!(wire.len(), Surb::encoded_len(&geometry));
        let surb = Surb::from_bytes(&geometry, &wire).unwrap();
        let reply = b"reply on ".iter().chain(scheme.name().as_bytes()).copied().collect::<Vec<u8>>();
        let mut packet = surb.into_reply(&geometry, &reply).unwrap();
        let Ok(Processed::Reply { recipient, surb_id, body, .. }) = run_path(&geometry, &nodes, &mut packet).0 else {
            panic!("{scheme}: no reply");
        };
        assert_eq!(recipient, client);
        assert_eq!(recovery.open(&surb_id, &packet[body.clone()]).unwrap(), reply, "{scheme}");
        assert_eq!(
            other_recovery.open(&other_recovery.id(), &packet[body.clone()]),
            Err(SphinxError::PayloadIntegrity)
        );
        let mut tampered = packet[body].to_vec();
        tampered[7] ^= 0x10;
        assert_eq!(recovery.open(&surb_id, &tampered), Err(SphinxError::PayloadIntegrity), "{scheme}");
        // A SURB of another scheme's geometry is refused by its tag.
        let classical = Geometry::with_scheme(PACKET_LEN, 3, Scheme::Ristretto255).unwrap();
        if scheme != Scheme::Ristretto255 {
            assert!(Surb::from_bytes(&classical, &wire).is_err());
        }
    }
}

#[test]
fn replay_tags_and_work_on_every_scheme() {
    for scheme in Scheme::ALL {
        let geometry = geometry(scheme, 3);
        let mut rng = rng(15);
        let nodes = nodes_for(scheme, 3, &mut rng);
        let mut hops = path(&nodes);
        for hop in &mut hops {
            hop.pow_difficulty = 6;
        }
        let mut packet = build_forward(&geometry, &options(), &hops, b"x", &mut rng).unwrap();
        let mut tags = Vec::new();
        for node in &nodes {
            let view = HeaderView::parse(&geometry, &packet).unwrap();
            let tag = view.replay_tag();
            view.check_work(&tag, 6).unwrap();
            tags.push(tag);
            process_packet(&geometry, &node.secret, &mut packet).unwrap();
        }
        tags.sort();
        tags.dedup();
        assert_eq!(tags.len(), 3, "{scheme}");
    }
}

fn bytes_in_common(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x == y).count()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn prop_round_trip(scheme in scheme_strategy(), seed in any::<u64>(), max_hops in 1usize..=5, hops_less in 0usize..5, len in 0usize..2200) {
        let geometry = geometry(scheme, max_hops);
        let hops = max_hops - hops_less.min(max_hops - 1);
        let mut rng = rng(seed);
        let nodes = nodes_for(scheme, hops, &mut rng);
        let payload: Vec<u8> = (0..len).map(|i| (i as u64 ^ seed) as u8).collect();
        let mut packet = build_forward(&geometry, &options(), &path(&nodes), &payload, &mut rng).unwrap();
        match run_path(&geometry, &nodes, &mut packet).0 {
            Ok(Processed::Deliver { payload: range, .. }) => prop_assert_eq!(&packet[range], &payload[..]),
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn prop_any_header_bit_flip_is_rejected(scheme in scheme_strategy(), seed in any::<u64>(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        // Every bit of the header except the PoW nonce (the last 8 bytes),
        // including every bit of a KEM ciphertext.
        let geometry = geometry(scheme, 3);
        let mut rng = rng(seed);
        let nodes = nodes_for(scheme, 3, &mut rng);
        let mut packet = build_forward(&geometry, &options(), &path(&nodes), b"payload", &mut rng).unwrap();
        let byte = at.index(geometry.header_len() - 8);
        packet[byte] ^= 1 << bit;
        let result = process_packet(&geometry, &nodes[0].secret, &mut packet);
        prop_assert!(result.is_err(), "{} flipped bit {} of byte {} accepted", scheme, bit, byte);
    }

    #[test]
    fn prop_any_body_bit_flip_fails_at_exit(scheme in scheme_strategy(), seed in any::<u64>(), hop in 0usize..3, at in any::<prop::sample::Index>()) {
        let geometry = geometry(scheme, 3);
        let mut rng = rng(seed);
        let nodes = nodes_for(scheme, 3, &mut rng);
        let payload = vec![0x33u8; 1500];
        let mut packet = build_forward(&geometry, &options(), &path(&nodes), &payload, &mut rng).unwrap();
        for node in &nodes[..hop] {
            process_packet(&geometry, &node.secret, &mut packet).unwrap();
        }
        let byte = geometry.header_len() + at.index(geometry.body_len());
        packet[byte] ^= 1 << (seed % 8);
        let mut result = Ok(Processed::Forward { next_hop: NodeId([0; 32]), delay: Default::default() });
        for node in &nodes[hop..] {
            result = process_packet(&geometry, &node.secret, &mut packet);
        }
        prop_assert_eq!(result, Err(SphinxError::PayloadIntegrity));
    }

    #[test]
    fn prop_consecutive_hops_share_no_bytes_beyond_chance(scheme in scheme_strategy(), seed in any::<u64>()) {
        let geometry = geometry(scheme, 3);
        let mut rng = rng(seed);
        let nodes = nodes_for(scheme, 3, &mut rng);
        let mut packet = build_forward(&geometry, &options(), &path(&nodes), b"x", &mut rng).unwrap();
        let (_, headers) = run_path(&geometry, &nodes, &mut packet);
        let end = geometry.header_len() - 8;
        let n = (end - 8) as f64;
        // Equal bytes at equal offsets by chance: Binomial(n, 1/256); allow 8 σ.
        let bound = (n / 256.0 + 8.0 * (n / 256.0).sqrt() + 4.0) as usize;
        for pair in headers.windows(2) {
            let common = bytes_in_common(&pair[0][8..end], &pair[1][8..end]);
            prop_assert!(common < bound, "{}: {} bytes in common (bound {})", scheme, common, bound);
        }
    }
}
