//! Verification accepts the valid document and refuses each kind of bad one with its own error.

mod common;

use core::time::Duration;

use common::*;
use nox_sphinx::{Geometry, SecretKey};
use nox_topology::{
    EpochKey, Layer, LinkPublicKey, NodeDescriptor, SigningKey, TopologyDocument, TopologyError, VerifyConfig,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn verify(net: &Net, doc: &TopologyDocument) -> Result<(), TopologyError> {
    doc.verify(&net.config(), ISSUED + 1).map(|_| ())
}

/// Re-signs node `i`'s descriptor after `edit`, with the node's own identity key.
fn edited(net: &Net, i: usize, edit: impl FnOnce(&mut NodeDescriptor)) -> nox_topology::SignedDescriptor {
    let mut d = net.nodes[i].signed.descriptor.clone();
    edit(&mut d);
    d.sign(&net.nodes[i].identity).unwrap()
}

#[test]
fn valid_document_verifies_and_survives_json() {
    let net = network(1, 2);
    let verified = net.verified();
    let json = verified.document().to_json().unwrap();
    let parsed = TopologyDocument::from_json(json.as_bytes()).unwrap();
    assert_eq!(&parsed, verified.document());
    let again = parsed.verify(&net.config(), ISSUED + 100).unwrap();
    assert_eq!(again.fingerprint(), verified.fingerprint());
    assert_eq!(again.nodes().len(), 6);
}

#[test]
fn node_order_in_json_does_not_matter() {
    let net = network(2, 2);
    let mut doc = net.verified().document().clone();
    let fingerprint = net.verified().fingerprint();
    doc.nodes.reverse();
    // Same canonical body, so the authority's signature still holds.
    assert_eq!(doc.verify(&net.config(), ISSUED).unwrap().fingerprint(), fingerprint);
}

#[test]
fn authority_signature_is_checked() {
    let net = network(3, 1);
    let doc = net.verified().document().clone();
    let other = VerifyConfig::new(SigningKey::from_bytes(&[7; 32]).verifying_key(), geometry());
    assert_eq!(doc.verify(&other, ISSUED).unwrap_err(), TopologyError::BadDocumentSignature);

    // Any change after signing breaks it, even one that is otherwise valid.
    let mut moved = doc.clone();
    moved.nodes[0].descriptor.pow_difficulty ^= 1;
    assert_eq!(verify(&net, &moved).unwrap_err(), TopologyError::BadDocumentSignature);
    let mut later = doc;
    later.issued_at += 1;
    assert_eq!(verify(&net, &later).unwrap_err(), TopologyError::BadDocumentSignature);
}

#[test]
fn directory_cannot_swap_a_nodes_keys() {
    let net = network(4, 1);
    let mut nodes = net.descriptors();
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    // The directory replaces node 0's Sphinx key with its own and signs the whole document.
    nodes[0].descriptor.sphinx_keys[0].key = SecretKey::generate(&mut rng).public_key();
    let doc = net.document(nodes);
    assert_eq!(verify(&net, &doc).unwrap_err(), TopologyError::BadDescriptorSignature(net.nodes[0].signed.node_id()));
    // A descriptor signed by another key is refused at signing time, too.
    let d = net.nodes[0].signed.descriptor.clone();
    assert_eq!(d.sign(&net.nodes[1].identity).unwrap_err(), TopologyError::SigningKeyMismatch);
}

#[test]
fn wrong_layer_is_rejected() {
    let net = network(5, 1);
    let mut nodes = net.descriptors();
    let computed = nodes[0].descriptor.layer;
    let claimed = Layer((computed.0 + 1) % 3);
    nodes[0] = edited(&net, 0, |d| d.layer = claimed);
    let err = verify(&net, &net.document(nodes)).unwrap_err();
    assert_eq!(err, TopologyError::WrongLayer { node: net.nodes[0].signed.node_id(), claimed, computed });
}

#[test]
fn duplicates_are_rejected() {
    let net = network(6, 2);
    let id = |i: usize| net.nodes[i].signed.node_id();

    let mut nodes = net.descriptors();
    nodes.push(nodes[0].clone());
    assert_eq!(verify(&net, &net.document(nodes)).unwrap_err(), TopologyError::DuplicateNodeId(id(0)));

    let mut nodes = net.descriptors();
    let address = nodes[0].descriptor.address;
    nodes[1] = edited(&net, 1, |d| d.address = address);
    assert!(matches!(verify(&net, &net.document(nodes)).unwrap_err(), TopologyError::DuplicateAddress(_)));

    let mut nodes = net.descriptors();
    let link = nodes[0].descriptor.link_key;
    nodes[1] = edited(&net, 1, |d| d.link_key = link);
    assert!(matches!(verify(&net, &net.document(nodes)).unwrap_err(), TopologyError::DuplicateLinkKey(_)));

    let mut nodes = net.descriptors();
    let key = nodes[0].descriptor.sphinx_keys[0].key.clone();
    nodes[1] = edited(&net, 1, |d| d.sphinx_keys[0].key = key);
    assert!(matches!(verify(&net, &net.document(nodes)).unwrap_err(), TopologyError::DuplicateSphinxKey(_)));

    // The same key for two epochs of one node defeats rotation.
    let mut nodes = net.descriptors();
    nodes[2] = edited(&net, 2, |d| d.sphinx_keys[1].key = d.sphinx_keys[0].key.clone());
    assert_eq!(verify(&net, &net.document(nodes)).unwrap_err(), TopologyError::DuplicateSphinxKey(id(2)));
}

#[test]
fn every_layer_needs_a_node() {
    let net = network(7, 1);
    let mut nodes = net.descriptors();
    let removed = nodes.remove(1).descriptor.layer;
    assert_eq!(verify(&net, &net.document(nodes)).unwrap_err(), TopologyError::EmptyLayer(removed));
    assert_eq!(verify(&net, &net.document(Vec::new())).unwrap_err(), TopologyError::NodeCount(0));
}

#[test]
fn geometry_and_layer_count_must_match() {
    let net = network(8, 1);
    let doc = net.verified().document().clone();
    let mut config = net.config();
    config.geometry = Geometry::new(4096, 3).unwrap();
    assert_eq!(doc.verify(&config, ISSUED).unwrap_err(), TopologyError::GeometryMismatch);

    let mut four = doc.clone();
    four.geometry = Geometry::new(2048, 4).unwrap().identifier();
    four.sign(&net.authority);
    config.geometry = Geometry::new(2048, 4).unwrap();
    assert_eq!(four.verify(&config, ISSUED).unwrap_err(), TopologyError::LayerCount { layers: 3, hops: 4 });
}

#[test]
fn freshness_is_checked_against_the_injected_time() {
    let net = network(9, 1);
    let doc = net.verified().document().clone();
    let config =
        VerifyConfig { max_age: Duration::from_secs(100), max_clock_skew: Duration::from_secs(5), ..net.config() };
    assert!(doc.verify(&config, ISSUED + 100).is_ok());
    assert_eq!(
        doc.verify(&config, ISSUED + 101).unwrap_err(),
        TopologyError::Expired { issued_at: ISSUED, now: ISSUED + 101 }
    );
    assert!(doc.verify(&config, ISSUED - 5).is_ok());
    assert_eq!(
        doc.verify(&config, ISSUED - 6).unwrap_err(),
        TopologyError::IssuedInFuture { issued_at: ISSUED, now: ISSUED - 6 }
    );
}

#[test]
fn unknown_version_is_rejected() {
    let net = network(10, 1);
    let mut doc = net.verified().document().clone();
    let json = doc.to_json().unwrap().replacen("\"version\": 1", "\"version\": 2", 1);
    assert_eq!(TopologyDocument::from_json(json.as_bytes()).unwrap_err(), TopologyError::UnsupportedVersion(2));
    doc.version = 2;
    doc.sign(&net.authority);
    assert_eq!(verify(&net, &doc).unwrap_err(), TopologyError::UnsupportedVersion(2));
}

#[test]
fn epoch_keys_must_cover_the_issue_epoch_in_order() {
    let net = network(11, 1);
    let id = net.nodes[0].signed.node_id();
    let mut nodes = net.descriptors();
    nodes[0] = edited(&net, 0, |d| {
        d.sphinx_keys.remove(0);
    });
    assert_eq!(
        verify(&net, &net.document(nodes)).unwrap_err(),
        TopologyError::MissingEpochKey { node: id, epoch: EPOCH }
    );

    let mut nodes = net.descriptors();
    nodes[0] = edited(&net, 0, |d| d.sphinx_keys.reverse());
    assert_eq!(verify(&net, &net.document(nodes)).unwrap_err(), TopologyError::EpochKeys(id));

    let mut nodes = net.descriptors();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    nodes[0] = edited(&net, 0, |d| {
        d.sphinx_keys =
            (0..17).map(|e| EpochKey { epoch: EPOCH + e, key: SecretKey::generate(&mut rng).public_key() }).collect()
    });
    assert_eq!(verify(&net, &net.document(nodes)).unwrap_err(), TopologyError::EpochKeys(id));
}

#[test]
fn unusable_addresses_are_rejected() {
    let net = network(12, 1);
    for bad in ["127.0.0.1:0", "0.0.0.0:9000", "[::]:9000", "[::ffff:127.0.0.1]:9000", "224.0.0.1:9000"] {
        let mut nodes = net.descriptors();
        nodes[0] = edited(&net, 0, |d| d.address = bad.parse().unwrap());
        assert!(matches!(verify(&net, &net.document(nodes)), Err(TopologyError::InvalidAddress(_))), "{bad}");
    }
    let mut nodes = net.descriptors();
    nodes[0] = edited(&net, 0, |d| d.address = "[::1]:9000".parse().unwrap());
    assert!(verify(&net, &net.document(nodes)).is_ok());
}

#[test]
fn json_syntax_errors_are_typed() {
    let net = network(13, 1);
    let json = net.verified().document().to_json().unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let parse = |v: &serde_json::Value| TopologyDocument::from_json(v.to_string().as_bytes());
    let node_field = |field: &str, value: serde_json::Value| {
        let mut v = v.clone();
        v["nodes"][0][field] = value;
        parse(&v)
    };

    let mut extra = v.clone();
    extra["extra"] = 1.into();
    assert!(matches!(parse(&extra), Err(TopologyError::Json(_))));
    assert!(matches!(TopologyDocument::from_json(&json.as_bytes()[..json.len() / 2]), Err(TopologyError::Json(_))));
    assert_eq!(node_field("node_id", hex::encode([1u8; 32]).into()), Err(TopologyError::NodeIdMismatch));
    assert_eq!(node_field("link_key", "00".into()), Err(TopologyError::Hex("link_key")));
    assert_eq!(node_field("link_key", hex::encode([0u8; 32]).into()), Err(TopologyError::InvalidLinkKey));
    assert!(matches!(node_field("address", "localhost:80".into()), Err(TopologyError::InvalidAddress(_))));
    let mut bad_key = v.clone();
    bad_key["nodes"][0]["sphinx_keys"][0]["key"] = hex::encode([0u8; 32]).into();
    assert_eq!(parse(&bad_key), Err(TopologyError::InvalidSphinxKey));
    let mut bad_schedule = v.clone();
    bad_schedule["schedule"]["epoch_length_secs"] = 0.into();
    assert!(matches!(parse(&bad_schedule), Err(TopologyError::Schedule(_))));
    let huge = vec![b' '; nox_topology::MAX_DOCUMENT_BYTES + 1];
    assert_eq!(TopologyDocument::from_json(&huge), Err(TopologyError::TooLarge(huge.len())));
}

#[test]
fn link_keys_of_small_order_are_refused() {
    assert_eq!(LinkPublicKey::from_bytes([0; 32]), Err(TopologyError::InvalidLinkKey));
    let mut one = [0u8; 32];
    one[0] = 1;
    assert_eq!(LinkPublicKey::from_bytes(one), Err(TopologyError::InvalidLinkKey));
    let honest = LinkPublicKey::from_secret(&[42; 32]);
    assert_eq!(LinkPublicKey::from_bytes(honest.to_bytes()), Ok(honest));
}
