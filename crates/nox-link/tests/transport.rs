//! The tokio shell over loopback (127.0.0.1, port 0).
//!
//! The harness (nodes, dialers, raw dials, the recording gate) is in `transport_util/`.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nox_link::transport::*;
use nox_link::*;
use nox_sphinx::Geometry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

mod transport_util;
use transport_util::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_client_links_get_the_greeting_first_then_broadcasts() {
    let link = cfg(1024);
    let entry = key();
    let difficulty = Arc::new(std::sync::atomic::AtomicU8::new(7));
    let mut config = ListenerConfig::new(link, entry.clone(), Arc::new(HashSet::new()));
    config.accept.clients = true;
    let current = difficulty.clone();
    config.client_greeting = Some(Arc::new(move || {
        Some(nox_link::encode_difficulty(1024, current.load(std::sync::atomic::Ordering::Relaxed)))
    }));
    let mut node = listen_on("127.0.0.1:0".parse().unwrap(), config, 64).await;
    let mut client = dialer(DialerConfig::client(link), &[(entry.public(), node.listener.local_addr())]);
    client.links.send(&entry.public(), vec![5; 1024]).unwrap();
    let got = recv(&mut node.rx).await;
    assert!(matches!(got.from, PeerIdentity::Client(..)));
    // The greeting was queued right after the handshake, before anything else.
    let first = recv(&mut client.rx).await;
    assert_eq!(first.packet, nox_link::encode_difficulty(1024, 7));
    // A change is broadcast to every connected client.
    difficulty.store(11, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(node.listener.broadcast_to_clients(&nox_link::encode_difficulty(1024, 11)), 1);
    assert_eq!(recv(&mut client.rx).await.packet, nox_link::encode_difficulty(1024, 11));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_greeting_of_the_wrong_length_is_dropped_and_counted() {
    let link = cfg(1024);
    let entry = key();
    let mut config = ListenerConfig::new(link, entry.clone(), Arc::new(HashSet::new()));
    config.accept.clients = true;
    config.client_greeting = Some(Arc::new(|| Some(vec![2, 9])));
    let mut node = listen_on("127.0.0.1:0".parse().unwrap(), config, 64).await;
    let mut client = dialer(DialerConfig::client(link), &[(entry.public(), node.listener.local_addr())]);
    client.links.send(&entry.public(), vec![5; 1024]).unwrap();
    let PeerIdentity::Client(id, _) = recv(&mut node.rx).await.from else { panic!("not a client link") };
    node.listener.send_to_client(id, vec![6; 1024]).unwrap();
    assert_eq!(recv(&mut client.rx).await.packet, vec![6; 1024]);
    assert!(node.counters.snapshot().dropped_bad_length >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_links_carry_packets_both_ways() {
    let link = cfg(1024);
    let (ka, kb) = (key(), key());
    let mut a = listen(link, &ka, &[kb.public()], false).await;
    let mut b = listen(link, &kb, &[ka.public()], false).await;
    let da = dialer(DialerConfig::node(link, ka.clone()), &[(kb.public(), b.listener.local_addr())]);
    let db = dialer(DialerConfig::node(link, kb.clone()), &[(ka.public(), a.listener.local_addr())]);
    da.links.send(&kb.public(), vec![1; 1024]).unwrap();
    let got = recv(&mut b.rx).await;
    assert_eq!((got.from, got.packet), (PeerIdentity::Node(ka.public()), vec![1; 1024]));
    db.links.send(&ka.public(), vec![2; 1024]).unwrap();
    let got = recv(&mut a.rx).await;
    assert_eq!((got.from, got.packet), (PeerIdentity::Node(kb.public()), vec![2; 1024]));
    assert_eq!(b.counters.snapshot().handshakes_ok, 1);
    // Counted just after the packet is handed over: the receiver can be first.
    eventually("frames_in", || b.counters.snapshot().frames_in == 1).await;
    eventually("frames_out", || da.counters.snapshot().frames_out == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_link_carries_packets_both_ways() {
    let link = cfg(1024).with_cipher(CipherSuite::ChaChaPoly);
    let entry = key();
    let mut node = listen(link, &entry, &[], true).await;
    let mut client = dialer(DialerConfig::client(link), &[(entry.public(), node.listener.local_addr())]);
    client.links.send(&entry.public(), vec![5; 1024]).unwrap();
    let got = recv(&mut node.rx).await;
    let PeerIdentity::Client(id, ip) = got.from else { panic!("client link seen as {:?}", got.from) };
    assert_eq!(ip, std::net::IpAddr::from([127, 0, 0, 1]), "the client's remote address, for its rate limit");
    node.listener.send_to_client(id, vec![6; 1024]).unwrap();
    let back = recv(&mut client.rx).await;
    assert_eq!((back.from, back.packet), (PeerIdentity::Node(entry.public()), vec![6; 1024]));
    assert_eq!(node.listener.send_to_client(ClientId(id.0 + 1), vec![6; 1024]), Err(SendError::UnknownPeer));
    assert_eq!(node.listener.send_to_client(id, vec![6; 10]), Err(SendError::WrongLength { got: 10, expected: 1024 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_reach_the_client_that_registered_the_mailbox() {
    let link = cfg(1024);
    let gateway = key();
    let node = listen(link, &gateway, &[], true).await;
    let addr = node.listener.local_addr();
    let mailbox = Mailbox([0x5a; 32]);
    let mut with = DialerConfig::client(link);
    with.mailbox = Some(mailbox);
    let mut receiver = dialer(with, &[(gateway.public(), addr)]);
    let mut other = dialer(DialerConfig::client(link), &[(gateway.public(), addr)]);
    receiver.links.connect(&gateway.public()).unwrap();
    other.links.connect(&gateway.public()).unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    let record = |b: u8| {
        let mut r = vec![b; 1024];
        encode_reply_in_place(&mut r, 256, &[b; 16]).unwrap();
        r
    };
    // The link comes up asynchronously: retry until the mailbox is known.
    while node.listener.send_to_mailbox(&mailbox, record(1)).is_err() {
        assert!(tokio::time::Instant::now() < deadline, "mailbox never registered");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let got = recv(&mut receiver.rx).await;
    assert_eq!(got.from, PeerIdentity::Node(gateway.public()));
    match parse_downstream(&got.packet, 256).unwrap() {
        Downstream::Reply { surb_id, body } => assert_eq!((surb_id, body), ([1; 16], &[1u8; 768][..])),
        other => panic!("expected a reply, got {other:?}"),
    }
    assert_eq!(node.listener.send_to_mailbox(&Mailbox([9; 32]), record(2)), Err(SendError::UnknownPeer));
    assert_eq!(node.listener.broadcast_to_clients(&encode_difficulty(1024, 12)), 2);
    assert_eq!(parse_downstream(&recv(&mut other.rx).await.packet, 256).unwrap(), Downstream::Difficulty(12));
    assert_eq!(parse_downstream(&recv(&mut receiver.rx).await.packet, 256).unwrap(), Downstream::Difficulty(12));
    assert!(other.rx.try_recv().is_err(), "the reply went only to the mailbox's link");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_node_key_is_rejected_and_counted() {
    let link = cfg(1024);
    let (kb, stranger, friend) = (key(), key(), key());
    let mut b = listen(link, &kb, &[friend.public()], false).await;
    let d = dialer(DialerConfig::node(link, stranger), &[(kb.public(), b.listener.local_addr())]);
    d.links.send(&kb.public(), vec![1; 1024]).unwrap();
    eventually("rejection", || b.counters.snapshot().rejected_unauthenticated >= 1).await;
    eventually("dialer sees failure", || d.counters.snapshot().handshakes_failed >= 1).await;
    let s = b.counters.snapshot();
    assert_eq!((s.handshakes_ok, s.frames_in), (0, 0));
    assert!(b.rx.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_with_other_geometry_fails_the_handshake() {
    let (kb, ka) = (key(), key());
    let mut b = listen(cfg(1024), &kb, &[ka.public()], false).await;
    let d = dialer(DialerConfig::node(cfg(2048), ka), &[(kb.public(), b.listener.local_addr())]);
    d.links.send(&kb.public(), vec![1; 2048]).unwrap();
    eventually("listener failure", || b.counters.snapshot().handshakes_failed >= 1).await;
    eventually("dialer failure", || d.counters.snapshot().handshakes_failed >= 1).await;
    assert_eq!(b.counters.snapshot().handshakes_ok, 0);
    assert!(b.rx.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_1_and_2_peers_are_closed_at_once_not_left_hanging() {
    let link = cfg(1024);
    let (kb, old) = (key(), key());
    let b = listen(link, &kb, &[old.public()], false).await;
    for (i, version) in [1u8, 2].into_iter().enumerate() {
        let flight = old_node_flight(version, &link, &old, &kb.public());
        let mut s = TcpStream::connect(b.listener.local_addr()).await.unwrap();
        s.write_all(&flight).await.unwrap();
        // Closed without an answer, well before the 5 s handshake timeout.
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await.unwrap().unwrap_or(0);
        assert_eq!(n, 0, "no answer to version {version}, connection closed");
        eventually("failure counted", || b.counters.snapshot().handshakes_failed > i as u64).await;
    }
    let c = b.counters.snapshot();
    assert_eq!((c.handshakes_ok, c.handshake_timeouts, c.handshakes_failed), (0, 0, 2));
}

/// A client that completes the Noise handshake but never sends its mailbox
/// record is refused (`MailboxRecordMissing`) when the handshake timeout
/// runs out: the link is never established, nothing it sends afterwards is
/// read, and its mailbox is never registered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_sends_its_mailbox_record_is_refused_within_the_bound() {
    let link = cfg(1024);
    let entry = key();
    let mut config = ListenerConfig::new(link, entry.clone(), Arc::new(HashSet::new()));
    config.accept.clients = true;
    config.handshake_timeout = Duration::from_millis(300);
    let mut node = listen_on("127.0.0.1:0".parse().unwrap(), config, 8).await;
    let mailbox = Mailbox([0x6b; 32]);
    let started = tokio::time::Instant::now();
    let (mut s, _session) = raw_client(node.listener.local_addr(), &link, &entry.public(), &mailbox).await;
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(WAIT, s.read(&mut buf)).await.expect("closed by the listener").unwrap_or(0);
    assert_eq!(n, 0, "no record was sent to a link that is not established");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(250) && waited < Duration::from_secs(3), "closed after {waited:?}");
    let c = node.counters.snapshot();
    assert_eq!((c.handshakes_ok, c.handshakes_failed, c.handshake_timeouts), (0, 1, 1));
    assert_eq!(node.listener.send_to_mailbox(&mailbox, vec![0; 1024]), Err(SendError::UnknownPeer));
    assert!(node.rx.try_recv().is_err());
}

/// A tampered mailbox record, or a record where the mailbox record should
/// be, fails at once (`MailboxRecordAuth`), not at the timeout; a valid one
/// fed a byte at a time establishes the link and registers the mailbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_mailbox_record_is_refused_at_once_and_a_good_one_registers() {
    let link = cfg(1024);
    let entry = key();
    let mut node = listen(link, &entry, &[], true).await;
    let addr = node.listener.local_addr();
    let mailbox = Mailbox([0x6c; 32]);
    for (i, garbage) in [false, true].into_iter().enumerate() {
        let (mut s, mut session) = raw_client(addr, &link, &entry.public(), &mailbox).await;
        let mut wire = Vec::new();
        assert_eq!(session.write_mailbox_record(&mut wire).unwrap(), MAILBOX_RECORD_LEN);
        if garbage {
            wire = vec![0xAB; 1040];
        } else {
            wire[5] ^= 0x01;
        }
        s.write_all(&wire).await.unwrap();
        let mut buf = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await.unwrap().unwrap_or(0);
        assert_eq!(n, 0, "closed");
        eventually("failure counted", || node.counters.snapshot().handshakes_failed > i as u64).await;
    }
    let c = node.counters.snapshot();
    assert_eq!((c.handshakes_ok, c.handshake_timeouts, c.frames_in), (0, 0, 0));

    let (mut s, mut session) = raw_client(addr, &link, &entry.public(), &mailbox).await;
    let mut wire = Vec::new();
    session.write_mailbox_record(&mut wire).unwrap();
    let (mut tx, _) = session.into_parts();
    tx.seal_into(&[8; 1024], &mut wire).unwrap();
    for byte in &wire[..MAILBOX_RECORD_LEN] {
        s.write_all(std::slice::from_ref(byte)).await.unwrap();
    }
    s.write_all(&wire[MAILBOX_RECORD_LEN..]).await.unwrap();
    let got = recv(&mut node.rx).await;
    assert!(matches!(got.from, PeerIdentity::Client(..)));
    assert_eq!(got.packet, vec![8; 1024]);
    let mut reply = vec![3; 1024];
    encode_reply_in_place(&mut reply, 256, &[3; 16]).unwrap();
    node.listener.send_to_mailbox(&mailbox, reply).unwrap();
    assert_eq!(node.counters.snapshot().handshakes_ok, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_truncation_close_only_that_link() {
    let link = cfg(1024);
    let (kb, good, bad) = (key(), key(), key());
    let mut b = listen(link, &kb, &[good.public(), bad.public()], false).await;
    let addr = b.listener.local_addr();
    let d = dialer(DialerConfig::node(link, good.clone()), &[(kb.public(), addr)]);
    d.links.send(&kb.public(), vec![1; 1024]).unwrap();
    assert_eq!(recv(&mut b.rx).await.packet, vec![1; 1024]);

    // Garbage where a record should be: decrypt error, link closed by the listener.
    let (mut s, _) = raw_link(addr, &link, &bad, &kb.public()).await;
    s.write_all(&[0xAB; 1040]).await.unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(tokio::time::timeout(WAIT, s.read(&mut buf)).await.unwrap().unwrap_or(0), 0, "closed");
    assert_eq!(b.counters.snapshot().dropped_decrypt, 1);

    // One valid record, then half a record and a close: one in, one truncated.
    let (mut s, session) = raw_link(addr, &link, &bad, &kb.public()).await;
    let (mut tx, _) = session.into_parts();
    let mut wire = Vec::new();
    tx.seal_into(&[3; 1024], &mut wire).unwrap();
    tx.seal_into(&[4; 1024], &mut wire).unwrap();
    s.write_all(&wire[..1040 + 520]).await.unwrap();
    drop(s);
    let got = recv(&mut b.rx).await;
    assert_eq!((got.from, got.packet), (PeerIdentity::Node(bad.public()), vec![3; 1024]));
    eventually("truncation counted", || b.counters.snapshot().dropped_truncated == 1).await;

    // Garbage instead of a handshake.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[0x55; 200]).await.unwrap();
    eventually("handshake failure", || b.counters.snapshot().handshakes_failed == 1).await;

    // The first link is untouched.
    d.links.send(&kb.public(), vec![2; 1024]).unwrap();
    let got = recv(&mut b.rx).await;
    assert_eq!((got.from, got.packet), (PeerIdentity::Node(good.public()), vec![2; 1024]));
    assert_eq!(d.counters.snapshot().reconnects, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_inbound_channel_drops_and_counts() {
    let link = cfg(1024);
    let (kb, ka) = (key(), key());
    let allowed = ka.public();
    let config = ListenerConfig::new(link, kb.clone(), Arc::new(move |k: &LinkPublicKey| *k == allowed));
    let b = listen_on("127.0.0.1:0".parse().unwrap(), config, 1).await;
    let d = dialer(DialerConfig::node(link, ka), &[(kb.public(), b.listener.local_addr())]);
    for i in 0..10u8 {
        d.links.send_wait(&kb.public(), vec![i; 1024]).await.unwrap();
    }
    eventually("all 10 accounted for", || {
        let s = b.counters.snapshot();
        s.frames_in + s.dropped_inbound_full == 10
    })
    .await;
    let s = b.counters.snapshot();
    assert_eq!((s.frames_in, s.dropped_inbound_full), (1, 9), "nobody reads: one fits, nine dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_peer_does_not_stall_the_others() {
    let link = LinkConfig::new(Geometry::default()).unwrap();
    let (ka, good, sink) = (key(), key(), key());
    let mut g = listen(link, &good, &[ka.public()], false).await;
    // A peer that completes the handshake and then never reads.
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sink_addr = tcp.local_addr().unwrap();
    let sink_key = sink.clone();
    let hold = tokio::spawn(async move {
        let (mut s, _) = tcp.accept().await.unwrap();
        let mut r = Responder::new(&link, &sink_key, Accept::default());
        let mut buf = [0u8; 256];
        let hello = loop {
            let n = s.read(&mut buf[..r.wanted()]).await.unwrap();
            if let (_, Some(h)) = r.feed(&buf[..n]).unwrap() {
                break h;
            }
        };
        let (reply, _session) = hello.accept().unwrap();
        s.write_all(&reply).await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(s);
    });
    let mut config = DialerConfig::node(link, ka.clone());
    config.queue_len = 4;
    let d = dialer(config, &[(good.public(), g.listener.local_addr()), (sink.public(), sink_addr)]);
    let packet = vec![7u8; link.packet_len()];
    // Flood the sink until its kernel buffers and its queue are full.
    let mut full = 0;
    for _ in 0..2000 {
        if d.links.send(&sink.public(), packet.clone()) == Err(SendError::QueueFull) {
            full += 1;
            if full > 50 {
                break;
            }
        }
        tokio::task::yield_now().await;
    }
    assert!(full > 50, "the sink's queue never filled");
    assert!(d.links.queue_depths().contains(&(sink.public(), 4)));
    // Meanwhile the good peer gets every packet.
    for i in 0..20u8 {
        d.links.send_wait(&good.public(), vec![i; link.packet_len()]).await.unwrap();
        assert_eq!(recv(&mut g.rx).await.packet[0], i);
    }
    let s = d.counters.snapshot();
    assert!(s.dropped_outbound_full >= 50);
    eventually("frames_in", || g.counters.snapshot().frames_in == 20).await;
    hold.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_after_the_listener_restarts() {
    let link = cfg(1024);
    let (kb, ka) = (key(), key());
    let mut b = listen(link, &kb, &[ka.public()], false).await;
    let addr = b.listener.local_addr();
    let d = dialer(DialerConfig::node(link, ka.clone()), &[(kb.public(), addr)]);
    d.links.send(&kb.public(), vec![1; 1024]).unwrap();
    assert_eq!(recv(&mut b.rx).await.packet, vec![1; 1024]);

    b.stop.send(true).unwrap();
    tokio::time::timeout(WAIT, b.listener.join()).await.expect("listener stops");
    eventually("dialer notices", || d.counters.snapshot().links_closed >= 1).await;

    let config = ListenerConfig::new(link, kb.clone(), Arc::new([ka.public()].into_iter().collect::<HashSet<_>>()));
    let mut b2 = listen_on(addr, config, 64).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let got = loop {
        assert!(tokio::time::Instant::now() < deadline, "no packet after restart");
        let _ = d.links.send(&kb.public(), vec![2; 1024]);
        if let Ok(Some(p)) = tokio::time::timeout(Duration::from_millis(50), b2.rx.recv()).await {
            break p;
        }
    };
    assert_eq!(got.packet, vec![2; 1024]);
    let s = d.counters.snapshot();
    assert!(s.reconnects >= 1 && s.handshakes_ok == 2, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connection_hits_the_handshake_timeout() {
    let kb = key();
    let mut config = ListenerConfig::new(cfg(1024), kb, Arc::new(HashSet::new()));
    config.handshake_timeout = Duration::from_millis(100);
    let b = listen_on("127.0.0.1:0".parse().unwrap(), config, 4).await;
    let mut s = TcpStream::connect(b.listener.local_addr()).await.unwrap();
    s.write_all(&b"NOX1"[..]).await.unwrap();
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(WAIT, s.read(&mut buf)).await.expect("closed by the listener").unwrap_or(0);
    assert_eq!(n, 0);
    let snap = b.counters.snapshot();
    assert_eq!((snap.handshake_timeouts, snap.handshakes_failed), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_errors_are_typed_and_shutdown_is_graceful() {
    let link = cfg(1024);
    let (kb, ka) = (key(), key());
    let mut b = listen(link, &kb, &[ka.public()], false).await;
    let (tx, _rx) = mpsc::channel(4);
    let (stop, shutdown) = watch::channel(false);
    let counters = Arc::new(LinkCounters::default());
    let dir: HashMap<_, _> = [(kb.public(), b.listener.local_addr())].into_iter().collect();
    let links =
        OutboundLinks::new(DialerConfig::node(link, ka), Arc::new(dir), tx, counters.clone(), shutdown).unwrap();
    assert_eq!(links.send(&ka_unknown(), vec![0; 1024]), Err(SendError::UnknownPeer));
    assert_eq!(links.send(&kb.public(), vec![0; 1025]), Err(SendError::WrongLength { got: 1025, expected: 1024 }));
    assert_eq!(counters.snapshot().dropped_bad_length, 1);
    links.send(&kb.public(), vec![0; 1024]).unwrap();
    recv(&mut b.rx).await;

    stop.send(true).unwrap();
    b.stop.send(true).unwrap();
    tokio::time::timeout(WAIT, links.join()).await.expect("peer tasks stop");
    tokio::time::timeout(WAIT, b.listener.join()).await.expect("listener stops");
    assert_eq!(links.send(&kb.public(), vec![0; 1024]), Err(SendError::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_refuses_before_the_handshake_and_hears_offences() {
    use std::sync::atomic::Ordering::SeqCst;
    let link = cfg(1024);
    let kb = key();
    let gate = Arc::new(RecordingGate { allow: 1, ..RecordingGate::default() });
    let mut config = ListenerConfig::new(link, kb.clone(), Arc::new(HashSet::new()));
    config.gate = gate.clone();
    let b = listen_on("127.0.0.1:0".parse().unwrap(), config, 8).await;
    let addr = b.listener.local_addr();

    // First connection admitted: garbage is an offence, then it closes.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[0x55; 200]).await.unwrap();
    let mut buf = [0u8; 1];
    let _ = tokio::time::timeout(WAIT, s.read(&mut buf)).await;
    eventually("offence heard", || gate.offences.load(SeqCst) == 1).await;
    eventually("close heard", || gate.closed.load(SeqCst) == 1).await;

    // Second connection: refused by the gate, before any handshake.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let read = tokio::time::timeout(WAIT, s.read(&mut buf)).await.unwrap().unwrap_or(0);
    assert_eq!(read, 0, "refused connection must be closed");
    eventually("refusal counted", || b.counters.snapshot().rejected_by_gate == 1).await;
    assert_eq!(b.counters.snapshot().handshakes_failed, 1);
    let _ = b.stop.send(true);
}

/// The arrival instant is taken at the read, not when the consumer dequeues the packet: a
/// packet that waits in the inbound channel keeps its arrival time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arrival_instant_is_stamped_at_the_read() {
    let link = cfg(1024);
    let entry = key();
    let mut config = ListenerConfig::new(link, entry.clone(), Arc::new(HashSet::new()));
    config.accept.clients = true;
    let mut node = listen_on("127.0.0.1:0".parse().unwrap(), config, 64).await;
    let client = dialer(DialerConfig::client(link), &[(entry.public(), node.listener.local_addr())]);
    client.links.send(&entry.public(), vec![5; 1024]).unwrap();
    eventually("the packet was read", || node.counters.snapshot().frames_in == 1).await;
    let read_by = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let got = recv(&mut node.rx).await;
    assert!(got.received_at <= read_by, "stamped at the read, not at the dequeue 150 ms later");
}
