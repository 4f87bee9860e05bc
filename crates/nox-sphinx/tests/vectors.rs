//! Known-answer test vectors: `docs/spec/vectors/sphinx.json`.
//!
//! `generated_vectors_match_committed_file` rebuilds every vector from a
//! seeded RNG and compares with the committed file (set
//! `NOX_REGENERATE_VECTORS=1` to rewrite it after a deliberate format
//! change). `committed_vectors_verify` checks the committed bytes against
//! the implementation without the RNG: processing the committed packet with
//! the committed keys must give the committed headers, tags and payloads.

use nox_sphinx::{
    Blinding, BuildOptions, Delay, Geometry, HeaderView, NodeId, PathHop, Processed, PublicKey, SecretKey, Surb,
    build_forward, build_surb, pow, process_packet,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore, SeedableRng};
use serde_json::{Value, json};

const EPOCH: u32 = 20_260_101;

/// Logs every byte the construction draws, so a second implementation can
/// replay them in the documented order.
struct RecordingRng {
    inner: ChaCha20Rng,
    log: Vec<u8>,
}

impl RngCore for RecordingRng {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.inner.fill_bytes(dest);
        self.log.extend_from_slice(dest);
    }
}
impl CryptoRng for RecordingRng {}

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
    let path = keys
        .iter()
        .enumerate()
        .map(|(i, k)| PathHop {
            node: NodeId(*blake3::hash(&[i as u8]).as_bytes()),
            public_key: k.public_key(),
            delay: Delay(1000 * (i as u32 + 1)),
            pow_difficulty: difficulty,
        })
        .collect();
    (keys, path)
}

fn nodes_json(keys: &[SecretKey], path: &[PathHop]) -> Value {
    keys.iter()
        .zip(path)
        .map(|(k, p)| {
            json!({
                "id": hex::encode(p.node.0),
                "secret_key": hex::encode(k.to_bytes()),
                "public_key": hex::encode(p.public_key.to_bytes()),
                "delay_us": p.delay.0,
                "pow_difficulty": p.pow_difficulty,
            })
        })
        .collect()
}

/// Runs a packet through `keys`; returns per-hop headers, tags and the end.
fn trace(geometry: &Geometry, keys: &[SecretKey], packet: &mut [u8]) -> (Vec<Value>, Processed) {
    let mut hops = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let view = HeaderView::parse(geometry, packet).expect("view");
        let tag = view.replay_tag();
        hops.push(json!({
            "header": hex::encode(&packet[..geometry.header_len()]),
            "body_blake3": hex::encode(blake3::hash(&packet[geometry.header_len()..]).as_bytes()),
            "replay_tag": hex::encode(tag.0),
            "pow_work_bits": pow::work_bits(&tag, &view.pow_nonce()),
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
    json!({
        "name": name,
        "geometry": geometry_json(&geometry),
        "key_epoch": EPOCH,
        "nodes": nodes_json(&keys, &path),
        "payload": hex::encode(&payload),
        "rng_bytes": hex::encode(&rng.log),
        "packet": if small { hex::encode(&packet) } else { hex::encode(&packet[..geometry.header_len()]) },
        "packet_blake3": hex::encode(blake3::hash(&packet).as_bytes()),
        "hops": trace,
        "exit": { "delay_us": delay.0, "payload": hex::encode(&working[range]) },
    })
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
            forward_vector("forward_3_hops_default_geometry", Geometry::default(), 3, 13, 0),
        ],
        "surb": surb_vector(small(3), 21),
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
        let packet = unhex(&v["packet"]);
        if packet.len() != geometry.packet_len() {
            continue; // large-geometry vector: header only, checked by regeneration
        }
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
