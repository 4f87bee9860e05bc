//! The module's Rust core natively: what the exports do, checked against
//! `nox_sphinx` processing, and the refusals the ABI turns into status codes.
//! (The same checks through WebAssembly: js/test/nox_wasm.test.mjs.)

use nox_sphinx::{Geometry, NodeId, Processed, SecretKey, Surb, process_packet};
use nox_wasm::{Module, WasmError};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn raw_hops(n: u8) -> (Vec<u8>, Vec<SecretKey>) {
    let mut rng = ChaCha20Rng::seed_from_u64(u64::from(n));
    let keys: Vec<SecretKey> = (0..n).map(|_| SecretKey::generate(&mut rng)).collect();
    let mut raw = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        raw.extend_from_slice(&[i as u8 + 1; 32]);
        raw.extend_from_slice(key.public_key().as_bytes());
    }
    (raw, keys)
}

fn seeded(byte: u8) -> Module {
    let mut module = Module::new();
    assert!(module.seed(&[byte; 32]).is_ok());
    module
}

#[test]
fn forward_packet_is_delivered_by_native_processing() {
    let (raw, keys) = raw_hops(3);
    let mut module = seeded(1);
    let Ok(mut packet) = module.build_forward_raw(&raw, b"payload", 7) else { panic!("build") };
    let geometry = Geometry::default();
    let mut outcome = None;
    for key in &keys {
        outcome = process_packet(&geometry, key, &mut packet).ok();
        assert!(outcome.is_some(), "a hop refused the packet");
    }
    let Some(Processed::Deliver { payload, .. }) = outcome else { panic!("not delivered") };
    assert_eq!(&packet[payload], b"payload");
}

#[test]
fn surb_reply_opens_once_processed_and_not_otherwise() {
    let (raw, keys) = raw_hops(3);
    let mut module = seeded(2);
    let Ok(new) = module.build_surb_raw(&raw, &[9; 32], 7) else { panic!("surb") };
    let geometry = Geometry::default();
    let Ok(surb) = Surb::from_bytes(&geometry, &new.surb) else { panic!("parse surb") };
    assert_eq!(surb.first_hop(), NodeId([1; 32]));
    let Ok(mut packet) = surb.into_reply(&geometry, b"reply") else { panic!("reply") };
    let unprocessed = packet.clone();
    let mut outcome = None;
    for key in &keys {
        outcome = process_packet(&geometry, key, &mut packet).ok();
    }
    let Some(Processed::Reply { surb_id, body, recipient, .. }) = outcome else { panic!("no reply") };
    assert_eq!(recipient, NodeId([9; 32]));
    assert_eq!(surb_id, new.id);
    assert_eq!(module.surb_open(new.handle, &surb_id.0, &packet[body.clone()]).ok().as_deref(), Some(&b"reply"[..]));
    // The body as the replier sent it (no hop removed its layer) is not a reply.
    let raw_body = &unprocessed[body.clone()];
    assert!(matches!(module.surb_open(new.handle, &surb_id.0, raw_body), Err(WasmError::Sphinx(_))));
    assert!(module.drop_handle(new.handle).is_ok());
    assert!(matches!(module.surb_open(new.handle, &surb_id.0, &packet[body]), Err(WasmError::UnknownHandle(_))));
    assert_eq!(module.live_objects(), 0);
}

#[test]
fn refusals_have_their_codes() {
    let (raw, _) = raw_hops(3);
    let mut module = Module::new();
    let not_seeded = module.build_forward_raw(&raw, b"x", 1);
    assert!(matches!(not_seeded, Err(WasmError::NotSeeded)));
    assert_eq!(not_seeded.err().map(|e| e.code()), Some(2));
    assert!(matches!(module.seed(&[0; 31]), Err(WasmError::BadArgument(_))));
    let mut module = seeded(3);
    assert!(matches!(module.build_forward_raw(&raw[..100], b"x", 1), Err(WasmError::BadArgument(_))));
    assert!(matches!(module.build_forward_raw(&[], b"x", 1), Err(WasmError::BadArgument(_))));
    assert!(matches!(module.build_forward_raw(&vec![0; 17 * 64], b"x", 1), Err(WasmError::Sphinx(_))));
    assert!(matches!(module.build_forward_raw(&raw, &vec![0; 40_000], 1), Err(WasmError::Sphinx(_))));
    let mut bad_key = raw.clone();
    bad_key[32..64].fill(0xff);
    assert!(matches!(module.build_forward_raw(&bad_key, b"x", 1), Err(WasmError::BadArgument(_))));
    assert!(matches!(
        module.verify_topology(b"{", &[0; 32], 0),
        Err(WasmError::BadArgument(_) | WasmError::Topology(_))
    ));
    assert!(matches!(module.topology_info(77, 0), Err(WasmError::UnknownHandle(77))));
    let Ok(surb) = module.build_surb_raw(&raw, &[1; 32], 1) else { panic!("surb") };
    assert!(matches!(module.topology_info(surb.handle, 0), Err(WasmError::WrongHandle { .. })));
    let codes: Vec<i32> = [
        WasmError::BadArgument(String::new()),
        WasmError::NotSeeded,
        WasmError::UnknownHandle(0),
        WasmError::WrongHandle { handle: 0, expected: "" },
    ]
    .iter()
    .map(WasmError::code)
    .collect();
    assert_eq!(codes, [1, 2, 3, 4]);
}

#[test]
fn the_seed_is_the_only_randomness() {
    let (raw, _) = raw_hops(3);
    let (mut a, mut b, mut c) = (seeded(5), seeded(5), seeded(6));
    let first = a.build_forward_raw(&raw, b"same", 1).ok();
    assert!(first.is_some());
    assert_eq!(first, b.build_forward_raw(&raw, b"same", 1).ok());
    assert_ne!(first, c.build_forward_raw(&raw, b"same", 1).ok());
    assert_ne!(first, a.build_forward_raw(&raw, b"same", 1).ok());
}

#[test]
fn client_configuration_is_checked_and_handles_are_typed() {
    let (raw, _) = raw_hops(3);
    let mut module = seeded(7);
    let now = nox_wasm::now(0, 1_700_000_000);
    // No topology behind the handle: refused before any configuration is used.
    assert!(matches!(module.client_new(1, b"", now), Err(WasmError::UnknownHandle(1))));
    let Ok(surb) = module.build_surb_raw(&raw, &[1; 32], 1) else { panic!("surb") };
    assert!(matches!(
        module.client_new(surb.handle, b"", now),
        Err(WasmError::BadArgument(_) | WasmError::WrongHandle { .. })
    ));
    for bad in
        [&b"[]"[..], b"{\"cover\": 1}", b"{\"loss\": 1.5}", b"{\"cover_rate\": -1}", b"{\"timeout_ms\": 1.5}", b"{"]
    {
        assert!(
            matches!(module.client_new(surb.handle, bad, now), Err(WasmError::BadArgument(_))),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    assert!(matches!(module.client_request(surb.handle, 1, b"x", &[], 10, now), Err(WasmError::WrongHandle { .. })));
    assert!(matches!(module.client_stats(99), Err(WasmError::UnknownHandle(99))));
}
