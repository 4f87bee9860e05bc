//! Known-answer test vectors: `docs/spec/vectors/sphinx.json`.
//!
//! `generated_vectors_match_committed_file` rebuilds every vector from a
//! seeded RNG and compares with the committed file (set
//! `NOX_REGENERATE_VECTORS=1` to rewrite it after a deliberate format
//! change). `committed_vectors_verify` checks the committed bytes against
//! the implementation without the RNG: processing the committed packet with
//! the committed keys must give the committed headers, tags and payloads.

use nox_sphinx::{
    Blinding, BuildOptions, Geometry, HeaderView, NodeId, PathHop, Processed, PublicKey, ReplayTag, SecretKey,
    SphinxError, Surb, bench_internals as internals, build_forward, build_surb, pow, process_packet,
};
mod common;

use common::RecordingRng;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

const EPOCH: u32 = 20_260_101;

fn vectors_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/sphinx.json")
}

fn blinding_name(b: Blinding) -> &'static str {
    match b {
        Blinding::Additive => "additive",
        Blinding::Multiplicative => "multiplicative",
    }
}

fn geometry_json(g: &Geometry) -> Value {
    json!({
        "packet_len": g.packet_len(),
        "hops": g.hops(),
        "blinding": blinding_name(g.blinding()),
        "header_len": g.header_len(),
        "identifier": hex::encode(g.identifier()),
        "tag": hex::encode(g.tag()),
    })
}

fn make_nodes(count: usize, seed: u64, difficulty: u8) -> (Vec<SecretKey>, Vec<PathHop>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let keys: Vec<SecretKey> = (0..count).map(|_| SecretKey::generate(&mut rng)).collect();
    let path = common::vector_path(&keys, difficulty);
    (keys, path)
}

fn nodes_json(keys: &[SecretKey], path: &[PathHop]) -> Value {
    keys.iter()
        .zip(path)
        .map(|(k, p)| {
            json!({
                "id": hex::encode(p.node.0),
                "secret_key": hex::encode(k.to_bytes()),
                "public_key": hex::encode(p.public_key.as_bytes()),
                "delay_us": p.delay.0,
                "pow_difficulty": p.pow_difficulty,
            })
        })
        .collect()
}

/// What one hop derives from a packet (docs/spec/sphinx.md §4.1, §5.3 step 5),
/// computed with the crate's own key schedule and stream cipher.
struct HopDerived {
    shared: [u8; 32],
    rho: [u8; 16],
    mu: [u8; 32],
    pi: [u8; 16],
    b: [u8; 32],
    /// `(β ‖ 0^64) ⊕ S(ρ, R + 64)`: this hop's routing block, then the next β.
    unwrapped: Vec<u8>,
}

fn hop_keys(geometry: &Geometry, key: &SecretKey, packet: &[u8]) -> HopDerived {
    let alpha: [u8; 32] = packet[geometry.alpha_range()].try_into().expect("32");
    let point = internals::decode_alpha(&alpha).expect("valid α");
    let shared = internals::shared_secret(key, &point);
    let (rho, mu, pi, b) = internals::hop_key_schedule(&alpha, &shared);
    let mut unwrapped = packet[geometry.routing_range()].to_vec();
    unwrapped.extend_from_slice(&[0u8; 64]);
    internals::xor_keystream(&rho, &mut unwrapped);
    HopDerived { shared, rho, mu, pi, b, unwrapped }
}

/// Runs a packet through `keys`; returns per-hop headers, tags and the end.
fn trace(geometry: &Geometry, keys: &[SecretKey], packet: &mut [u8]) -> (Vec<Value>, Processed) {
    let mut hops = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let view = HeaderView::parse(geometry, packet).expect("view");
        let tag = view.replay_tag();
        let derived = hop_keys(geometry, key, packet);
        hops.push(json!({
            "header": hex::encode(&packet[..geometry.header_len()]),
            "body_blake3": hex::encode(blake3::hash(&packet[geometry.header_len()..]).as_bytes()),
            "replay_tag": hex::encode(tag.0),
            "pow_work_bits": pow::work_bits(&tag, &view.pow_nonce()),
            "shared_secret": hex::encode(derived.shared),
            "rho": hex::encode(derived.rho),
            "mu": hex::encode(derived.mu),
            "pi": hex::encode(derived.pi),
            "b": hex::encode(derived.b),
            "routing_block": hex::encode(&derived.unwrapped[..64]),
        }));
        let outcome = process_packet(geometry, key, packet).expect("process");
        if i + 1 == keys.len() {
            return (hops, outcome);
        }
    }
    unreachable!("empty path")
}

fn forward_vector(name: &str, geometry: Geometry, hops: usize, seed: u64, difficulty: u8) -> Value {
    let (keys, path) = make_nodes(hops, seed, difficulty);
    let payload: Vec<u8> = format!("NOX test vector {name}").into_bytes();
    let mut rng = RecordingRng { inner: ChaCha20Rng::seed_from_u64(seed + 1000), log: Vec::new() };
    let packet = build_forward(&geometry, &BuildOptions::new(EPOCH), &path, &payload, &mut rng).expect("build");
    let mut working = packet.clone();
    let (trace, end) = trace(&geometry, &keys, &mut working);
    let Processed::Deliver { payload: range, delay } = end else { panic!("not delivered") };
    assert_eq!(&working[range.clone()], &payload[..]);
    let small = geometry.packet_len() <= 4096;
    let mut vector = json!({
        "name": name,
        "geometry": geometry_json(&geometry),
        "key_epoch": EPOCH,
        "nodes": nodes_json(&keys, &path),
        "payload": hex::encode(&payload),
        "rng_bytes": hex::encode(&rng.log),
        "packet_blake3": hex::encode(blake3::hash(&packet).as_bytes()),
        "hops": trace,
        "exit": { "delay_us": delay.0, "payload": hex::encode(&working[range]) },
    });
    // Geometries up to 4 KiB (the default included) carry the whole packet;
    // the 32 KiB one carries its header only (its body follows from the
    // payload and the hops' π).
    let (field, bytes) =
        if small { ("packet", &packet[..]) } else { ("packet_header", &packet[..geometry.header_len()]) };
    vector[field] = json!(hex::encode(bytes));
    vector
}

fn surb_vector(geometry: Geometry, seed: u64) -> Value {
    let (keys, path) = make_nodes(3, seed, 4);
    let recipient = NodeId([0xC1; 32]);
    let mut rng = RecordingRng { inner: ChaCha20Rng::seed_from_u64(seed + 1000), log: Vec::new() };
    let (surb, recovery) = build_surb(&geometry, &BuildOptions::new(EPOCH), &path, recipient, &mut rng).expect("surb");
    let surb_bytes = surb.to_bytes();
    let reply = b"NOX test vector SURB reply".to_vec();
    let packet = surb.into_reply(&geometry, &reply).expect("reply");
    let mut working = packet.clone();
    let (trace, end) = trace(&geometry, &keys, &mut working);
    let Processed::Reply { surb_id, body, recipient: to, .. } = end else { panic!("no reply") };
    assert_eq!(to, recipient);
    let opened = recovery.open(&surb_id, &working[body.clone()]).expect("open");
    assert_eq!(opened, reply);
    json!({
        "name": "surb_round_trip_3_hops",
        "geometry": geometry_json(&geometry),
        "key_epoch": EPOCH,
        "nodes": nodes_json(&keys, &path),
        "recipient": hex::encode(recipient.0),
        "rng_bytes": hex::encode(&rng.log),
        "surb": hex::encode(&surb_bytes),
        "surb_id": hex::encode(surb_id.0),
        "reply": hex::encode(&reply),
        "reply_packet": hex::encode(&packet),
        "hops": trace,
        "delivered_body": hex::encode(&working[body]),
    })
}

/// The key schedule of one hop in isolation (docs/spec/sphinx.md §4.1): a node
/// key `x` and an `α`, the shared secret, the whole KDF output `okm` and its
/// split. `okm` is computed here from the spec's formula with the `blake3`
/// crate; the split must equal the crate's own key schedule.
fn key_schedule_vector(seed: u64) -> Value {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let key = SecretKey::generate(&mut rng);
    let alpha: [u8; 32] = SecretKey::generate(&mut rng).public_key().as_bytes().try_into().expect("32");
    let point = internals::decode_alpha(&alpha).expect("valid α");
    let shared = internals::shared_secret(&key, &point);
    let (rho, mu, pi, b) = internals::hop_key_schedule(&alpha, &shared);
    let mut okm = [0u8; 128];
    let mut hasher = blake3::Hasher::new_derive_key("NOX sphinx v1 hop key schedule");
    hasher.update(&alpha).update(&shared);
    hasher.finalize_xof().fill(&mut okm);
    assert_eq!(&okm[..16], &rho[..], "ρ = okm[0..16]");
    assert_eq!(&okm[16..48], &mu[..], "μ = okm[16..48]");
    assert_eq!(&okm[48..64], &pi[..], "π = okm[48..64]");
    let wide: [u8; 64] = okm[64..128].try_into().expect("64");
    assert_eq!(internals::Scalar::from_bytes_mod_order_wide(&wide).to_bytes(), b, "b = WideScalar(okm[64..128])");
    json!({
        "secret_key": hex::encode(key.to_bytes()),
        "alpha": hex::encode(alpha),
        "shared_secret": hex::encode(shared),
        "okm": hex::encode(okm),
        "rho": hex::encode(rho),
        "mu": hex::encode(mu),
        "pi": hex::encode(pi),
        "b_wide": hex::encode(wide),
        "b": hex::encode(b),
    })
}

fn generate() -> Value {
    let small = |hops| Geometry::new(2048, hops).expect("geometry");
    let tag = nox_sphinx::ReplayTag(*blake3::hash(b"pow vector").as_bytes());
    let nonce = pow::solve(&tag, 12, 1).expect("solve");
    json!({
        "description": "NOX Sphinx v1 known-answer vectors; see docs/spec/sphinx.md §9 for how to replay rng_bytes.",
        "regenerate": "NOX_REGENERATE_VECTORS=1 cargo test -p nox-sphinx --test vectors",
        "forward": [
            forward_vector("forward_1_hop", small(1), 1, 1, 0),
            forward_vector("forward_3_hops", small(3), 3, 3, 0),
            forward_vector("forward_5_hops", small(5), 5, 5, 0),
            forward_vector("forward_2_of_3_hops", small(3), 2, 7, 0),
            forward_vector("forward_3_hops_multiplicative", small(3).with_blinding(Blinding::Multiplicative), 3, 9, 0),
            forward_vector("forward_3_hops_pow8", small(3), 3, 11, 8),
            forward_vector("forward_3_hops_default_geometry", Geometry::default(), 3, 15, 0),
            forward_vector("forward_3_hops_32k_geometry", Geometry::new(32_768, 3).expect("geometry"), 3, 13, 0),
        ],
        "surb": surb_vector(small(3), 21),
        "key_schedule": key_schedule_vector(41),
        "failures": failure_vectors(),
        "pow": {
            "replay_tag": hex::encode(tag.0),
            "difficulty": 12,
            "nonce": hex::encode(nonce),
            "work_bits": pow::work_bits(&tag, &nonce),
        },
    })
}

#[test]
fn generated_vectors_match_committed_file() {
    let generated = serde_json::to_string_pretty(&generate()).expect("json") + "\n";
    let path = vectors_path();
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &generated).expect("write vectors");
    }
    let committed = std::fs::read_to_string(&path).expect("committed vectors (run with NOX_REGENERATE_VECTORS=1)");
    assert!(committed == generated, "docs/spec/vectors/sphinx.json differs from the implementation");
}

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("hex string")).expect("hex")
}

fn geometry_from(v: &Value) -> Geometry {
    let g = Geometry::new(v["packet_len"].as_u64().expect("len") as usize, v["hops"].as_u64().expect("hops") as usize)
        .expect("geometry");
    let g = if v["blinding"] == "multiplicative" { g.with_blinding(Blinding::Multiplicative) } else { g };
    assert_eq!(hex::encode(g.identifier()), v["identifier"].as_str().expect("id"));
    g
}

fn secret_keys(v: &Value) -> Vec<SecretKey> {
    v.as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            let key = SecretKey::from_bytes(&unhex(&n["secret_key"]).try_into().expect("32")).expect("key");
            let public: [u8; 32] = unhex(&n["public_key"]).try_into().expect("32");
            assert_eq!(key.public_key(), PublicKey::from_bytes(&public).expect("public"));
            key
        })
        .collect()
}

/// Replays a committed trace; returns the final outcome and buffer.
fn replay(geometry: &Geometry, keys: &[SecretKey], hops: &Value, mut packet: Vec<u8>) -> (Processed, Vec<u8>) {
    let hops = hops.as_array().expect("hops");
    let mut last = None;
    for (key, hop) in keys.iter().zip(hops) {
        assert_eq!(hex::encode(&packet[..geometry.header_len()]), hop["header"].as_str().expect("header"));
        let view = HeaderView::parse(geometry, &packet).expect("view");
        assert_eq!(hex::encode(view.replay_tag().0), hop["replay_tag"].as_str().expect("tag"));
        last = Some(process_packet(geometry, key, &mut packet).expect("process"));
    }
    (last.expect("at least one hop"), packet)
}

#[test]
fn committed_vectors_verify() {
    let text = std::fs::read_to_string(vectors_path()).expect("vectors");
    let all: Value = serde_json::from_str(&text).expect("json");
    for v in all["forward"].as_array().expect("forward") {
        let geometry = geometry_from(&v["geometry"]);
        let keys = secret_keys(&v["nodes"]);
        let Some(packet) = v.get("packet").map(unhex) else {
            continue; // 32 KiB geometry: header only, see committed_hop_keys_reproduce_the_packets
        };
        let (end, buffer) = replay(&geometry, &keys, &v["hops"], packet);
        let Processed::Deliver { payload, .. } = end else { panic!("{}: not delivered", v["name"]) };
        assert_eq!(hex::encode(&buffer[payload]), v["exit"]["payload"].as_str().expect("payload"));
    }
    let s = &all["surb"];
    let geometry = geometry_from(&s["geometry"]);
    let keys = secret_keys(&s["nodes"]);
    let surb = Surb::from_bytes(&geometry, &unhex(&s["surb"])).expect("surb");
    let reply_packet = surb.into_reply(&geometry, &unhex(&s["reply"])).expect("reply");
    assert_eq!(hex::encode(&reply_packet), s["reply_packet"].as_str().expect("packet"));
    let (end, buffer) = replay(&geometry, &keys, &s["hops"], reply_packet);
    let Processed::Reply { body, surb_id, .. } = end else { panic!("no reply") };
    assert_eq!(hex::encode(surb_id.0), s["surb_id"].as_str().expect("id"));
    assert_eq!(hex::encode(&buffer[body]), s["delivered_body"].as_str().expect("body"));
    let p = &all["pow"];
    let tag = nox_sphinx::ReplayTag(unhex(&p["replay_tag"]).try_into().expect("32"));
    let nonce: [u8; 8] = unhex(&p["nonce"]).try_into().expect("8");
    assert!(pow::work_bits(&tag, &nonce) >= p["difficulty"].as_u64().expect("d") as u8);
}

// ---------------------------------------------------------------------------
// Failure cases (docs/spec/sphinx.md §5.4): one node, one input each, and the
// error the ingest order of §5.4 reports.

/// The node every failure case is given to.
struct FailureNode {
    key: SecretKey,
    epoch: u32,
    difficulty: u8,
}

/// Ingest and processing in the order of docs/spec/sphinx.md §5.4, on the
/// public API; returns the spec's error name or the outcome.
fn reference_ingest(
    geometry: &Geometry,
    node: &FailureNode,
    seen: &[ReplayTag],
    input: &[u8],
) -> Result<String, String> {
    let name = |e: SphinxError| -> String {
        match e {
            SphinxError::WrongLength { .. } => "WrongLength".into(),
            SphinxError::WrongGeometry { .. } => "WrongGeometry".into(),
            SphinxError::InvalidEphemeralKey => "InvalidEphemeralKey".into(),
            SphinxError::MacMismatch => "MacMismatch".into(),
            SphinxError::UnknownCommand(_) => "UnknownCommand".into(),
            SphinxError::MalformedRoutingBlock => "MalformedRoutingBlock".into(),
            SphinxError::PayloadIntegrity => "PayloadIntegrity".into(),
            SphinxError::BadPadding => "BadPadding".into(),
            SphinxError::InsufficientWork { .. } => "InsufficientWork".into(),
            other => format!("unexpected {other:?}"),
        }
    };
    let view = HeaderView::parse(geometry, input).map_err(name)?;
    if view.key_epoch() != node.epoch {
        return Err("UnknownEpoch".into());
    }
    let tag = view.replay_tag();
    if seen.contains(&tag) {
        return Err("Replay".into());
    }
    view.check_work(&tag, node.difficulty).map_err(name)?;
    let mut buffer = input.to_vec();
    match process_packet(geometry, &node.key, &mut buffer).map_err(name)? {
        Processed::Forward { .. } => Ok("Forward".into()),
        Processed::Deliver { .. } => Ok("Deliver".into()),
        Processed::Reply { .. } => Ok("Reply".into()),
    }
}

/// Re-solves the nonce of a modified header so the PoW check passes again.
fn resolve_nonce(geometry: &Geometry, packet: &mut [u8], difficulty: u8) {
    let tag = HeaderView::parse(geometry, packet).expect("view").replay_tag();
    let nonce = pow::solve(&tag, difficulty, 1).expect("solve");
    packet[geometry.nonce_range()].copy_from_slice(&nonce);
}

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

fn failure_vectors() -> Value {
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
            let got = match reference_ingest(&geometry, &node, &seen, &input) {
                Ok(outcome) => json!({ "outcome": outcome }),
                Err(error) => json!({ "error": error }),
            };
            let key = if got.get("error").is_some() { "error" } else { "outcome" };
            assert_eq!(got[key], expected, "{name}");
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

#[test]
fn committed_failure_vectors_give_their_errors() {
    let text = std::fs::read_to_string(vectors_path()).expect("vectors");
    let all: Value = serde_json::from_str(&text).expect("json");
    let f = &all["failures"];
    let geometry = geometry_from(&f["geometry"]);
    let key = SecretKey::from_bytes(&unhex(&f["node"]["secret_key"]).try_into().expect("32")).expect("key");
    let node = FailureNode {
        key,
        epoch: f["node"]["key_epoch"].as_u64().expect("epoch") as u32,
        difficulty: f["node"]["pow_difficulty"].as_u64().expect("d") as u8,
    };
    let cases = f["cases"].as_array().expect("cases");
    assert!(cases.len() >= 25);
    for case in cases {
        let seen: Vec<ReplayTag> = case["seen_replay_tags"]
            .as_array()
            .expect("tags")
            .iter()
            .map(|t| ReplayTag(unhex(t).try_into().expect("32")))
            .collect();
        let got = reference_ingest(&geometry, &node, &seen, &unhex(&case["input"]));
        match (&got, case.get("error")) {
            (Err(e), Some(want)) => assert_eq!(e, want.as_str().expect("name"), "{}", case["name"]),
            (Ok(o), None) => assert_eq!(o, case["outcome"].as_str().expect("outcome"), "{}", case["name"]),
            _ => panic!("{}: got {got:?}", case["name"]),
        }
    }
}

#[test]
fn committed_hop_keys_reproduce_the_packets() {
    // For every vector: the committed ρ, μ, π and b recompute each hop's
    // MAC, routing block, next α and (32 KiB geometry) the whole body.
    let text = std::fs::read_to_string(vectors_path()).expect("vectors");
    let all: Value = serde_json::from_str(&text).expect("json");
    for v in all["forward"].as_array().expect("forward") {
        let geometry = geometry_from(&v["geometry"]);
        let hops = v["hops"].as_array().expect("hops");
        for (i, hop) in hops.iter().enumerate() {
            let header = unhex(&hop["header"]);
            let mu: [u8; 32] = unhex(&hop["mu"]).try_into().expect("32");
            let rho: [u8; 16] = unhex(&hop["rho"]).try_into().expect("16");
            let mac = internals::header_mac(&mu, &header[..8], &header[geometry.routing_range()]);
            assert_eq!(&mac[..], &header[geometry.mac_range()], "{} hop {i}: γ", v["name"]);
            let mut unwrapped = header[geometry.routing_range()].to_vec();
            unwrapped.extend_from_slice(&[0u8; 64]);
            internals::xor_keystream(&rho, &mut unwrapped);
            assert_eq!(hex::encode(&unwrapped[..64]), hop["routing_block"].as_str().expect("block"));
            if let Some(next) = hops.get(i + 1) {
                let next_header = unhex(&next["header"]);
                assert_eq!(&unwrapped[64..], &next_header[geometry.routing_range()], "{} hop {i}: next β", v["name"]);
                let alpha = internals::decode_alpha(&header[8..40].try_into().expect("32")).expect("α");
                let b: [u8; 32] = unhex(&hop["b"]).try_into().expect("32");
                let b = Option::<internals::Scalar>::from(internals::Scalar::from_canonical_bytes(b)).expect("b");
                let next_alpha = match geometry.blinding() {
                    Blinding::Additive => internals::blind_additive(&alpha, &b),
                    Blinding::Multiplicative => internals::blind_multiplicative(&alpha, &b),
                };
                assert_eq!(&next_alpha[..], &next_header[8..40], "{} hop {i}: α'", v["name"]);
            }
        }
        if v.get("packet_header").is_some() {
            // Body: encode the payload (§6.2) and apply E_{π_0}(… E_{π_{n−1}}).
            let mut packet = unhex(&v["packet_header"]);
            let mut body = vec![0u8; geometry.body_len()];
            let payload = unhex(&v["payload"]);
            body[16..16 + payload.len()].copy_from_slice(&payload);
            body[16 + payload.len()] = 0x80;
            for hop in hops.iter().rev() {
                internals::body_encrypt(&unhex(&hop["pi"]).try_into().expect("16"), &mut body);
            }
            packet.extend_from_slice(&body);
            assert_eq!(hex::encode(blake3::hash(&packet).as_bytes()), v["packet_blake3"].as_str().expect("hash"));
            let keys = secret_keys(&v["nodes"]);
            let (end, buffer) = replay(&geometry, &keys, &v["hops"], packet);
            let Processed::Deliver { payload: range, .. } = end else { panic!("not delivered") };
            assert_eq!(buffer[range], payload[..]);
        }
    }
}

#[test]
fn committed_key_schedule_vector_verifies() {
    // The committed x and α give the committed s, ρ, μ, π and b through the
    // crate's key schedule, and those are the slices of the committed okm.
    let text = std::fs::read_to_string(vectors_path()).expect("vectors");
    let all: Value = serde_json::from_str(&text).expect("json");
    let v = &all["key_schedule"];
    let key = SecretKey::from_bytes(&unhex(&v["secret_key"]).try_into().expect("32")).expect("key");
    let alpha: [u8; 32] = unhex(&v["alpha"]).try_into().expect("32");
    let point = internals::decode_alpha(&alpha).expect("α");
    let shared = internals::shared_secret(&key, &point);
    assert_eq!(hex::encode(shared), v["shared_secret"].as_str().expect("s"));
    let (rho, mu, pi, b) = internals::hop_key_schedule(&alpha, &shared);
    let okm = unhex(&v["okm"]);
    assert_eq!(okm.len(), 128);
    assert_eq!(hex::encode(rho), v["rho"].as_str().expect("rho"));
    assert_eq!(&okm[..16], &rho[..]);
    assert_eq!(hex::encode(mu), v["mu"].as_str().expect("mu"));
    assert_eq!(&okm[16..48], &mu[..]);
    assert_eq!(hex::encode(pi), v["pi"].as_str().expect("pi"));
    assert_eq!(&okm[48..64], &pi[..]);
    assert_eq!(hex::encode(&okm[64..128]), v["b_wide"].as_str().expect("b_wide"));
    assert_eq!(hex::encode(b), v["b"].as_str().expect("b"));
}
