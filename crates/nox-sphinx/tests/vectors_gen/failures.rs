//! Failure cases (docs/spec/sphinx.md §5.4): one node, one input each, and the error the
//! ingest order of §5.4 reports (the reference ingest, shared with the KEM vectors, is in
//! `common::ingest`).

use super::*;
use common::ingest::{FailureNode, expected_field, resolve_nonce};

/// The smallest nonce (as a BE64 counter) that fails `difficulty`.
fn failing_nonce(geometry: &Geometry, packet: &[u8], difficulty: u8) -> [u8; 8] {
    let tag = HeaderView::parse(geometry, packet).expect("view").replay_tag();
    (0u64..).map(u64::to_be_bytes).find(|n| pow::work_bits(&tag, n) < difficulty).expect("a failing nonce")
}

/// Replaces this hop's routing block with `block` and re-MACs the header
/// with the hop's own keys, so that only the block is wrong.
fn with_routing_block(geometry: &Geometry, key: &SecretKey, packet: &[u8], block: [u8; 64]) -> Vec<u8> {
    let keys = hop_keys(geometry, key, packet);
    let routing_len = geometry.routing_len();
    let mut routing = keys.unwrapped[..routing_len].to_vec();
    routing[..64].copy_from_slice(&block);
    let mut stream = vec![0u8; routing_len];
    internals::xor_keystream(&keys.rho, &mut stream);
    for (r, s) in routing.iter_mut().zip(&stream) {
        *r ^= s;
    }
    let mut out = packet.to_vec();
    out[geometry.routing_range()].copy_from_slice(&routing);
    let mac = internals::header_mac(&keys.mu, &out[..8], &routing);
    out[geometry.mac_range()].copy_from_slice(&mac);
    out
}

pub(crate) fn failure_vectors() -> Value {
    const DIFFICULTY: u8 = 8;
    let geometry = Geometry::new(2048, 3).expect("geometry");
    let (keys, path) = make_nodes(3, 31, DIFFICULTY);
    let node = FailureNode { key: keys[0].clone(), epoch: EPOCH, difficulty: DIFFICULTY };
    let mut rng = ChaCha20Rng::seed_from_u64(1031);
    let build = |g: &Geometry, epoch: u32, path: &[PathHop], rng: &mut ChaCha20Rng| {
        build_forward(g, &BuildOptions::new(epoch), path, b"NOX failure vector", rng).expect("build")
    };
    // Valid inputs for node 0: first of three hops, and the exit of one.
    let three = build(&geometry, EPOCH, &path, &mut rng);
    let one = build(&geometry, EPOCH, &path[..1], &mut rng);
    let three_tag = HeaderView::parse(&geometry, &three).expect("view").replay_tag();

    let edit = |base: &[u8], f: &dyn Fn(&mut Vec<u8>)| {
        let mut p = base.to_vec();
        f(&mut p);
        p
    };
    let with_nonce = |base: &[u8], nonce: [u8; 8]| edit(base, &|p| p[geometry.nonce_range()].copy_from_slice(&nonce));
    let resolved = |base: &[u8], f: &dyn Fn(&mut Vec<u8>)| {
        let mut p = edit(base, f);
        resolve_nonce(&geometry, &mut p, DIFFICULTY);
        p
    };
    let set_alpha = |a: [u8; 32]| move |p: &mut Vec<u8>| p[8..40].copy_from_slice(&a);
    let mut field_p = [0xffu8; 32];
    field_p[0] = 0xed;
    field_p[31] = 0x7f;
    let mut one_le = [0u8; 32];
    one_le[0] = 1;
    let mut alpha_top_bit: [u8; 32] = three[8..40].try_into().expect("32");
    alpha_top_bit[31] |= 0x80;
    let block = |command: u8, f: &dyn Fn(&mut [u8; 64])| {
        let mut b = [0u8; 64];
        b[0] = command;
        b[4..8].copy_from_slice(&1000u32.to_be_bytes());
        f(&mut b);
        b
    };
    let reblock = |base: &[u8], b: [u8; 64]| {
        let mut p = with_routing_block(&geometry, &node.key, base, b);
        resolve_nonce(&geometry, &mut p, DIFFICULTY);
        p
    };
    // An exit body that decrypts to the zero prefix but has no 0x80 marker.
    let bad_padding = {
        let mut p = one.clone();
        let (_, _, pi, _) = {
            let k = hop_keys(&geometry, &node.key, &p);
            (k.rho, k.mu, k.pi, k.b)
        };
        let body = &mut p[geometry.header_len()..];
        body.fill(0);
        body[16..26].copy_from_slice(b"no marker!");
        internals::body_encrypt(&pi, body);
        p
    };
    let flip_body = |p: &mut Vec<u8>| p[geometry.header_len() + 100] ^= 0x01;
    let other_geometry = Geometry::new(2048, 5).expect("geometry");
    let shorter_geometry = Geometry::new(1024, 3).expect("geometry");

    let cases: Vec<(&str, Vec<u8>, Vec<ReplayTag>, &str)> = vec![
        ("valid: forward at the first of three hops", three.clone(), vec![], "Forward"),
        ("valid: deliver at the exit of a one-hop path", one.clone(), vec![], "Deliver"),
        ("one byte short", three[..2047].to_vec(), vec![], "WrongLength"),
        ("one byte long", edit(&three, &|p| p.push(0)), vec![], "WrongLength"),
        (
            "built for geometry (2048, 5): same length, other tag",
            build(&other_geometry, EPOCH, &path, &mut rng),
            vec![],
            "WrongGeometry",
        ),
        (
            "built for geometry (1024, 3): length checked before tag",
            build(&shorter_geometry, EPOCH, &path, &mut rng),
            vec![],
            "WrongLength",
        ),
        ("built for key epoch E + 1", build(&geometry, EPOCH + 1, &path, &mut rng), vec![], "UnknownEpoch"),
        (
            "wrong tag and unknown epoch: tag first",
            edit(&three, &|p| {
                p[0] ^= 0xff;
                p[7] ^= 1;
            }),
            vec![],
            "WrongGeometry",
        ),
        ("replay: tag already recorded", three.clone(), vec![three_tag], "Replay"),
        (
            "replay with a new, failing nonce: replay before PoW",
            with_nonce(&three, failing_nonce(&geometry, &three, DIFFICULTY)),
            vec![three_tag],
            "Replay",
        ),
        (
            "nonce below the difficulty",
            with_nonce(&three, failing_nonce(&geometry, &three, DIFFICULTY)),
            vec![],
            "InsufficientWork",
        ),
        (
            "unknown epoch and failing nonce: epoch before PoW",
            edit(&three, &|p| {
                p[7] ^= 1;
                let n = failing_nonce(&geometry, p, DIFFICULTY);
                p[geometry.nonce_range()].copy_from_slice(&n);
            }),
            vec![],
            "UnknownEpoch",
        ),
        (
            "α is the identity (canonical, refused)",
            resolved(&three, &set_alpha([0u8; 32])),
            vec![],
            "InvalidEphemeralKey",
        ),
        (
            "α encodes s = p (non-canonical field element)",
            resolved(&three, &set_alpha(field_p)),
            vec![],
            "InvalidEphemeralKey",
        ),
        ("α encodes s = 1 (negative s)", resolved(&three, &set_alpha(one_le)), vec![], "InvalidEphemeralKey"),
        (
            "α with bit 255 set (non-canonical)",
            resolved(&three, &set_alpha(alpha_top_bit)),
            vec![],
            "InvalidEphemeralKey",
        ),
        (
            "α invalid and nonce failing: PoW before α",
            edit(&three, &|p| {
                p[8..40].fill(0);
                let n = failing_nonce(&geometry, p, DIFFICULTY);
                p[geometry.nonce_range()].copy_from_slice(&n);
            }),
            vec![],
            "InsufficientWork",
        ),
        ("one bit of γ flipped", resolved(&three, &|p| p[geometry.mac_range().start] ^= 0x01), vec![], "MacMismatch"),
        (
            "one bit of β flipped",
            resolved(&three, &|p| p[geometry.routing_range().start + 70] ^= 0x80),
            vec![],
            "MacMismatch",
        ),
        (
            "key epoch field changed (MAC covers the prefix)",
            resolved(&build(&geometry, EPOCH + 1, &path, &mut rng), &|p| p[4..8].copy_from_slice(&EPOCH.to_be_bytes())),
            vec![],
            "MacMismatch",
        ),
        (
            "built for another node's key",
            build(&geometry, EPOCH, &[path[1].clone(), path[2].clone(), path[0].clone()], &mut rng),
            vec![],
            "MacMismatch",
        ),
        ("routing command 0x7f (valid MAC)", reblock(&three, block(0x7f, &|_| {})), vec![], "UnknownCommand"),
        ("routing command 0x00 (valid MAC)", reblock(&three, block(0x00, &|_| {})), vec![], "UnknownCommand"),
        (
            "reserved bytes 1..4 nonzero, command 0x7f: reserved bytes first",
            reblock(&three, block(0x7f, &|b| b[2] = 1)),
            vec![],
            "MalformedRoutingBlock",
        ),
        (
            "Forward with reserved byte 3 nonzero",
            reblock(&three, block(0x01, &|b| b[3] = 1)),
            vec![],
            "MalformedRoutingBlock",
        ),
        (
            "Deliver with a nonzero node id byte",
            reblock(&one, block(0x02, &|b| b[20] = 1)),
            vec![],
            "MalformedRoutingBlock",
        ),
        (
            "DeliverReply with a nonzero byte in 56..64",
            reblock(&one, block(0x03, &|b| b[60] = 1)),
            vec![],
            "MalformedRoutingBlock",
        ),
        (
            "malformed block and corrupted body: block first",
            edit(&reblock(&one, block(0x02, &|b| b[20] = 1)), &flip_body),
            vec![],
            "MalformedRoutingBlock",
        ),
        ("body bit flipped, at the exit", edit(&one, &flip_body), vec![], "PayloadIntegrity"),
        ("body bit flipped, at a forwarding hop: not detected there", edit(&three, &flip_body), vec![], "Forward"),
        ("body with the zero prefix but no 0x80 marker, at the exit", bad_padding, vec![], "BadPadding"),
        (
            "built for geometry (2048, 3) with multiplicative blinding: same length and hops, other tag",
            build(&geometry.with_blinding(Blinding::Multiplicative), EPOCH, &path, &mut rng),
            vec![],
            "WrongGeometry",
        ),
    ];
    let cases: Vec<Value> = cases
        .into_iter()
        .map(|(name, input, seen, expected)| {
            let key = expected_field(&geometry, &node, &seen, &input, expected, name);
            let mut v = json!({
                "name": name,
                "input": hex::encode(&input),
                "seen_replay_tags": seen.iter().map(|t| hex::encode(t.0)).collect::<Vec<_>>(),
            });
            v[key] = json!(expected);
            v
        })
        .collect();
    json!({
        "geometry": geometry_json(&geometry),
        "node": {
            "secret_key": hex::encode(node.key.to_bytes()),
            "public_key": hex::encode(node.key.public_key().as_bytes()),
            "key_epoch": node.epoch,
            "pow_difficulty": node.difficulty,
        },
        "cases": cases,
    })
}
