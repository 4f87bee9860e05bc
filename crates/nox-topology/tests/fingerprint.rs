//! The fingerprint binds addresses and keys; an XOR over addresses does not.

mod common;

use std::net::SocketAddr;

use common::*;
use nox_sphinx::SecretKey;
use nox_topology::{DocumentBuilder, Fingerprint, LinkPublicKey, SignedDescriptor, VerifiedTopology};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The paper's §5.3 stale-topology check: XOR of the registered addresses (here: the 6-byte
/// ip ‖ port encodings).
fn xor_of_addresses(topo: &VerifiedTopology) -> [u8; 6] {
    let mut acc = [0u8; 6];
    for n in topo.nodes() {
        let SocketAddr::V4(a) = n.descriptor.address else { panic!("test uses IPv4") };
        let bytes: Vec<u8> = a.ip().octets().into_iter().chain(a.port().to_be_bytes()).collect();
        acc.iter_mut().zip(bytes).for_each(|(x, b)| *x ^= b);
    }
    acc
}

fn sign(net: &Net, nodes: &[SignedDescriptor]) -> VerifiedTopology {
    let mut b = DocumentBuilder::new(geometry(), schedule());
    nodes.iter().cloned().for_each(|n| {
        b.add_node(n);
    });
    b.sign(&net.authority, ISSUED).unwrap()
}

/// Node `i` of `net`, moved to `address` and re-signed.
fn at(net: &Net, i: usize, address: &str) -> SignedDescriptor {
    let mut d = net.nodes[i].signed.descriptor.clone();
    d.address = address.parse().unwrap();
    d.sign(&net.nodes[i].identity).unwrap()
}

#[test]
fn xor_cancels_but_the_fingerprint_does_not() {
    let net = network(30, 3);
    // Base: one node per layer. Extra: four more nodes whose addresses XOR to zero
    // (10.0.0.{1,2,4,7}, same port: 1^2^4^7 = 0 and four equal ports cancel).
    let first_of_layer: Vec<usize> =
        (0..3).map(|l| net.nodes.iter().position(|n| n.signed.descriptor.layer.0 == l).unwrap()).collect();
    let others: Vec<usize> = (0..net.nodes.len()).filter(|i| !first_of_layer.contains(i)).collect();
    let base: Vec<SignedDescriptor> =
        first_of_layer.iter().map(|&i| at(&net, i, &format!("192.168.1.{}:7000", i + 1))).collect();
    let mut extended = base.clone();
    for (&i, host) in others.iter().zip([1, 2, 4, 7]) {
        extended.push(at(&net, i, &format!("10.0.0.{host}:9000")));
    }
    assert_eq!(extended.len(), 7);
    let (a, b) = (sign(&net, &base), sign(&net, &extended));
    assert_eq!(xor_of_addresses(&a), xor_of_addresses(&b), "the XOR check sees no change");
    assert_ne!(a.fingerprint(), b.fingerprint());
}

#[test]
fn same_addresses_with_other_keys_change_the_fingerprint() {
    let net = network(31, 1);
    let nodes = net.descriptors();
    let mut swapped = nodes.clone();
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let mut d = swapped[0].descriptor.clone();
    d.sphinx_keys[1].key = SecretKey::generate(&mut rng).public_key();
    swapped[0] = d.sign(&net.nodes[0].identity).unwrap();
    let mut relinked = nodes.clone();
    let mut d = relinked[1].descriptor.clone();
    d.link_key = LinkPublicKey::from_secret(&[3; 32]);
    relinked[1] = d.sign(&net.nodes[1].identity).unwrap();

    let fps: Vec<Fingerprint> = [&nodes, &swapped, &relinked].iter().map(|n| sign(&net, n).fingerprint()).collect();
    assert_eq!(xor_of_addresses(&sign(&net, &nodes)), xor_of_addresses(&sign(&net, &swapped)));
    assert_ne!(fps[0], fps[1]);
    assert_ne!(fps[0], fps[2]);
    assert_ne!(fps[1], fps[2]);
}

#[test]
fn fingerprint_ignores_issue_time_and_order_only() {
    let net = network(32, 2);
    let nodes = net.descriptors();
    let a = sign(&net, &nodes);
    let mut b = DocumentBuilder::new(geometry(), schedule());
    nodes.iter().rev().cloned().for_each(|n| {
        b.add_node(n);
    });
    let b = b.sign(&net.authority, ISSUED + 30).unwrap();
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert_ne!(a.document().signature, b.document().signature);
    // One difficulty change is a different view.
    let mut changed = nodes.clone();
    let mut d = changed[0].descriptor.clone();
    d.pow_difficulty += 1;
    changed[0] = d.sign(&net.nodes[0].identity).unwrap();
    assert_ne!(sign(&net, &changed).fingerprint(), a.fingerprint());
    assert_eq!(a.fingerprint().to_string(), hex::encode(a.fingerprint().0));
}
