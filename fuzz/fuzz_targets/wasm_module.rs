//! The nox-wasm module's Rust core (what every export calls) on arbitrary
//! arguments: raw hop lists, SURB ids and bodies, topology documents and
//! authority keys, client configurations, request kinds and bodies,
//! downstream records, newer topologies, handles. Nothing may panic (a panic is a trap in the
//! browser); refusals are typed errors.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nox_sphinx::{Geometry, SecretKey};
use nox_topology::{DocumentBuilder, EpochKey, EpochSchedule, LayerCount, LinkPublicKey, NodeDescriptor, SigningKey};
use nox_wasm::{Module, now};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

const NOW: u64 = 1_800_000_000;

/// A valid signed topology (JSON, authority key), a valid raw 3-hop path and one node's id,
/// made once.
fn fixture() -> &'static (String, [u8; 32], Vec<u8>, [u8; 32]) {
    static FIXTURE: OnceLock<(String, [u8; 32], Vec<u8>, [u8; 32])> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let layers = LayerCount::new(3).expect("layers");
        let schedule = EpochSchedule::with_defaults(NOW - 3 * 3600 - 600);
        let authority = SigningKey::from_bytes(&[9; 32]);
        let mut builder = DocumentBuilder::new(Geometry::default(), schedule);
        let (mut per_layer, mut port, mut first) = ([0; 3], 9000u16, None);
        while per_layer.iter().any(|&n| n == 0) {
            let mut seed = [0u8; 32];
            rng.fill_bytes(&mut seed);
            let identity = SigningKey::from_bytes(&seed);
            let keys = schedule
                .published_epochs(NOW)
                .map(|epoch| EpochKey { epoch, key: SecretKey::generate(&mut rng).public_key() })
                .collect();
            let link = LinkPublicKey::from_secret(&seed.map(|b| b ^ 0x5c));
            let address = format!("127.0.0.1:{port}").parse().expect("address");
            let descriptor = NodeDescriptor::new(identity.verifying_key(), link, address, layers, 0, keys);
            port += 1;
            per_layer[descriptor.layer.index()] += 1;
            let signed = descriptor.sign(&identity).expect("sign");
            first.get_or_insert(signed.node_id().0);
            builder.add_node(signed);
        }
        let json = builder.sign(&authority, NOW).expect("topology").document().to_json().expect("json");
        let mut hops = Vec::new();
        for i in 0..3u8 {
            hops.extend_from_slice(&[i + 1; 32]);
            hops.extend_from_slice(SecretKey::generate(&mut rng).public_key().as_bytes());
        }
        (json, authority.verifying_key().to_bytes(), hops, first.expect("a node"))
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&op, rest)) = data.split_first() else { return };
    let Some((&cut, rest)) = rest.split_first() else { return };
    let (a, b) = rest.split_at(usize::from(cut).min(rest.len()));
    let (json, authority, hops, node) = fixture();
    let mut module = Module::new();
    if module.seed(&[7; 32]).is_err() {
        return;
    }
    let t = now(1000, NOW + 10);
    match op % 8 {
        0 => drop(module.build_forward_raw(a, b, 1)),
        1 => drop(module.build_surb_raw(a, b, 1)),
        2 => {
            if let Ok(surb) = module.build_surb_raw(hops, &[1; 32], 1) {
                let _ = module.surb_open(surb.handle, a, b);
                let _ = module.surb_open(surb.handle, &surb.id.0, b);
            }
        }
        3 => drop(module.verify_topology(a, b, NOW)),
        4 => drop(module.verify_topology(a, authority, NOW)),
        5 | 6 | 7 => {
            let Ok(topology) = module.verify_topology(json.as_bytes(), authority, NOW) else { return };
            match op % 8 {
                5 => {
                    let _ = module.topology_forward(topology, b, a, NOW + 10);
                    let _ = module.topology_surb(topology, a, b, NOW + 10);
                    let _ = module.client_new(topology, a, t);
                }
                _ => {
                    let Ok(client) = module.client_new(topology, b"", t) else { return };
                    if op % 8 == 6 {
                        let kind = a.first().copied().unwrap_or(0);
                        let exit = a.get(1..33).unwrap_or_default();
                        let _ = module.client_request(client.handle, kind, b, exit, 100, t);
                    } else if op % 16 == 15 {
                        // A client link: the first flight, then arbitrary bytes from the "node"
                        // (message 2, records) in two chunks, then a seal.
                        let mailbox: &[u8] = if a.first().is_some_and(|x| x & 1 == 1) { &[3; 32] } else { &[] };
                        if let Ok((link, _first)) = module.link_start(topology, node, mailbox) {
                            let (x, y) = b.split_at(b.len() / 2);
                            let _ = module.link_feed(link, x);
                            let _ = module.link_feed(link, y);
                            let _ = module.link_seal(link, a);
                        }
                    } else {
                        let _ = module.client_on_downstream(client.handle, a, b, t);
                        let _ = module.client_on_downstream(client.handle, &[], b, t);
                    }
                    let _ = module.client_poll_timeouts(client.handle, now(u64::MAX, u64::MAX));
                    let _ = module.client_stats(client.handle);
                    // A newer topology: a handle of any kind, then the same document at the end of time.
                    let other = u32::from(b.first().copied().unwrap_or(0) % 4);
                    let _ = module.client_set_topology(client.handle, other, t);
                    let _ = module.client_set_topology(client.handle, topology, now(u64::MAX, u64::MAX));
                    let _ = module.client_gateways(client.handle);
                }
            }
        }
        _ => {}
    }
    if let Some(&h) = a.first() {
        let _ = module.drop_handle(u32::from(h));
        let _ = module.topology_info(u32::from(h), NOW);
    }
});
