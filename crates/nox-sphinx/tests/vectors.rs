//! Known-answer test vectors: `docs/spec/vectors/sphinx.json`.
//!
//! `generated_vectors_match_committed_file` rebuilds every vector from a
//! seeded RNG and compares with the committed file (set
//! `NOX_REGENERATE_VECTORS=1` to rewrite it after a deliberate format
//! change). `committed_vectors_verify` checks the committed bytes against
//! the implementation without the RNG: processing the committed packet with
//! the committed keys must give the committed headers, tags and payloads.
//!
//! The generator lives in `vectors_gen/` (the passing vectors) and `vectors_gen/failures.rs`
//! (the failure cases of docs/spec/sphinx.md §5.4; their reference ingest, shared with
//! `kem_vectors`, is `common::ingest`); this file holds
//! the tests and the decoders of the committed file.

use nox_sphinx::{
    Blinding, BuildOptions, Geometry, HeaderView, NodeId, PathHop, Processed, PublicKey, ReplayTag, SecretKey, Surb,
    bench_internals as internals, build_forward, build_surb, pow, process_packet,
};
mod common;
mod vectors_gen;

use common::RecordingRng;
use common::ingest::{FailureNode, check_committed, reference_ingest};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};
use vectors_gen::generate;

const EPOCH: u32 = 20_260_101;

fn vectors_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/sphinx.json")
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
        check_committed(&got, case, &case["name"].to_string());
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
