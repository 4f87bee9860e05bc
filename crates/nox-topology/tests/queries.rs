//! Queries of a verified topology: lookups, layer enforcement, path selection.

mod common;

use std::collections::HashMap;

use common::*;
use nox_sphinx::{BuildOptions, HeaderView, NodeId, Processed, build_forward, process_packet};
use nox_topology::{Layer, LayerCount, PathError, Sender};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

#[test]
fn lookups() {
    let net = network(20, 3);
    let topo = net.verified();
    for layer in topo.layers().iter() {
        assert_eq!(topo.nodes_in_layer(layer).len(), 3);
        assert!(topo.nodes_in_layer(layer).all(|n| n.descriptor.layer == layer));
    }
    assert_eq!(topo.nodes_in_layer(Layer(3)).len(), 0);
    for n in &net.nodes {
        let id = n.signed.node_id();
        assert_eq!(topo.node(&id).unwrap().descriptor, n.signed.descriptor);
        assert_eq!(topo.layer_of(&id), Some(n.signed.descriptor.layer));
        for (epoch, secret) in &n.sphinx {
            assert_eq!(topo.sphinx_key(&id, *epoch), Some(secret.public_key()));
        }
        assert_eq!(topo.sphinx_key(&id, EPOCH + 2), None);
    }
    let stranger = NodeId([9; 32]);
    assert!(topo.node(&stranger).is_none() && topo.layer_of(&stranger).is_none());
}

#[test]
fn layer_assignment_follows_the_documented_formula() {
    let net = network(21, 2);
    for n in &net.nodes {
        let id = n.signed.node_id();
        assert_eq!(id.0, blake3::derive_key("NOX topology v1 node id", n.identity.verifying_key().as_bytes()));
        let h = blake3::derive_key("NOX topology v1 layer", &id.0);
        let expected = u64::from_le_bytes(h[..8].try_into().unwrap()) % 3;
        assert_eq!(u64::from(n.signed.descriptor.layer.0), expected);
    }
    // Roughly uniform over many ids (expected 1000 each; 5 sigma ≈ 130).
    let five = LayerCount::new(3).unwrap();
    let mut counts = [0u32; 3];
    for i in 0..3000u32 {
        counts[five.assign(&NodeId(*blake3::hash(&i.to_le_bytes()).as_bytes())).index()] += 1;
    }
    assert!(counts.iter().all(|&c| (870..=1130).contains(&c)), "{counts:?}");
}

#[test]
fn position_enforcement() {
    let net = network(22, 2);
    let topo = net.verified();
    let exit = topo.layers().exit();
    for to in topo.nodes() {
        let layer = to.descriptor.layer;
        assert_eq!(topo.position_allowed(&to.id, Sender::Client), layer == Layer(0));
        for from in topo.nodes() {
            let from_layer = from.descriptor.layer;
            let expected = if layer == Layer(0) { from_layer == exit } else { from_layer.0 + 1 == layer.0 };
            assert_eq!(topo.position_allowed(&to.id, Sender::Node(from.id)), expected, "{from_layer} -> {layer}");
        }
        assert!(!topo.position_allowed(&to.id, Sender::Node(NodeId([0; 32]))));
    }
    assert!(!topo.position_allowed(&NodeId([0; 32]), Sender::Client));
}

#[test]
fn random_paths_cross_every_layer_and_carry_node_parameters() {
    let net = network(23, 3);
    let topo = net.verified();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut picks: HashMap<NodeId, u32> = HashMap::new();
    for _ in 0..3000 {
        let path = topo.random_path(&mut rng, EPOCH + 1, &|_| false).unwrap();
        assert_eq!(path.len(), 3);
        for (i, hop) in path.iter().enumerate() {
            let node = topo.node(&hop.node).unwrap();
            assert_eq!(node.descriptor.layer, Layer(i as u8));
            assert_eq!(Some(hop.public_key.clone()), node.descriptor.sphinx_key(EPOCH + 1));
            assert_eq!(hop.pow_difficulty, node.descriptor.pow_difficulty);
            *picks.entry(hop.node).or_default() += 1;
        }
    }
    // Uniform within a layer: 1000 expected per node, 5 sigma ≈ 130.
    assert_eq!(picks.len(), 9);
    assert!(picks.values().all(|&c| (870..=1130).contains(&c)), "{picks:?}");
}

#[test]
fn random_path_respects_avoid_and_epoch() {
    let net = network(24, 2);
    let topo = net.verified();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let banned = topo.nodes_in_layer(Layer(1)).next().unwrap().id;
    for _ in 0..200 {
        let path = topo.random_path(&mut rng, EPOCH, &|id| id == banned).unwrap();
        assert!(path.iter().all(|h| h.node != banned));
    }
    let layer2: Vec<NodeId> = topo.nodes_in_layer(Layer(2)).map(|n| n.id).collect();
    assert_eq!(topo.random_path(&mut rng, EPOCH, &|id| layer2.contains(&id)), Err(PathError::NoCandidate(Layer(2))));
    assert_eq!(topo.random_path(&mut rng, EPOCH + 2, &|_| false), Err(PathError::NoCandidate(Layer(0))));
}

#[test]
fn a_selected_path_carries_a_real_packet() {
    let net = network(25, 2);
    let topo = net.verified();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let path = topo.random_path(&mut rng, EPOCH, &|_| false).unwrap();
    let geometry = geometry();
    let mut packet =
        build_forward(&geometry, &BuildOptions::new(EPOCH), &path, b"through the topology", &mut rng).unwrap();
    let mut previous = Sender::Client;
    for (i, hop) in path.iter().enumerate() {
        assert!(topo.position_allowed(&hop.node, previous));
        let node = net.nodes.iter().find(|n| n.signed.node_id() == hop.node).unwrap();
        let epoch = HeaderView::parse(&geometry, &packet).unwrap().key_epoch();
        let key = &node.sphinx.iter().find(|(e, _)| *e == epoch).unwrap().1;
        match process_packet(&geometry, key, &mut packet).unwrap() {
            Processed::Forward { next_hop, .. } => assert_eq!(next_hop, path[i + 1].node),
            Processed::Deliver { payload, .. } => {
                assert_eq!(i, 2);
                assert_eq!(&packet[payload], b"through the topology");
            }
            Processed::Reply { .. } => panic!("not a reply"),
        }
        previous = Sender::Node(hop.node);
    }
}

#[test]
fn client_epoch_falls_back_to_the_current_one_when_the_lagging_one_has_no_keys() {
    // Nodes publish keys for epochs 5 and 6 (60 s epochs, 10 s overlap).
    let topo = network(30, 2).verified();
    let start_of = |e: u64| GENESIS + 60 * e;
    // 2 s into epoch 5 the schedule still says 4, for which no key exists.
    assert_eq!(topo.schedule().client_epoch(start_of(5) + 2), EPOCH - 1);
    assert_eq!(topo.client_epoch(start_of(5) + 2), EPOCH);
    // 2 s into epoch 6 the lagging epoch 5 has keys: it is kept.
    assert_eq!(topo.client_epoch(start_of(6) + 2), EPOCH);
    assert_eq!(topo.client_epoch(start_of(5) + 30), EPOCH);
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    assert!(topo.random_path(&mut rng, topo.client_epoch(start_of(5) + 2), &|_| false).is_ok());
}
