//! Known-answer vectors for the KEM geometries:
//! `docs/spec/vectors/sphinx-kem.json` (docs/spec/sphinx.md §13.5).
//!
//! For each KEM scheme, one 3-hop forward packet and one SURB reply on a
//! 4,096-byte geometry, with the node seeds, every RNG byte the builder drew,
//! the whole first packet, and per hop the ciphertext ε, the shared secret,
//! the key schedule's ρ and μ, the decrypted routing block and the replay
//! tag. `generated_kem_vectors_match_committed_file` rebuilds them
//! (`NOX_REGENERATE_VECTORS=1` rewrites the file after a deliberate change);
//! `committed_kem_vectors_verify` replays the committed bytes with keys
//! restored from the committed seeds, without the RNG.

use nox_sphinx::{
    BuildOptions, Geometry, HeaderView, NodeId, PathHop, Processed, Scheme, SecretKey, Surb,
    bench_internals as internals, build_forward, build_surb, process_packet,
};
mod common;

use common::RecordingRng;
use common::ingest::{FailureNode, check_committed, expected_field, reference_ingest, resolve_nonce};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

const EPOCH: u32 = 20_261_125;
const PACKET_LEN: usize = 4096;
const KEM_SCHEMES: [Scheme; 3] = [Scheme::X25519Kem, Scheme::MlKem768, Scheme::XWing];

fn vectors_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/sphinx-kem.json")
}

fn nodes(scheme: Scheme, seed: u8) -> (Vec<SecretKey>, Vec<PathHop>) {
    let keys: Vec<SecretKey> = (0..3u8)
        .map(|i| SecretKey::from_seed(scheme, blake3::hash(&[seed, i]).as_bytes()).expect("every seed is a KEM key"))
        .collect();
    let path = common::vector_path(&keys, 4);
    (keys, path)
}

fn trace(geometry: &Geometry, keys: &[SecretKey], packet: &mut [u8]) -> (Vec<Value>, Processed) {
    let mut hops = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let view = HeaderView::parse(geometry, packet).expect("view");
        let ciphertext = packet[geometry.alpha_range()].to_vec();
        let shared = internals::decapsulate(key, &ciphertext).expect("decapsulate");
        let (rho, mu, _, _) = internals::hop_key_schedule(&ciphertext, &shared);
        let mut unwrapped = packet[geometry.routing_range()].to_vec();
        internals::xor_keystream(&rho, &mut unwrapped);
        hops.push(json!({
            "header_blake3": hex::encode(blake3::hash(&packet[..geometry.header_len()]).as_bytes()),
            "body_blake3": hex::encode(blake3::hash(&packet[geometry.header_len()..]).as_bytes()),
            "ciphertext": hex::encode(&ciphertext),
            "shared_secret": hex::encode(shared),
            "rho": hex::encode(rho),
            "mu": hex::encode(mu),
            "routing_block": hex::encode(&unwrapped[..64]),
            "replay_tag": hex::encode(view.replay_tag().0),
        }));
        let outcome = process_packet(geometry, key, packet).expect("process");
        if i + 1 == keys.len() {
            return (hops, outcome);
        }
    }
    unreachable!("empty path")
}

fn scheme_vector(scheme: Scheme, seed: u8) -> Value {
    let geometry = Geometry::with_scheme(PACKET_LEN, 3, scheme).expect("geometry");
    let (keys, path) = nodes(scheme, seed);

    let payload = format!("NOX KEM vector {scheme}").into_bytes();
    let mut rng = RecordingRng { inner: ChaCha20Rng::seed_from_u64(u64::from(seed)), log: Vec::new() };
    let packet = build_forward(&geometry, &BuildOptions::new(EPOCH), &path, &payload, &mut rng).expect("build");
    let mut working = packet.clone();
    let (hops, end) = trace(&geometry, &keys, &mut working);
    let Processed::Deliver { payload: range, .. } = end else { panic!("no delivery") };
    assert_eq!(working[range], payload[..]);

    let recipient = NodeId([0xC1; 32]);
    let mut surb_rng = RecordingRng { inner: ChaCha20Rng::seed_from_u64(u64::from(seed) + 1000), log: Vec::new() };
    let (surb, recovery) =
        build_surb(&geometry, &BuildOptions::new(EPOCH), &path, recipient, &mut surb_rng).expect("surb");
    let surb_bytes = surb.to_bytes();
    let reply = format!("NOX KEM vector {scheme} SURB reply").into_bytes();
    let reply_packet = surb.into_reply(&geometry, &reply).expect("reply");
    let mut reply_working = reply_packet.clone();
    let (reply_hops, end) = trace(&geometry, &keys, &mut reply_working);
    let Processed::Reply { surb_id, body, .. } = end else { panic!("no reply") };
    assert_eq!(recovery.open(&surb_id, &reply_working[body.clone()]).expect("open"), reply);

    json!({
        "scheme": scheme.name(),
        "geometry": {
            "packet_len": geometry.packet_len(),
            "hops": geometry.hops(),
            "header_len": geometry.header_len(),
            "identifier": hex::encode(geometry.identifier()),
            "tag": hex::encode(geometry.tag()),
        },
        "key_epoch": EPOCH,
        "nodes": common::vector_nodes(&keys, &path, "seed"),
        "failures": kem_failures(scheme, &geometry, &keys[0], path[0].pow_difficulty, &packet),
        "forward": {
            "payload": hex::encode(&payload),
            "rng_bytes": hex::encode(&rng.log),
            "packet": hex::encode(&packet),
            "hops": hops,
        },
        "surb": {
            "recipient": hex::encode(recipient.0),
            "rng_bytes": hex::encode(&surb_rng.log),
            "surb_blake3": hex::encode(blake3::hash(&surb_bytes).as_bytes()),
            "surb_id": hex::encode(surb_id.0),
            "reply": hex::encode(&reply),
            "reply_packet_blake3": hex::encode(blake3::hash(&reply_packet).as_bytes()),
            "hops": reply_hops,
            "delivered_body_blake3": hex::encode(blake3::hash(&reply_working[body]).as_bytes()),
        },
    })
}

/// The node the KEM failure cases are given to (docs/spec/sphinx.md §5.4 on a KEM geometry,
/// §13.4): it holds `key` for `EPOCH` only, asks `difficulty` and has recorded no replay tag.
fn kem_node(key: &SecretKey, difficulty: u8) -> FailureNode {
    FailureNode { key: key.clone(), epoch: EPOCH, difficulty }
}

/// Failure cases on a KEM geometry: inputs for the first hop of the forward vector and the
/// result of §5.4. A modified header gets a nonce re-solved by the §7 search, so only the
/// check the case is about fails.
fn kem_failures(scheme: Scheme, geometry: &Geometry, key: &SecretKey, difficulty: u8, packet: &[u8]) -> Value {
    let ct = geometry.alpha_range();
    let edit = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut p = packet.to_vec();
        f(&mut p);
        resolve_nonce(geometry, &mut p, difficulty);
        p
    };
    let classical_tag = Geometry::new(PACKET_LEN, 3).expect("geometry").tag();
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("valid: forward at the first hop", packet.to_vec(), "Forward"),
        ("one byte short", packet[..packet.len() - 1].to_vec(), "WrongLength"),
        (
            "the tag of the classical (4096, 3) geometry: same length, other tag",
            {
                let mut p = packet.to_vec();
                p[..4].copy_from_slice(&classical_tag);
                p
            },
            "WrongGeometry",
        ),
        ("one bit of ε flipped", edit(&|p| p[ct.start + 5] ^= 0x01), "MacMismatch"),
    ];
    if scheme == Scheme::X25519Kem {
        cases.push((
            "ε = 0, a low-order point: all-zero shared secret, refused",
            edit(&|p| p[ct.clone()].fill(0)),
            "InvalidEphemeralKey",
        ));
        cases.push((
            "ε with bit 255 set: X25519 ignores it, the key schedule does not",
            edit(&|p| p[ct.end - 1] ^= 0x80),
            "MacMismatch",
        ));
    } else {
        cases.push((
            "ε all zero: implicit rejection gives a pseudorandom secret, then the MAC fails",
            edit(&|p| p[ct.clone()].fill(0)),
            "MacMismatch",
        ));
    }
    let node = kem_node(key, difficulty);
    let cases: Vec<Value> = cases
        .into_iter()
        .map(|(name, input, expected)| {
            let field = expected_field(geometry, &node, &[], &input, expected, &format!("{scheme}: {name}"));
            let mut v = json!({ "name": name, "input": hex::encode(&input) });
            v[field] = json!(expected);
            v
        })
        .collect();
    json!({ "node": 0, "pow_difficulty": difficulty, "cases": cases })
}

fn generate() -> Value {
    json!({
        "description": "NOX Sphinx KEM geometries: known-answer vectors; see docs/spec/sphinx.md §13.5.",
        "regenerate": "NOX_REGENERATE_VECTORS=1 cargo test -p nox-sphinx --test kem_vectors",
        "schemes": KEM_SCHEMES.iter().enumerate().map(|(i, s)| scheme_vector(*s, 40 + i as u8)).collect::<Vec<_>>(),
    })
}

#[test]
fn generated_kem_vectors_match_committed_file() {
    let generated = serde_json::to_string_pretty(&generate()).expect("json") + "\n";
    let path = vectors_path();
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some() {
        std::fs::write(&path, &generated).expect("write vectors");
    }
    let committed = std::fs::read_to_string(&path).expect("committed vectors (run with NOX_REGENERATE_VECTORS=1)");
    assert!(committed == generated, "docs/spec/vectors/sphinx-kem.json differs from the implementation");
}

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("hex string")).expect("hex")
}

#[test]
fn committed_kem_vectors_verify() {
    let text = std::fs::read_to_string(vectors_path()).expect("committed vectors");
    let file: Value = serde_json::from_str(&text).expect("json");
    let schemes = file["schemes"].as_array().expect("schemes");
    assert_eq!(schemes.len(), KEM_SCHEMES.len());
    for vector in schemes {
        let scheme = Scheme::from_name(vector["scheme"].as_str().expect("name")).expect("known scheme");
        let geometry = Geometry::with_scheme(PACKET_LEN, 3, scheme).expect("geometry");
        assert_eq!(unhex(&vector["geometry"]["identifier"]), geometry.identifier());
        let keys: Vec<SecretKey> = vector["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .map(|n| {
                let seed: [u8; 32] = unhex(&n["seed"]).try_into().expect("32-byte seed");
                let key = SecretKey::from_seed(scheme, &seed).expect("key");
                assert_eq!(key.public_key().as_bytes(), &unhex(&n["public_key"])[..]);
                key
            })
            .collect();
        let mut packet = unhex(&vector["forward"]["packet"]);
        let hops = vector["forward"]["hops"].as_array().expect("hops");
        for (key, hop) in keys.iter().zip(hops) {
            assert_eq!(blake3::hash(&packet[..geometry.header_len()]).as_bytes()[..], unhex(&hop["header_blake3"])[..]);
            assert_eq!(packet[geometry.alpha_range()], unhex(&hop["ciphertext"])[..]);
            let shared = internals::decapsulate(key, &packet[geometry.alpha_range()]).expect("decapsulate");
            assert_eq!(shared.to_vec(), unhex(&hop["shared_secret"]));
            let tag = HeaderView::parse(&geometry, &packet).expect("view").replay_tag();
            assert_eq!(tag.0.to_vec(), unhex(&hop["replay_tag"]));
            process_packet(&geometry, key, &mut packet).expect("process");
        }
        let payload = unhex(&vector["forward"]["payload"]);
        let start = geometry.header_len() + nox_sphinx::INTEGRITY_LEN;
        assert_eq!(packet[start..start + payload.len()], payload[..]);
        assert_eq!(Surb::encoded_len(&geometry), 64 + geometry.header_len());
    }
}

#[test]
fn committed_kem_failure_vectors_give_their_errors() {
    let text = std::fs::read_to_string(vectors_path()).expect("committed vectors");
    let file: Value = serde_json::from_str(&text).expect("json");
    for vector in file["schemes"].as_array().expect("schemes") {
        let scheme = Scheme::from_name(vector["scheme"].as_str().expect("name")).expect("known scheme");
        let geometry = Geometry::with_scheme(PACKET_LEN, 3, scheme).expect("geometry");
        let f = &vector["failures"];
        let node = &vector["nodes"][f["node"].as_u64().expect("node") as usize];
        let seed: [u8; 32] = unhex(&node["seed"]).try_into().expect("32-byte seed");
        let key = SecretKey::from_seed(scheme, &seed).expect("key");
        let node = kem_node(&key, f["pow_difficulty"].as_u64().expect("difficulty") as u8);
        let cases = f["cases"].as_array().expect("cases");
        assert!(cases.len() >= 5);
        for case in cases {
            let got = reference_ingest(&geometry, &node, &[], &unhex(&case["input"]));
            check_committed(&got, case, &format!("{scheme}: {}", case["name"]));
        }
    }
}
