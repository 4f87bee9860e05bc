//! The replay tag is recorded as soon as the header MAC verifies, whatever
//! the routing block and the body then say (docs/spec/sphinx.md §5.4 check 8).
//!
//! Without this a previous hop could flip a body bit (or hand on a packet
//! whose routing block it knows is refused) and replay it to this node
//! forever: each copy would pass admission, cost a scalar multiplication and
//! be dropped again without ever being recorded. Each test below fails if
//! the tag is recorded only after processing succeeded.

use nox_relay::{DropReason, Relay, RelayOutput};
use nox_replay::BloomParameters;
use nox_sphinx::{BuildOptions, Delay, Geometry, HeaderView, NodeId, PathHop, SecretKey, build_forward};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::Value;

const EPOCH: u32 = 7;

fn bloom() -> BloomParameters {
    BloomParameters::for_capacity(1_000, 0.001).unwrap()
}

/// A relay holding `key` and a one-hop packet for which it is the exit.
fn exit_and_packet(seed: u64) -> (Relay, Vec<u8>, Geometry) {
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let key = SecretKey::generate(&mut rng);
    let hop = PathHop { node: NodeId([1; 32]), public_key: key.public_key(), delay: Delay(0), pow_difficulty: 0 };
    let packet = build_forward(&geometry, &BuildOptions::new(EPOCH), &[hop], b"payload", &mut rng).unwrap();
    let mut relay = Relay::new(geometry);
    relay.open_epoch(EPOCH, key, bloom());
    (relay, packet, geometry)
}

/// admit → verify → record → finish, as the node's pipeline runs them.
fn run(relay: &mut Relay, packet: &[u8]) -> Result<RelayOutput, DropReason> {
    let admitted = relay.admit(packet, 0)?;
    let mut buffer = packet.to_vec();
    let verified = relay.verify(&admitted, &mut buffer)?;
    relay.record(verified)?.finish()
}

fn recorded(relay: &Relay, epoch: u32) -> u64 {
    relay.replay_cache(epoch).expect("cache").inserted()
}

#[test]
fn a_body_tampered_packet_refused_at_the_exit_is_recorded_and_its_copies_are_replays() {
    let (mut relay, mut packet, geometry) = exit_and_packet(1);
    // An earlier hop flips one body bit: the MAC (header only) still verifies.
    packet[geometry.header_len() + 100] ^= 0x01;
    assert_eq!(run(&mut relay, &packet), Err(DropReason::PayloadIntegrity));
    assert_eq!(recorded(&relay, EPOCH), 1, "the tag was recorded although the packet was refused");
    let tag = HeaderView::parse(&geometry, &packet).unwrap().replay_tag();
    assert!(relay.replay_cache(EPOCH).unwrap().check(&tag.0));

    // The same bytes again: refused at admission, before any public-key work.
    assert_eq!(relay.admit(&packet, 0), Err(DropReason::Replay));
    // A copy with another proof-of-work nonce (not covered by the tag) too.
    let mut renonced = packet.clone();
    renonced[geometry.nonce_range()].copy_from_slice(&[0xAB; 8]);
    assert_eq!(relay.admit(&renonced, 0), Err(DropReason::Replay));
    // A copy whose body was tampered differently keeps the header, so the tag.
    let mut other_body = packet.clone();
    other_body[geometry.header_len() + 200] ^= 0x80;
    assert_eq!(run(&mut relay, &other_body), Err(DropReason::Replay));
    assert_eq!(recorded(&relay, EPOCH), 1);
}

#[test]
fn a_packet_refused_at_its_routing_block_is_recorded_and_its_copy_is_a_replay() {
    // The committed vector whose MAC verifies over a routing block with an
    // unknown command (a header only its builder, knowing the keys, can make).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/sphinx.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let f = &all["failures"];
    let geometry = Geometry::new(
        f["geometry"]["packet_len"].as_u64().unwrap() as usize,
        f["geometry"]["hops"].as_u64().unwrap() as usize,
    )
    .unwrap();
    let secret: [u8; 32] = hex::decode(f["node"]["secret_key"].as_str().unwrap()).unwrap().try_into().unwrap();
    let epoch = f["node"]["key_epoch"].as_u64().unwrap() as u32;
    let difficulty = f["node"]["pow_difficulty"].as_u64().unwrap() as u8;
    for name in ["routing command 0x7f (valid MAC)", "Forward with reserved byte 3 nonzero"] {
        let case = f["cases"].as_array().unwrap().iter().find(|c| c["name"] == name).expect("case");
        let packet = hex::decode(case["input"].as_str().unwrap()).unwrap();
        let mut relay = Relay::new(geometry);
        relay.open_epoch(epoch, SecretKey::from_bytes(&secret).unwrap(), bloom());

        let admitted = relay.admit(&packet, difficulty).unwrap();
        let mut buffer = packet.clone();
        let verified = relay.verify(&admitted, &mut buffer).unwrap();
        let finished = relay.record(verified).unwrap().finish();
        assert_eq!(finished, Err(DropReason::Malformed), "{name}");
        assert_eq!(recorded(&relay, epoch), 1, "{name}: tag recorded");
        assert_eq!(relay.admit(&packet, difficulty), Err(DropReason::Replay), "{name}: second copy");
    }
}

#[test]
fn of_two_concurrent_copies_only_the_first_recorded_is_processed() {
    let (mut relay, mut packet, geometry) = exit_and_packet(2);
    packet[geometry.header_len()] ^= 0x01;
    // Both copies pass admission before either is recorded (two workers).
    let first = relay.admit(&packet, 0).unwrap();
    let second = relay.admit(&packet, 0).unwrap();
    let (mut a, mut b) = (packet.clone(), packet.clone());
    let verified_a = relay.verify(&first, &mut a).unwrap();
    let verified_b = relay.verify(&second, &mut b).unwrap();
    let recorded_a = relay.record(verified_a).unwrap();
    // The second is a replay at recording, so its routing block and body are
    // never read (there is no way to `finish` it).
    assert_eq!(relay.record(verified_b).map(|_| ()), Err(DropReason::Replay));
    assert_eq!(recorded_a.finish(), Err(DropReason::PayloadIntegrity));
    assert_eq!(recorded(&relay, EPOCH), 1);
}

#[test]
fn a_mac_failure_records_nothing_and_a_valid_packet_is_recorded_once() {
    let (mut relay, mut packet, geometry) = exit_and_packet(3);
    let good = packet.clone();
    packet[geometry.mac_range().start] ^= 0x01;
    // Junk does not fill the cache: a forged header is refused every time.
    for _ in 0..2 {
        assert_eq!(run(&mut relay, &packet), Err(DropReason::MacMismatch));
    }
    assert_eq!(recorded(&relay, EPOCH), 0);
    assert!(matches!(run(&mut relay, &good), Ok(RelayOutput::Deliver { .. })));
    assert_eq!(recorded(&relay, EPOCH), 1);
    assert_eq!(relay.admit(&good, 0), Err(DropReason::Replay));
}
