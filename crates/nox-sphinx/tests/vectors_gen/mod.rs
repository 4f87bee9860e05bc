//! Rebuilds every passing vector of `docs/spec/vectors/sphinx.json` from a seeded RNG: forward
//! packets, a SURB, one hop's key schedule, and (in `failures`) the failure cases.

use super::*;

pub(crate) mod failures;

use failures::failure_vectors;

fn blinding_name(b: Blinding) -> &'static str {
    match b {
        Blinding::Additive => "additive",
        Blinding::Multiplicative => "multiplicative",
    }
}

fn geometry_json(g: &Geometry) -> Value {
    json!({
        "packet_len": g.packet_len(),
        "hops": g.hops(),
        "blinding": blinding_name(g.blinding()),
        "header_len": g.header_len(),
        "identifier": hex::encode(g.identifier()),
        "tag": hex::encode(g.tag()),
    })
}

fn make_nodes(count: usize, seed: u64, difficulty: u8) -> (Vec<SecretKey>, Vec<PathHop>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let keys: Vec<SecretKey> = (0..count).map(|_| SecretKey::generate(&mut rng)).collect();
    let path = common::vector_path(&keys, difficulty);
    (keys, path)
}

fn nodes_json(keys: &[SecretKey], path: &[PathHop]) -> Value {
    common::vector_nodes(keys, path, "secret_key")
}

/// What one hop derives from a packet (docs/spec/sphinx.md §4.1, §5.3 step 5),
/// computed with the crate's own key schedule and stream cipher.
struct HopDerived {
    shared: [u8; 32],
    rho: [u8; 16],
    mu: [u8; 32],
    pi: [u8; 16],
    b: [u8; 32],
    /// `(β ‖ 0^64) ⊕ S(ρ, R + 64)`: this hop's routing block, then the next β.
    unwrapped: Vec<u8>,
}

fn hop_keys(geometry: &Geometry, key: &SecretKey, packet: &[u8]) -> HopDerived {
    let alpha: [u8; 32] = packet[geometry.alpha_range()].try_into().expect("32");
    let point = internals::decode_alpha(&alpha).expect("valid α");
    let shared = internals::shared_secret(key, &point);
    let (rho, mu, pi, b) = internals::hop_key_schedule(&alpha, &shared);
    let mut unwrapped = packet[geometry.routing_range()].to_vec();
    unwrapped.extend_from_slice(&[0u8; 64]);
    internals::xor_keystream(&rho, &mut unwrapped);
    HopDerived { shared, rho, mu, pi, b, unwrapped }
}

/// Runs a packet through `keys`; returns per-hop headers, tags and the end.
fn trace(geometry: &Geometry, keys: &[SecretKey], packet: &mut [u8]) -> (Vec<Value>, Processed) {
    let mut hops = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let view = HeaderView::parse(geometry, packet).expect("view");
        let tag = view.replay_tag();
        let derived = hop_keys(geometry, key, packet);
        hops.push(json!({
            "header": hex::encode(&packet[..geometry.header_len()]),
            "body_blake3": hex::encode(blake3::hash(&packet[geometry.header_len()..]).as_bytes()),
            "replay_tag": hex::encode(tag.0),
            "pow_work_bits": pow::work_bits(&tag, &view.pow_nonce()),
            "shared_secret": hex::encode(derived.shared),
            "rho": hex::encode(derived.rho),
            "mu": hex::encode(derived.mu),
            "pi": hex::encode(derived.pi),
            "b": hex::encode(derived.b),
            "routing_block": hex::encode(&derived.unwrapped[..64]),
        }));
        let outcome = process_packet(geometry, key, packet).expect("process");
        if i + 1 == keys.len() {
            return (hops, outcome);
        }
    }
    unreachable!("empty path")
}

fn forward_vector(name: &str, geometry: Geometry, hops: usize, seed: u64, difficulty: u8) -> Value {
    let (keys, path) = make_nodes(hops, seed, difficulty);
    let payload: Vec<u8> = format!("NOX test vector {name}").into_bytes();
    let mut rng = RecordingRng { inner: ChaCha20Rng::seed_from_u64(seed + 1000), log: Vec::new() };
    let packet = build_forward(&geometry, &BuildOptions::new(EPOCH), &path, &payload, &mut rng).expect("build");
    let mut working = packet.clone();
    let (trace, end) = trace(&geometry, &keys, &mut working);
    let Processed::Deliver { payload: range, delay } = end else { panic!("not delivered") };
    assert_eq!(&working[range.clone()], &payload[..]);
    let small = geometry.packet_len() <= 4096;
    let mut vector = json!({
        "name": name,
        "geometry": geometry_json(&geometry),
        "key_epoch": EPOCH,
        "nodes": nodes_json(&keys, &path),
        "payload": hex::encode(&payload),
        "rng_bytes": hex::encode(&rng.log),
        "packet_blake3": hex::encode(blake3::hash(&packet).as_bytes()),
        "hops": trace,
        "exit": { "delay_us": delay.0, "payload": hex::encode(&working[range]) },
    });
    // Geometries up to 4 KiB (the default included) carry the whole packet;
    // the 32 KiB one carries its header only (its body follows from the
    // payload and the hops' π).
    let (field, bytes) =
        if small { ("packet", &packet[..]) } else { ("packet_header", &packet[..geometry.header_len()]) };
    vector[field] = json!(hex::encode(bytes));
    vector
}

fn surb_vector(geometry: Geometry, seed: u64) -> Value {
    let (keys, path) = make_nodes(3, seed, 4);
    let recipient = NodeId([0xC1; 32]);
    let mut rng = RecordingRng { inner: ChaCha20Rng::seed_from_u64(seed + 1000), log: Vec::new() };
    let (surb, recovery) = build_surb(&geometry, &BuildOptions::new(EPOCH), &path, recipient, &mut rng).expect("surb");
    let surb_bytes = surb.to_bytes();
    let reply = b"NOX test vector SURB reply".to_vec();
    let packet = surb.into_reply(&geometry, &reply).expect("reply");
    let mut working = packet.clone();
    let (trace, end) = trace(&geometry, &keys, &mut working);
    let Processed::Reply { surb_id, body, recipient: to, .. } = end else { panic!("no reply") };
    assert_eq!(to, recipient);
    let opened = recovery.open(&surb_id, &working[body.clone()]).expect("open");
    assert_eq!(opened, reply);
    json!({
        "name": "surb_round_trip_3_hops",
        "geometry": geometry_json(&geometry),
        "key_epoch": EPOCH,
        "nodes": nodes_json(&keys, &path),
        "recipient": hex::encode(recipient.0),
        "rng_bytes": hex::encode(&rng.log),
        "surb": hex::encode(&surb_bytes),
        "surb_id": hex::encode(surb_id.0),
        "reply": hex::encode(&reply),
        "reply_packet": hex::encode(&packet),
        "hops": trace,
        "delivered_body": hex::encode(&working[body]),
    })
}

/// The key schedule of one hop in isolation (docs/spec/sphinx.md §4.1): a node
/// key `x` and an `α`, the shared secret, the whole KDF output `okm` and its
/// split. `okm` is computed here from the spec's formula with the `blake3`
/// crate; the split must equal the crate's own key schedule.
fn key_schedule_vector(seed: u64) -> Value {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let key = SecretKey::generate(&mut rng);
    let alpha: [u8; 32] = SecretKey::generate(&mut rng).public_key().as_bytes().try_into().expect("32");
    let point = internals::decode_alpha(&alpha).expect("valid α");
    let shared = internals::shared_secret(&key, &point);
    let (rho, mu, pi, b) = internals::hop_key_schedule(&alpha, &shared);
    let mut okm = [0u8; 128];
    let mut hasher = blake3::Hasher::new_derive_key("NOX sphinx v1 hop key schedule");
    hasher.update(&alpha).update(&shared);
    hasher.finalize_xof().fill(&mut okm);
    assert_eq!(&okm[..16], &rho[..], "ρ = okm[0..16]");
    assert_eq!(&okm[16..48], &mu[..], "μ = okm[16..48]");
    assert_eq!(&okm[48..64], &pi[..], "π = okm[48..64]");
    let wide: [u8; 64] = okm[64..128].try_into().expect("64");
    assert_eq!(internals::Scalar::from_bytes_mod_order_wide(&wide).to_bytes(), b, "b = WideScalar(okm[64..128])");
    json!({
        "secret_key": hex::encode(key.to_bytes()),
        "alpha": hex::encode(alpha),
        "shared_secret": hex::encode(shared),
        "okm": hex::encode(okm),
        "rho": hex::encode(rho),
        "mu": hex::encode(mu),
        "pi": hex::encode(pi),
        "b_wide": hex::encode(wide),
        "b": hex::encode(b),
    })
}

pub(crate) fn generate() -> Value {
    let small = |hops| Geometry::new(2048, hops).expect("geometry");
    let tag = nox_sphinx::ReplayTag(*blake3::hash(b"pow vector").as_bytes());
    let nonce = pow::solve(&tag, 12, 1).expect("solve");
    json!({
        "description": "NOX Sphinx v1 known-answer vectors; see docs/spec/sphinx.md §9 for how to replay rng_bytes.",
        "regenerate": "NOX_REGENERATE_VECTORS=1 cargo test -p nox-sphinx --test vectors",
        "forward": [
            forward_vector("forward_1_hop", small(1), 1, 1, 0),
            forward_vector("forward_3_hops", small(3), 3, 3, 0),
            forward_vector("forward_5_hops", small(5), 5, 5, 0),
            forward_vector("forward_2_of_3_hops", small(3), 2, 7, 0),
            forward_vector("forward_3_hops_multiplicative", small(3).with_blinding(Blinding::Multiplicative), 3, 9, 0),
            forward_vector("forward_3_hops_pow8", small(3), 3, 11, 8),
            forward_vector("forward_3_hops_default_geometry", Geometry::default(), 3, 15, 0),
            forward_vector("forward_3_hops_32k_geometry", Geometry::new(32_768, 3).expect("geometry"), 3, 13, 0),
        ],
        "surb": surb_vector(small(3), 21),
        "key_schedule": key_schedule_vector(41),
        "failures": failure_vectors(),
        "pow": {
            "replay_tag": hex::encode(tag.0),
            "difficulty": 12,
            "nonce": hex::encode(nonce),
            "work_bits": pow::work_bits(&tag, &nonce),
        },
    })
}
