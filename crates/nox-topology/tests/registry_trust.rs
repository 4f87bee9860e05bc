//! Verification under `Trust::Registry`: the document is an untrusted cache; only nodes the
//! registry vouches for (identity, link key, address) and whose self-signature holds are used.

mod common;

use std::sync::Arc;

use common::*;
use nox_topology::{Member, Membership, SigningKey, TopologyError, Unvouched, VerifyConfig};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn member_of(node: &TestNode) -> Member {
    let d = &node.signed.descriptor;
    Member {
        identity_key: d.identity_key.to_bytes(),
        link_key: d.link_key.to_bytes(),
        address: d.address,
        operator: [9; 20],
    }
}

/// One more node per layer, on ports 9000 + 1000.. (distinct from `network`'s).
fn one_per_layer(seed: u64) -> Vec<TestNode> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut found: Vec<TestNode> = Vec::new();
    let mut index = 1000;
    while found.len() < 3 {
        let node = make_node(&mut rng, index);
        index += 1;
        if found.iter().all(|n| n.signed.descriptor.layer != node.signed.descriptor.layer) {
            found.push(node);
        }
    }
    found
}

fn registry(members: Vec<Member>) -> VerifyConfig {
    VerifyConfig::registry(Arc::new(Membership::new(members)), geometry())
}

#[test]
fn a_document_signed_by_nobody_verifies_when_the_registry_vouches_for_every_node() {
    let net = network(11, 2);
    let mut doc = net.document(net.descriptors());
    // Whoever served it: the authority signature is not relied upon.
    doc.signature = nox_topology::Signature::from_bytes(&[0; 64]);
    let config = registry(net.nodes.iter().map(member_of).collect());
    let verified = doc.verify(&config, ISSUED).unwrap();
    assert_eq!(verified.nodes().len(), 6);
    assert!(verified.rejected().is_empty());
    // The same nodes under the authority give the same fingerprint.
    assert_eq!(verified.fingerprint(), net.verified().fingerprint());
}

#[test]
fn unregistered_or_mismatching_nodes_are_left_out_with_their_reason() {
    let net = network(12, 2);
    let mut members: Vec<Member> = net.nodes.iter().map(member_of).collect();
    // Node 0 is not registered; node 1's registered link key and node 2's address differ.
    members.remove(0);
    members[0].link_key[0] ^= 1;
    members[1].address = "127.0.0.1:1".parse().unwrap();
    // A cache adds a forged node that signs its own descriptor: not in the registry.
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let forged = make_node(&mut rng, 500);
    let mut nodes = net.descriptors();
    nodes.push(forged.signed.clone());
    // Keep every layer populated: register one more honest node per layer.
    let extra = one_per_layer(13);
    nodes.extend(extra.iter().map(|n| n.signed.clone()));
    members.extend(extra.iter().map(member_of));

    let doc = net.document(nodes);
    let verified = doc.verify(&registry(members), ISSUED).unwrap();
    let ids: Vec<_> = verified.nodes().iter().map(|n| n.id).collect();
    for (i, reason) in [(0, Unvouched::NotRegistered), (1, Unvouched::LinkKeyDiffers), (2, Unvouched::AddressDiffers)] {
        let id = net.nodes[i].signed.node_id();
        assert!(!ids.contains(&id), "node {i} must not be routable");
        assert!(
            verified.rejected().contains(&(id, TopologyError::Unvouched { node: id, reason })),
            "node {i}: {:?}",
            verified.rejected()
        );
    }
    assert!(!ids.contains(&forged.signed.node_id()));
    assert_eq!(verified.nodes().len(), 6 - 3 + 3);
}

#[test]
fn a_registered_identity_with_a_bad_self_signature_is_left_out() {
    let net = network(14, 2);
    let members: Vec<Member> = net.nodes.iter().map(member_of).collect();
    let mut nodes = net.descriptors();
    // The cache changes the node's PoW difficulty: its self-signature no longer verifies.
    nodes[3].descriptor.pow_difficulty ^= 1;
    let id = nodes[3].node_id();
    let extra = one_per_layer(15);
    let mut all = members;
    all.extend(extra.iter().map(member_of));
    nodes.extend(extra.iter().map(|n| n.signed.clone()));
    let verified = net.document(nodes).verify(&registry(all), ISSUED).unwrap();
    assert!(verified.node(&id).is_none());
    assert_eq!(verified.rejected(), &[(id, TopologyError::BadDescriptorSignature(id))]);
}

#[test]
fn a_layer_emptied_by_the_registry_refuses_the_document() {
    let net = network(16, 1);
    let members: Vec<Member> = net.nodes.iter().skip(1).map(member_of).collect();
    let err = net.document(net.descriptors()).verify(&registry(members), ISSUED).unwrap_err();
    assert!(matches!(err, TopologyError::EmptyLayer(_)), "{err:?}");
}

#[test]
fn authority_mode_is_unchanged_one_bad_node_refuses_the_document() {
    let net = network(17, 2);
    let mut nodes = net.descriptors();
    nodes[0].descriptor.pow_difficulty ^= 1;
    let err = net.document(nodes).verify(&net.config(), ISSUED).unwrap_err();
    assert!(matches!(err, TopologyError::BadDescriptorSignature(_)));
    // And a foreign authority's key is still refused.
    let other = VerifyConfig::new(SigningKey::from_bytes(&[3; 32]).verifying_key(), geometry());
    assert_eq!(net.verified().document().verify(&other, ISSUED).unwrap_err(), TopologyError::BadDocumentSignature);
}

#[test]
fn a_statement_check_leaves_out_keys_without_a_valid_operator_statement() {
    use nox_topology::{OperatorStatement, SignedDescriptor};
    let net = network(18, 2);
    // A stand-in for the chain's check: a statement "signature" is the epoch repeated.
    let check: nox_topology::StatementCheck = Arc::new(|_member, signed: &SignedDescriptor| {
        for key in &signed.descriptor.sphinx_keys {
            match signed.operator_statement(key.epoch) {
                Some(st) if st.signature == [key.epoch as u8; 65] => {}
                _ => return Err(Unvouched::OperatorStatement(key.epoch)),
            }
        }
        Ok(())
    });
    let members = Membership::new(net.nodes.iter().map(member_of)).with_statement_check(check);
    let config = VerifyConfig::registry(Arc::new(members), geometry());
    let mut nodes = net.descriptors();
    for node in nodes.iter_mut().skip(1) {
        node.operator_statements = node
            .descriptor
            .sphinx_keys
            .iter()
            .map(|k| OperatorStatement { epoch: k.epoch, signature: [k.epoch as u8; 65] })
            .collect();
    }
    // Statements travel in the JSON transport format (and are not covered by the signatures).
    let doc = net.document(nodes);
    let parsed = nox_topology::TopologyDocument::from_json(doc.to_json().unwrap().as_bytes()).unwrap();
    assert_eq!(parsed, doc);
    let bare = parsed.nodes[0].node_id();
    let with_one_layer_short = parsed.verify(&config, ISSUED);
    // Node 0 has no statements: left out, unless that empties its layer (2 per layer here).
    let verified = with_one_layer_short.unwrap();
    assert_eq!(
        verified.rejected(),
        &[(bare, TopologyError::Unvouched { node: bare, reason: Unvouched::OperatorStatement(EPOCH) })]
    );
    assert_eq!(verified.nodes().len(), 5);
}
