//! Known-answer vectors: `docs/spec/vectors/topology.json`.
//!
//! `generated_vectors_match_committed_file` rebuilds the vectors from seeded keys and compares
//! them with the committed file (`NOX_REGENERATE_VECTORS=1` rewrites it after a deliberate
//! format change). `committed_vectors_verify` checks the committed bytes without the generator:
//! an encoder written here from the spec text (docs/spec/topology.md §3) must reproduce the
//! committed encodings, and the committed document must verify and give the committed
//! fingerprint.

mod common;

use common::*;
use nox_sphinx::{PublicKey, SecretKey};
use nox_topology::{LinkPublicKey, SigningKey, TopologyDocument, VerifyConfig, VerifyingKey};
use serde_json::{Value, json};

fn vectors_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/topology.json")
}

fn generate() -> Value {
    let mut net = network(2026, 2);
    // One IPv6 node, to cover both address encodings.
    let n = &mut net.nodes[0];
    let mut d = n.signed.descriptor.clone();
    d.address = "[2001:db8::7]:9443".parse().unwrap();
    n.signed = d.sign(&n.identity).unwrap();
    // One node advertising a WebSocket client endpoint (the optional trailing field); the
    // others encode as they did before the field existed.
    let n = &mut net.nodes[1];
    let d = n.signed.descriptor.clone().with_websocket(Some("127.0.0.1:9443".parse().unwrap()));
    n.signed = d.sign(&n.identity).unwrap();
    let topo = net.verified();
    let doc = topo.document();
    let doc_json: Value = serde_json::from_str(&doc.to_json().unwrap()).unwrap();
    let nodes: Vec<Value> = net
        .nodes
        .iter()
        .map(|n| {
            let d = &n.signed.descriptor;
            json!({
                "identity_secret": hex::encode(n.identity.to_bytes()),
                "identity_key": hex::encode(d.identity_key.as_bytes()),
                "node_id": hex::encode(n.signed.node_id().0),
                "layer": d.layer.0,
                "link_secret": hex::encode(n.link_secret),
                "link_key": hex::encode(d.link_key.to_bytes()),
                "sphinx_secrets": n.sphinx.iter().map(|(e, k)| json!({"epoch": e, "secret": hex::encode(k.to_bytes())})).collect::<Vec<_>>(),
                "descriptor_encoding": hex::encode(d.canonical_bytes()),
                "descriptor_message": hex::encode(d.signing_message()),
                "descriptor_signature": hex::encode(n.signed.signature.to_bytes()),
            })
        })
        .collect();
    let g = geometry();
    json!({
        "description": "NOX topology document v1 known-answer vectors (docs/spec/topology.md). Secrets are test-only.",
        "authority_secret": hex::encode(net.authority.to_bytes()),
        "authority_key": hex::encode(net.authority.verifying_key().as_bytes()),
        "geometry": {"packet_len": g.packet_len(), "hops": g.hops(), "identifier": hex::encode(g.identifier())},
        "verify_at": ISSUED + 1,
        "nodes": nodes,
        "document": doc_json,
        "body_encoding": hex::encode(doc.canonical_body()),
        "document_message": hex::encode(doc.signing_message()),
        "signature": hex::encode(doc.signature.to_bytes()),
        "fingerprint": hex::encode(topo.fingerprint().0),
    })
}

#[test]
fn generated_vectors_match_committed_file() {
    let generated = generate();
    let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some() {
        std::fs::write(vectors_path(), &text).unwrap();
    }
    let committed: Value = serde_json::from_str(&std::fs::read_to_string(vectors_path()).unwrap()).unwrap();
    assert_eq!(committed, generated, "vectors changed: rerun with NOX_REGENERATE_VECTORS=1 if deliberate");
}

fn h(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

fn a32(v: &Value) -> [u8; 32] {
    h(v).try_into().unwrap()
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

fn spec_address(out: &mut Vec<u8>, text: &Value) {
    match text.as_str().unwrap().parse::<std::net::SocketAddr>().unwrap() {
        std::net::SocketAddr::V4(a) => {
            out.push(4);
            out.extend(a.ip().octets());
            out.extend(a.port().to_le_bytes());
        }
        std::net::SocketAddr::V6(a) => {
            out.push(6);
            out.extend(a.ip().octets());
            out.extend(a.port().to_le_bytes());
        }
    }
}

/// docs/spec/topology.md §3.1, from the JSON fields.
fn spec_descriptor(n: &Value) -> Vec<u8> {
    let mut out = h(&n["identity_key"]);
    out.extend(h(&n["link_key"]));
    spec_address(&mut out, &n["address"]);
    out.push(num(&n["layer"]) as u8);
    out.push(num(&n["pow_difficulty"]) as u8);
    let keys = n["sphinx_keys"].as_array().unwrap();
    out.extend((keys.len() as u32).to_le_bytes());
    for k in keys {
        out.extend((num(&k["epoch"]) as u32).to_le_bytes());
        out.extend(h(&k["key"]));
    }
    // The optional WebSocket endpoint: `0x57 ‖ address` (`ws://`) or `0x53 ‖ address`
    // (`wss://`, JSON `"wss://ip:port"`), only when present.
    if let Some(w) = n["websocket"].as_str() {
        match w.strip_prefix("wss://") {
            Some(address) => {
                out.push(0x53);
                spec_address(&mut out, &Value::String(address.to_owned()));
            }
            None => {
                out.push(0x57);
                spec_address(&mut out, &n["websocket"]);
            }
        }
    }
    out
}

/// docs/spec/topology.md §3.2–3.3.
fn spec_body(d: &Value) -> Vec<u8> {
    let mut out = (num(&d["version"]) as u16).to_le_bytes().to_vec();
    out.extend(h(&d["geometry"]));
    let s = &d["schedule"];
    out.extend(num(&s["genesis_unix"]).to_le_bytes());
    out.extend(num(&s["epoch_length_secs"]).to_le_bytes());
    out.extend(num(&s["overlap_secs"]).to_le_bytes());
    out.extend((num(&s["publish_ahead"]) as u32).to_le_bytes());
    out.push(num(&d["layers"]) as u8);
    out.extend(num(&d["issued_at"]).to_le_bytes());
    let mut nodes: Vec<&Value> = d["nodes"].as_array().unwrap().iter().collect();
    nodes.sort_by_key(|n| h(&n["node_id"]));
    out.extend((nodes.len() as u32).to_le_bytes());
    for n in nodes {
        let enc = spec_descriptor(n);
        out.extend((enc.len() as u32).to_le_bytes());
        out.extend(enc);
        out.extend(h(&n["signature"]));
    }
    out
}

#[test]
fn committed_vectors_verify() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(vectors_path()).unwrap()).unwrap();
    let doc = &v["document"];

    // The spec's encoding, the signing message and the signature.
    let body = spec_body(doc);
    assert_eq!(body, h(&v["body_encoding"]));
    assert_eq!(blake3::derive_key("NOX topology v1 document", &body).to_vec(), h(&v["document_message"]));
    let authority = SigningKey::from_bytes(&a32(&v["authority_secret"]));
    assert_eq!(authority.verifying_key().as_bytes().to_vec(), h(&v["authority_key"]));
    let authority_key = VerifyingKey::from_bytes(&a32(&v["authority_key"])).unwrap();
    let sig = nox_topology::Signature::from_bytes(&h(&v["signature"]).try_into().unwrap());
    authority_key.verify_strict(&h(&v["document_message"]), &sig).unwrap();

    // Per node: keys from secrets, id, layer, descriptor encoding and self-signature.
    for (n, d) in v["nodes"].as_array().unwrap().iter().zip(doc["nodes"].as_array().unwrap()) {
        let identity = SigningKey::from_bytes(&a32(&n["identity_secret"]));
        assert_eq!(identity.verifying_key().as_bytes().to_vec(), h(&n["identity_key"]));
        let id = blake3::derive_key("NOX topology v1 node id", &h(&n["identity_key"]));
        assert_eq!(id.to_vec(), h(&n["node_id"]));
        let layer = u64::from_le_bytes(blake3::derive_key("NOX topology v1 layer", &id)[..8].try_into().unwrap()) % 3;
        assert_eq!(layer, num(&n["layer"]));
        assert_eq!(LinkPublicKey::from_secret(&a32(&n["link_secret"])).to_bytes().to_vec(), h(&n["link_key"]));
        for (s, k) in n["sphinx_secrets"].as_array().unwrap().iter().zip(d["sphinx_keys"].as_array().unwrap()) {
            let secret = SecretKey::from_bytes(&a32(&s["secret"])).unwrap();
            assert_eq!(secret.public_key(), PublicKey::from_bytes(&a32(&k["key"])).unwrap());
        }
        let enc = spec_descriptor(d);
        assert_eq!(enc, h(&n["descriptor_encoding"]));
        let msg = blake3::derive_key("NOX topology v1 descriptor", &enc);
        assert_eq!(msg.to_vec(), h(&n["descriptor_message"]));
        let sig = nox_topology::Signature::from_bytes(&h(&n["descriptor_signature"]).try_into().unwrap());
        identity.verifying_key().verify_strict(&msg, &sig).unwrap();
    }

    // §4: the fingerprint is over the parameters (the first 63 body bytes) and the sorted
    // descriptors, without issue time and signatures.
    let mut fp = blake3::Hasher::new_derive_key("NOX topology v1 fingerprint");
    fp.update(&body[..63]);
    let mut nodes: Vec<&Value> = doc["nodes"].as_array().unwrap().iter().collect();
    nodes.sort_by_key(|n| h(&n["node_id"]));
    fp.update(&(nodes.len() as u32).to_le_bytes());
    for n in nodes {
        let enc = spec_descriptor(n);
        fp.update(&(enc.len() as u32).to_le_bytes());
        fp.update(&enc);
    }
    assert_eq!(fp.finalize().as_bytes().to_vec(), h(&v["fingerprint"]));

    // The implementation agrees: the document verifies and gives the committed fingerprint.
    let parsed = TopologyDocument::from_json(doc.to_string().as_bytes()).unwrap();
    let verified = parsed.verify(&VerifyConfig::new(authority_key, geometry()), num(&v["verify_at"])).unwrap();
    assert_eq!(verified.fingerprint().0.to_vec(), h(&v["fingerprint"]));
    assert_eq!(parsed.canonical_body(), body);
}

/// The WebSocket endpoint is optional and backward compatible: a descriptor without it encodes
/// (so is signed and fingerprinted) byte for byte as before the field existed, and one with it
/// only appends `0x57 ‖ address`; verification refuses an endpoint that is not a dialable
/// address or that repeats the link address.
#[test]
fn the_websocket_endpoint_is_an_optional_trailing_field() {
    let mut net = network(2026, 2);
    let plain = net.nodes[2].signed.descriptor.clone();
    assert_eq!(plain.websocket, None);
    let with = plain.clone().with_websocket(Some("127.0.0.1:9443".parse().unwrap()));
    let (a, b) = (plain.canonical_bytes(), with.canonical_bytes());
    assert_eq!(&b[..a.len()], &a[..]);
    assert_eq!(&b[a.len()..], &[0x57, 4, 127, 0, 0, 1, 0xe3, 0x24]);
    // A signed descriptor carries it through JSON; without it the field is absent.
    let signed = with.clone().sign(&net.nodes[2].identity).unwrap();
    let json = signed.to_json().unwrap();
    assert!(json.contains("\"websocket\":\"127.0.0.1:9443\""));
    assert_eq!(nox_topology::SignedDescriptor::from_json(json.as_bytes()).unwrap(), signed);
    assert!(!net.nodes[3].signed.to_json().unwrap().contains("websocket"));
    // Verification: the endpoint must be dialable and not the link address.
    for bad in ["0.0.0.0:9443", "127.0.0.1:0", &plain.address.to_string()] {
        let n = &mut net.nodes[2];
        n.signed = plain.clone().with_websocket(Some(bad.parse().unwrap())).sign(&n.identity).unwrap();
        let doc = net.document(net.descriptors());
        let id = net.nodes[2].signed.node_id();
        let verified = doc.verify(&net.config(), ISSUED + 1);
        let accepted = matches!(verified, Ok(t) if t.nodes().iter().any(|x| x.id == id));
        assert!(!accepted, "{bad} accepted as a WebSocket endpoint");
    }
    let n = &mut net.nodes[2];
    n.signed = with.clone().sign(&n.identity).unwrap();
    assert!(net.verified().nodes().iter().any(|x| x.descriptor.websocket == with.websocket));
}

/// docs/spec/topology.md §3.2: a `wss://` endpoint (TLS) is the same trailing field under the
/// tag `0x53` (`S`): the flag is signed (a relay cannot strip TLS from a node's endpoint
/// without breaking its signature), a plain endpoint encodes as before, and JSON writes it as
/// `"wss://ip:port"`.
#[test]
fn a_wss_endpoint_is_signed_under_its_own_tag() {
    let net = network(2026, 2);
    let plain = net.nodes[2].signed.descriptor.clone();
    let ws = plain.clone().with_websocket(Some("127.0.0.1:9443".parse().unwrap()));
    let wss = ws.clone().with_websocket_tls(true);
    let (a, b) = (ws.canonical_bytes(), wss.canonical_bytes());
    assert_eq!(a.len(), b.len());
    assert_eq!(&b[..plain.canonical_bytes().len()], &plain.canonical_bytes()[..]);
    assert_eq!(&b[plain.canonical_bytes().len()..], &[0x53, 4, 127, 0, 0, 1, 0xe3, 0x24]);
    assert_ne!(ws.signing_message(), wss.signing_message());
    assert_eq!(wss.websocket_url().as_deref(), Some("wss://127.0.0.1:9443/"));
    assert_eq!(ws.websocket_url().as_deref(), Some("ws://127.0.0.1:9443/"));
    let signed = wss.clone().sign(&net.nodes[2].identity).unwrap();
    let json = signed.to_json().unwrap();
    assert!(json.contains("\"websocket\":\"wss://127.0.0.1:9443\""), "{json}");
    let back = nox_topology::SignedDescriptor::from_json(json.as_bytes()).unwrap();
    assert_eq!(back, signed);
    back.verify_signature().unwrap();
    // Stripping the scheme in transit (a downgrade to ws://) breaks the signature.
    let stripped = json.replace("wss://127.0.0.1:9443", "127.0.0.1:9443");
    let downgraded = nox_topology::SignedDescriptor::from_json(stripped.as_bytes()).unwrap();
    assert!(!downgraded.descriptor.websocket_tls);
    assert!(downgraded.verify_signature().is_err());
    // The encoding the spec describes, rebuilt from the JSON.
    let value: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(spec_descriptor(&value), wss.canonical_bytes());
}
