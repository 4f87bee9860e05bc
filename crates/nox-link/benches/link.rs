//! Link cipher, handshake (hybrid vs classical) and throughput benchmarks.
//! Results: docs/benchmarks/link.md.
//!
//! cargo bench -p nox-link --bench link -- --warm-up-time 1 --measurement-time 3

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::KeyInit;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use libcrux_ml_kem::mlkem768;
use nox_link::transport::{DialerConfig, LinkCounters, Listener, ListenerConfig, OutboundLinks};
use nox_link::{
    Accept, CipherSuite, FrameOpener, FrameSealer, Initiator, LinkConfig, LinkKeypair, LinkKind, Mailbox, Responder,
    Session,
};
use nox_sphinx::Geometry;
use tokio::sync::{mpsc, watch};

const CIPHERS: [(CipherSuite, &str); 2] = [(CipherSuite::AesGcm, "aesgcm"), (CipherSuite::ChaChaPoly, "chachapoly")];

/// A whole handshake, both sides: for a client link through its mailbox
/// record (the client's mailbox, sealed and opened under the hybrid keys).
fn handshake(config: &LinkConfig, client: Option<&LinkKeypair>, server: &LinkKeypair) -> (Session, Session) {
    let mailbox = Mailbox([0x5a; 32]);
    let (init, first) = match client {
        Some(kp) => Initiator::node(config, kp, &server.public()).unwrap(),
        None => Initiator::client(config, &server.public(), Some(&mailbox)).unwrap(),
    };
    let mut r = Responder::new(config, server, Accept { clients: true, ..Accept::default() });
    let (_, hello) = r.feed(&first).unwrap();
    let (reply, mut s) = hello.unwrap().accept().unwrap();
    let mut c = init.finish(&reply).unwrap();
    let mut mailbox_record = Vec::new();
    c.write_mailbox_record(&mut mailbox_record).unwrap();
    s.feed_mailbox_record(&mailbox_record).unwrap();
    assert!(s.is_established());
    (c, s)
}

fn pair(cipher: CipherSuite) -> (FrameSealer, FrameOpener) {
    let config = LinkConfig::new(Geometry::default()).unwrap().with_cipher(cipher);
    let (a, b) = (LinkKeypair::generate().unwrap(), LinkKeypair::generate().unwrap());
    let (c, s) = handshake(&config, Some(&a), &b);
    (c.into_parts().0, s.into_parts().1)
}

fn transport(c: &mut Criterion) {
    let mut g = c.benchmark_group("transport_32k");
    g.throughput(Throughput::Bytes(32_768));
    let packet = vec![0x5a; 32_768];
    for (cipher, name) in CIPHERS {
        let (mut tx, mut rx) = pair(cipher);
        let mut wire = Vec::with_capacity(32_784);
        g.bench_function(format!("seal_open/{name}"), |b| {
            b.iter(|| {
                wire.clear();
                tx.seal_into(black_box(&packet), &mut wire).unwrap();
                black_box(rx.feed(&wire).unwrap())
            })
        });
        let (mut tx, _) = pair(cipher);
        g.bench_function(format!("seal/{name}"), |b| {
            b.iter(|| {
                wire.clear();
                tx.seal_into(black_box(&packet), &mut wire).unwrap();
                black_box(wire.len())
            })
        });
    }
    // Reference: snow's own transport mode (aes-gcm 0.10, copies in and out),
    // which this crate replaces with its own CipherState on aes-gcm 0.11.
    for (cipher, name) in CIPHERS {
        let params: snow::params::NoiseParams =
            format!("Noise_NN_25519_{}_BLAKE2s", cipher.noise_name()).parse().unwrap();
        let mut i = snow::Builder::new(params.clone()).build_initiator().unwrap();
        let mut r = snow::Builder::new(params).build_responder().unwrap();
        let (mut m, mut p) = ([0u8; 128], [0u8; 128]);
        let n = i.write_message(&[], &mut m).unwrap();
        r.read_message(&m[..n], &mut p).unwrap();
        let n = r.write_message(&[], &mut m).unwrap();
        i.read_message(&m[..n], &mut p).unwrap();
        let (mut i, mut r) = (i.into_transport_mode().unwrap(), r.into_transport_mode().unwrap());
        let (mut wire, mut out) = (vec![0u8; 32_784], vec![0u8; 32_768]);
        g.bench_function(format!("snow_seal_open/{name}"), |b| {
            b.iter(|| {
                i.write_message(black_box(&packet), &mut wire).unwrap();
                black_box(r.read_message(&wire, &mut out).unwrap())
            })
        });
    }
    g.finish();
}

/// The version 1 handshake (classical X25519 only), kept here and only here
/// as the baseline of the hybrid one: the same Noise patterns, prologue and
/// payloads (empty, or the client's mailbox in message 1, as version 1 sent
/// it), the raw split into the same AEAD objects.
fn classical_handshake(config: &LinkConfig, client: Option<&LinkKeypair>, server: &LinkKeypair) -> [Aes256Gcm; 4] {
    let kind = if client.is_some() { LinkKind::Node } else { LinkKind::Client };
    let mut prologue = b"NOX1\x01".to_vec();
    prologue.extend([kind.to_byte(), config.cipher().to_byte()]);
    prologue.extend(config.geometry().identifier());
    let params: snow::params::NoiseParams = kind.protocol_name(config.cipher()).parse().unwrap();
    let server_public = server.public();
    let mut b = snow::Builder::new(params.clone()).prologue(&prologue).unwrap();
    b = b.remote_public_key(server_public.as_bytes()).unwrap();
    if let Some(kp) = client {
        b = b.local_private_key(kp.secret_bytes()).unwrap();
    }
    let mut i = b.build_initiator().unwrap();
    let mut r = snow::Builder::new(params)
        .prologue(&prologue)
        .unwrap()
        .local_private_key(server.secret_bytes())
        .unwrap()
        .build_responder()
        .unwrap();
    let payload: &[u8] = if client.is_some() { &[] } else { &[0; 32] };
    let (mut m, mut p) = ([0u8; 128], [0u8; 128]);
    let n = i.write_message(payload, &mut m).unwrap();
    r.read_message(&m[..n], &mut p).unwrap();
    let n = r.write_message(&[], &mut m).unwrap();
    i.read_message(&m[..n], &mut p).unwrap();
    let ((a, b), (c, d)) = (i.dangerously_get_raw_split(), r.dangerously_get_raw_split());
    [a, b, c, d].map(|k| Aes256Gcm::new(&k.into()))
}

fn handshakes(c: &mut Criterion) {
    let mut g = c.benchmark_group("handshake");
    let config = LinkConfig::new(Geometry::default()).unwrap();
    let (a, b) = (LinkKeypair::generate().unwrap(), LinkKeypair::generate().unwrap());
    g.bench_function("node_ik_both_sides", |bench| bench.iter(|| black_box(handshake(&config, Some(&a), &b))));
    g.bench_function("client_nk_both_sides", |bench| bench.iter(|| black_box(handshake(&config, None, &b))));
    g.bench_function("classical_node_ik_both_sides", |bench| {
        bench.iter(|| black_box(classical_handshake(&config, Some(&a), &b)))
    });
    g.bench_function("classical_client_nk_both_sides", |bench| {
        bench.iter(|| black_box(classical_handshake(&config, None, &b)))
    });
    g.finish();

    // The parts the hybrid exchange adds, one call each (libcrux picks AVX2 at run time).
    let mut g = c.benchmark_group("hybrid_parts");
    let mut seed = [0u8; 64];
    let mut m = [0u8; 32];
    g.bench_function("mlkem768_keygen", |bench| {
        bench.iter(|| {
            seed[0] = seed[0].wrapping_add(1);
            black_box(mlkem768::generate_key_pair(black_box(seed)))
        })
    });
    let pair = mlkem768::generate_key_pair([7; 64]);
    g.bench_function("mlkem768_validate_encaps", |bench| {
        bench.iter(|| {
            m[0] = m[0].wrapping_add(1);
            let ek = mlkem768::MlKem768PublicKey::from(black_box(pair.pk()));
            assert!(mlkem768::validate_public_key(&ek));
            black_box(mlkem768::encapsulate(&ek, m))
        })
    });
    let (ct, _) = mlkem768::encapsulate(pair.public_key(), [9; 32]);
    g.bench_function("mlkem768_decaps", |bench| {
        bench.iter(|| black_box(mlkem768::decapsulate(pair.private_key(), black_box(&ct))))
    });
    let material = [0x11u8; 96];
    g.bench_function("combine_both_directions", |bench| {
        bench.iter(|| {
            black_box(blake3::derive_key("NOX link v2 hybrid i2r", black_box(&material)));
            black_box(blake3::derive_key("NOX link v2 hybrid r2i", black_box(&material)))
        })
    });
    g.finish();
}

/// One node-to-node link over 127.0.0.1: `OutboundLinks::send_wait` to
/// `Listener` inbound channel, 32 KiB packets, both ends in this process on
/// a 2-worker runtime.
fn loopback(c: &mut Criterion) {
    let mut g = c.benchmark_group("loopback_link");
    g.throughput(Throughput::Elements(1));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    for (cipher, name) in CIPHERS {
        let config = LinkConfig::new(Geometry::default()).unwrap().with_cipher(cipher);
        let (ka, kb) = (Arc::new(LinkKeypair::generate().unwrap()), Arc::new(LinkKeypair::generate().unwrap()));
        let (_stop, shutdown) = watch::channel(false);
        let (links, mut rx, peer) = rt.block_on(async {
            let (tx, rx) = mpsc::channel(1024);
            let allowed: HashSet<_> = [ka.public()].into_iter().collect();
            let lc = ListenerConfig::new(config, kb.clone(), Arc::new(allowed));
            let counters = Arc::new(LinkCounters::default());
            let l = Listener::bind("127.0.0.1:0".parse().unwrap(), lc, tx, counters.clone(), shutdown.clone())
                .await
                .unwrap();
            let dir: HashMap<_, _> = [(kb.public(), l.local_addr())].into_iter().collect();
            let (itx, _irx) = mpsc::channel(1);
            let links = OutboundLinks::new(
                DialerConfig::node(config, ka.clone()),
                Arc::new(dir),
                itx,
                counters,
                shutdown.clone(),
            )
            .unwrap();
            std::mem::forget(l); // keep accepting for the whole run
            (links, rx, kb.public())
        });
        g.bench_function(format!("frames/{name}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    let sender = links.clone();
                    let send = tokio::spawn(async move {
                        for _ in 0..iters {
                            sender.send_wait(&peer, vec![0u8; 32_768]).await.unwrap();
                        }
                    });
                    for _ in 0..iters {
                        black_box(tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap());
                    }
                    send.await.unwrap();
                    start.elapsed()
                })
            })
        });
    }
    g.finish();
}

/// A client link's upstream records per second over TCP and over WebSocket (docs/spec/link.md
/// §5), same listener, same cipher: the cost of the WebSocket framing and adapter.
fn loopback_client(c: &mut Criterion) {
    use nox_link::transport::{Transport, WsListenerConfig};
    let mut g = c.benchmark_group("loopback_client_link");
    g.throughput(Throughput::Elements(1));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    for (transport, name) in [(Transport::Tcp, "tcp"), (Transport::WebSocket, "websocket")] {
        let config = LinkConfig::new(Geometry::default()).unwrap();
        let kb = Arc::new(LinkKeypair::generate().unwrap());
        let (_stop, shutdown) = watch::channel(false);
        let (links, mut rx, peer) = rt.block_on(async {
            let (tx, rx) = mpsc::channel(1024);
            let mut lc = ListenerConfig::new(config, kb.clone(), Arc::new(HashSet::new()));
            lc.accept.clients = true;
            let counters = Arc::new(LinkCounters::default());
            let mut l = Listener::bind("127.0.0.1:0".parse().unwrap(), lc, tx, counters.clone(), shutdown.clone())
                .await
                .unwrap();
            let ws = l.bind_websocket("127.0.0.1:0".parse().unwrap(), WsListenerConfig::default()).await.unwrap();
            let addr = if transport == Transport::WebSocket { ws } else { l.local_addr() };
            let dir: HashMap<_, _> = [(kb.public(), addr)].into_iter().collect();
            let (itx, irx) = mpsc::channel(1);
            std::mem::forget(irx); // a client link needs its inbound receiver open
            let links = OutboundLinks::new(
                DialerConfig { transport, ..DialerConfig::client(config) },
                Arc::new(dir),
                itx,
                counters,
                shutdown.clone(),
            )
            .unwrap();
            std::mem::forget(l); // keep accepting for the whole run
            (links, rx, kb.public())
        });
        g.bench_function(format!("frames/{name}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    let sender = links.clone();
                    let send = tokio::spawn(async move {
                        for _ in 0..iters {
                            sender.send_wait(&peer, vec![0u8; 32_768]).await.unwrap();
                        }
                    });
                    for _ in 0..iters {
                        black_box(tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap());
                    }
                    send.await.unwrap();
                    start.elapsed()
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, transport, handshakes, loopback, loopback_client);
criterion_main!(benches);
