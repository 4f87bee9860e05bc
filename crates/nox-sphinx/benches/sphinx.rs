//! Criterion benchmarks: per-hop breakdown, construction, SURBs, PoW, tags.
//!
//! Run: `cargo bench -p nox-sphinx --bench sphinx`
//! Results and the machine they were measured on: docs/benchmarks/sphinx.md.

mod lioness;

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use nox_sphinx::{
    Blinding, BuildOptions, Geometry, HeaderView, NodeId, PathHop, Processed, Scheme, SecretKey,
    bench_internals as inner, build_forward, build_surb, pow, process_packet,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn setup(hops: usize, seed: u64) -> (Geometry, Vec<SecretKey>, Vec<PathHop>, ChaCha20Rng) {
    setup_for(Scheme::Ristretto255, Blinding::default(), hops, seed)
}

/// A 32 KiB geometry of `scheme` (at least 3 hops) and a path of `hops` fresh keys.
fn setup_for(
    scheme: Scheme,
    blinding: Blinding,
    hops: usize,
    seed: u64,
) -> (Geometry, Vec<SecretKey>, Vec<PathHop>, ChaCha20Rng) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let geometry = Geometry::with_scheme(32_768, hops.max(3), scheme).expect("geometry").with_blinding(blinding);
    let keys: Vec<SecretKey> = (0..hops).map(|_| SecretKey::generate_for(scheme, &mut rng)).collect();
    let path = nox_test_support::sphinx::hops(&keys);
    (geometry, keys, path, rng)
}

/// One forward hop of `packet`. A fresh copy per iteration, made just before
/// it: the packet is in cache, as in the node, where the link layer has just
/// decrypted it. (Batched set-up would clone ~100 packets first, ~3 MB, and
/// time cache misses that a node does not have.)
fn bench_hop(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    geometry: &Geometry,
    key: &SecretKey,
    packet: &[u8],
) {
    group.bench_function(name, |b| {
        b.iter_batched_ref(
            || packet.to_vec(),
            |p| {
                let out = process_packet(geometry, key, p);
                assert!(matches!(out, Ok(Processed::Forward { .. })));
            },
            BatchSize::PerIteration,
        )
    });
}

fn per_hop(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_hop");
    for (name, blinding) in [("additive", Blinding::Additive), ("multiplicative", Blinding::Multiplicative)] {
        let (geometry, keys, path, mut rng) = setup_for(Scheme::Ristretto255, blinding, 3, 1);
        let packet = build_forward(&geometry, &BuildOptions::new(1), &path, &[7u8; 256], &mut rng).expect("build");
        bench_hop(&mut group, &format!("process_forward_hop_32KiB_{name}"), &geometry, &keys[0], &packet);
    }
    let (geometry, keys, path, mut rng) = setup(3, 1);
    let packet = build_forward(&geometry, &BuildOptions::new(1), &path, &[7u8; 256], &mut rng).expect("build");
    let alpha: [u8; 32] = packet[8..40].try_into().expect("alpha");
    let point = inner::decode_alpha(&alpha).expect("point");
    let scalar = inner::Scalar::from_bytes_mod_order_wide(&[3u8; 64]);
    group.bench_function("decode_alpha", |b| b.iter(|| inner::decode_alpha(black_box(&alpha))));
    group.bench_function("shared_secret", |b| b.iter(|| inner::shared_secret(&keys[0], black_box(&point))));
    group.bench_function("blinding_multiplicative", |b| {
        b.iter(|| inner::blind_multiplicative(black_box(&point), &scalar))
    });
    group.bench_function("blinding_additive", |b| b.iter(|| inner::blind_additive(black_box(&point), &scalar)));
    group.bench_function("key_derivation", |b| b.iter(|| inner::derive_hop_keys(black_box(&alpha), &[5u8; 32])));
    let routing = &packet[geometry.routing_range()];
    group.bench_function("header_mac", |b| b.iter(|| inner::header_mac(&[1; 32], &packet[..8], black_box(routing))));
    group.bench_function("routing_decrypt", |b| {
        let mut buf = vec![0u8; geometry.routing_len() + 64];
        b.iter(|| inner::xor_keystream(&[2; 16], black_box(&mut buf)))
    });
    group.bench_function("blake3_keyed_32KiB", |b| {
        let body = packet[geometry.header_len()..].to_vec();
        b.iter(|| blake3::keyed_hash(&[4; 32], black_box(&body)))
    });
    group.bench_function("aes_ctr_32KiB", |b| {
        let mut body = packet[geometry.header_len()..].to_vec();
        b.iter(|| inner::xor_keystream(&[4; 16], black_box(&mut body)))
    });
    group.bench_function("body_hctr2_decrypt", |b| {
        let mut body = packet[geometry.header_len()..].to_vec();
        b.iter(|| inner::body_decrypt(&[4; 16], black_box(&mut body)))
    });
    // The body cipher before 2026-11-26, measured in the same run.
    lioness::check();
    group.bench_function("body_lioness_decrypt", |b| {
        let mut body = packet[geometry.header_len()..].to_vec();
        b.iter(|| lioness::Lioness::new(black_box(&[4; 32])).decrypt(black_box(&mut body)))
    });
    let view = HeaderView::parse(&geometry, &packet).expect("view");
    let tag = view.replay_tag();
    group.bench_function("replay_tag", |b| b.iter(|| black_box(&view).replay_tag()));
    group.bench_function("pow_verify", |b| b.iter(|| black_box(&view).check_work(&tag, 0)));
    group.finish();
}

fn construction(c: &mut Criterion) {
    let mut group = c.benchmark_group("create");
    for hops in [1usize, 2, 3, 5] {
        let (geometry, _, path, mut rng) = setup(hops, 2);
        let options = BuildOptions::new(1);
        group.bench_function(format!("forward_{hops}_hops"), |b| {
            b.iter(|| build_forward(&geometry, &options, &path, &[7u8; 256], &mut rng).expect("build"))
        });
    }
    let (geometry, keys, path, mut rng) = setup(3, 3);
    let options = BuildOptions::new(1);
    group.bench_function("surb_3_hops", |b| {
        b.iter(|| build_surb(&geometry, &options, &path, NodeId([9; 32]), &mut rng).expect("surb"))
    });
    let (surb, recovery) = build_surb(&geometry, &options, &path, NodeId([9; 32]), &mut rng).expect("surb");
    let mut reply = surb.clone().into_reply(&geometry, &[1u8; 1000]).expect("reply");
    group.bench_function("surb_reply_package", |b| {
        b.iter(|| surb.clone().into_reply(&geometry, &[1u8; 1000]).expect("reply"))
    });
    let mut outcome = None;
    for key in &keys {
        outcome = Some(process_packet(&geometry, key, &mut reply).expect("hop"));
    }
    let Some(Processed::Reply { surb_id, body, .. }) = outcome else { panic!("no reply") };
    group
        .bench_function("surb_reply_open", |b| b.iter(|| recovery.open(&surb_id, &reply[body.clone()]).expect("open")));
    // A fresh tag per iteration: the solving cost of one fixed tag is one
    // fixed draw of a geometric variable, not the average.
    let mut counter = 0u64;
    group.sample_size(20);
    group.bench_function("pow_solve_12_bits_mean_over_tags", |b| {
        b.iter(|| {
            counter += 1;
            let tag = nox_sphinx::ReplayTag(*blake3::hash(&counter.to_le_bytes()).as_bytes());
            pow::solve(&tag, 12, 1)
        })
    });
    group.finish();
}

/// Every scheme side by side in one run (docs/benchmarks/sphinx.md, "Post-quantum
/// geometries"): the forward hop, 3-hop creation, and the KEM alone.
fn schemes(c: &mut Criterion) {
    let mut group = c.benchmark_group("schemes");
    for scheme in Scheme::ALL {
        let (geometry, keys, path, mut rng) = setup_for(scheme, Blinding::default(), 3, 4);
        let packet = build_forward(&geometry, &BuildOptions::new(1), &path, &[7u8; 256], &mut rng).expect("build");
        bench_hop(&mut group, &format!("hop_32KiB_{scheme}"), &geometry, &keys[0], &packet);
        let options = BuildOptions::new(1);
        group.bench_function(format!("create_3_hops_{scheme}"), |b| {
            b.iter(|| build_forward(&geometry, &options, &path, &[7u8; 256], &mut rng).expect("build"))
        });
        if scheme.is_kem() {
            let public = keys[0].public_key();
            let (ct, _) = inner::encapsulate(&public, &[5u8; 64]).expect("encapsulate");
            group.bench_function(format!("decapsulate_{scheme}"), |b| {
                b.iter(|| inner::decapsulate(&keys[0], black_box(&ct)).expect("decapsulate"))
            });
            group.bench_function(format!("encapsulate_{scheme}"), |b| {
                b.iter(|| inner::encapsulate(&public, black_box(&[5u8; 64])).expect("encapsulate"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, per_hop, construction, schemes);
criterion_main!(benches);
