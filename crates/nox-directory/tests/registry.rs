//! The acceptance rules of docs/spec/directory.md §3, on the pure registry with injected time.

mod common;

use common::{Node, key};
use nox_directory::{Accepted, Refusal};
use nox_topology::{EpochKey, LinkPublicKey, SigningKey};

/// At `T0` the epoch is 10.
const T0: u64 = 1000;

fn net() -> common::Net {
    common::net(T0)
}

#[test]
fn a_valid_upload_appears_in_the_next_document() {
    let mut net = net();
    let t = net.schedule.epoch_start(11) + 5; // inside the overlap of epoch 11
    let new_key = key(&mut net.rng, 12);
    net.nodes[0].keys.push(new_key.clone());
    let upload = net.nodes[0].descriptor();
    assert_eq!(net.registry.submit(upload.clone(), t), Ok(Accepted::Updated { issued_at: t }));
    let doc = net.registry.current().unwrap();
    assert_eq!(doc.issued_at(), t);
    assert_eq!(doc.sphinx_key(&upload.node_id(), 12), Some(new_key.key));
    // The same upload again changes nothing.
    assert_eq!(net.registry.submit(upload, t + 1), Ok(Accepted::Unchanged));
    assert_eq!(net.registry.current().unwrap().issued_at(), t);
}

#[test]
fn a_bad_signature_is_refused() {
    let mut net = net();
    let mut upload = net.nodes[1].descriptor();
    upload.descriptor.pow_difficulty = 3; // after signing
    assert_eq!(net.registry.submit(upload, T0 + 1), Err(Refusal::BadSignature));
}

#[test]
fn an_unknown_identity_is_refused() {
    let mut net = net();
    let mut stranger = Node { identity: SigningKey::from_bytes(&[1; 32]), ..net.nodes.remove(2) };
    stranger.port = 9999;
    assert!(matches!(net.registry.submit(stranger.descriptor(), T0 + 1), Err(Refusal::UnknownIdentity(_))));
}

#[test]
fn pinned_fields_cannot_change() {
    let mut net = net();
    let other_link = LinkPublicKey::from_secret(&[5; 32]);
    let upload = net.nodes[0].with(|d| d.link_key = other_link);
    assert_eq!(net.registry.submit(upload, T0 + 1), Err(Refusal::Changed("link key")));
    let upload = net.nodes[0].with(|d| d.address = ([127, 0, 0, 1], 1).into());
    assert_eq!(net.registry.submit(upload, T0 + 1), Err(Refusal::Changed("address")));
    let upload = net.nodes[0].with(|d| d.layer.0 = (d.layer.0 + 1) % 3);
    assert!(matches!(net.registry.submit(upload, T0 + 1), Err(Refusal::WrongLayer { .. })));
    // The difficulty is the node's to change.
    let upload = net.nodes[0].with(|d| d.pow_difficulty = 4);
    assert!(matches!(net.registry.submit(upload, T0 + 1), Ok(Accepted::Updated { .. })));
}

#[test]
fn stale_past_changed_withdrawn_and_far_future_keys_are_refused() {
    let mut net = net();
    let after_overlap = net.schedule.epoch_start(11) + 30; // epoch 10 expired
    let keys = net.nodes[0].keys.clone();
    let stale = net.nodes[0].descriptor(); // still lists epoch 10
    assert_eq!(net.registry.submit(stale, after_overlap), Err(Refusal::StaleEpoch(10)));

    let fresh_11 = key(&mut net.rng, 11);
    net.nodes[0].keys = vec![fresh_11];
    assert_eq!(net.registry.submit(net.nodes[0].descriptor(), after_overlap), Err(Refusal::KeyChanged(11)));

    net.nodes[0].keys = vec![keys[0].clone()]; // drops epoch 11, still valid at T0
    assert_eq!(net.registry.submit(net.nodes[0].descriptor(), T0 + 1), Err(Refusal::KeyWithdrawn(11)));

    net.nodes[0].keys = vec![keys[0].clone(), keys[1].clone(), key(&mut net.rng, 12)];
    assert_eq!(
        net.registry.submit(net.nodes[0].descriptor(), T0 + 1),
        Err(Refusal::TooFarAhead { epoch: 12, horizon: 11 })
    );

    net.nodes[0].keys = vec![keys[1].clone()];
    assert_eq!(net.registry.submit(net.nodes[0].descriptor(), T0 + 1), Err(Refusal::MissingCurrentEpoch(10)));

    // A node that never published epoch 12 may not add it once epoch 12 has begun... (epoch 13)
    let in_13 = net.schedule.epoch_start(13) + 1;
    net.nodes[0].keys = vec![key(&mut net.rng, 12), key(&mut net.rng, 13)];
    assert_eq!(net.registry.submit(net.nodes[0].descriptor(), in_13), Err(Refusal::AddedForPast(12)));
    // ...but may add the current one (a node that missed the window recovers).
    net.nodes[0].keys = vec![key(&mut net.rng, 13)];
    assert!(matches!(net.registry.submit(net.nodes[0].descriptor(), in_13), Err(Refusal::Document(_))));
    // (refused as a whole here only because the other layers have no key for epoch 13)

    // Nothing refused changed the document.
    assert_eq!(net.registry.current().unwrap().issued_at(), T0);
}

#[test]
fn a_sphinx_key_reused_from_another_node_is_refused() {
    let mut net = net();
    let theirs = net.nodes[1].keys[1].clone();
    net.nodes[0].keys = vec![net.nodes[0].keys[0].clone(), net.nodes[0].keys[1].clone()];
    let t = net.schedule.epoch_start(11) + 5;
    net.nodes[0].keys.push(EpochKey { epoch: 12, key: theirs.key });
    assert!(matches!(net.registry.submit(net.nodes[0].descriptor(), t), Err(Refusal::Document(_))));
}

#[test]
fn documents_are_reissued_per_epoch_and_leave_out_nodes_without_keys() {
    let mut net = net();
    assert_eq!(net.registry.refresh(T0 + 10), Ok(false));
    assert_eq!(net.registry.refresh(T0 + 30), Ok(true)); // reissue_secs = 25
    assert_eq!(net.registry.current().unwrap().issued_at(), T0 + 30);
    // Epoch 12: nobody published a key; re-issue fails, the old document stays.
    let in_12 = net.schedule.epoch_start(12);
    assert!(net.registry.refresh(in_12).is_err());
    assert_eq!(net.registry.current().unwrap().issued_at(), T0 + 30);
    // Everyone publishes epoch 12 during epoch 11; then epoch 12's document lists them all.
    let in_11 = net.schedule.epoch_start(11) + 50;
    for i in 0..3 {
        let k = key(&mut net.rng, 12);
        net.nodes[i].keys = vec![net.nodes[i].keys[1].clone(), k];
        let upload = net.nodes[i].descriptor();
        assert!(matches!(net.registry.submit(upload, in_11), Ok(Accepted::Updated { .. })), "node {i}");
    }
    assert_eq!(net.registry.refresh(in_12), Ok(true));
    assert_eq!(net.registry.current().unwrap().nodes().len(), 3);
}
