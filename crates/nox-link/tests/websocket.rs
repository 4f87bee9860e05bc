//! The WebSocket client link (docs/spec/link.md §5) over loopback: a round
//! trip through the dialer and the listener, and each bad input refused,
//! closed and counted while the listener keeps serving.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nox_link::transport::*;
use nox_link::*;
use nox_sphinx::Geometry;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(5);

fn cfg(packet_len: usize) -> LinkConfig {
    LinkConfig::new(Geometry::new(packet_len, 3).unwrap()).unwrap()
}

fn key() -> Arc<LinkKeypair> {
    Arc::new(LinkKeypair::generate().unwrap())
}

/// Admits up to `allow` connections and counts what it hears.
#[derive(Default)]
struct Gate {
    allow: usize,
    admitted: AtomicUsize,
    offences: AtomicUsize,
    closed: AtomicUsize,
}

impl ConnectionGate for Gate {
    fn admit(&self, _peer: IpAddr) -> bool {
        self.admitted.fetch_add(1, SeqCst) < self.allow
    }
    fn offence(&self, _peer: IpAddr) {
        self.offences.fetch_add(1, SeqCst);
    }
    fn closed(&self, _peer: IpAddr, _stage: GateStage) {
        self.closed.fetch_add(1, SeqCst);
    }
}

struct Entry {
    listener: Listener,
    ws: SocketAddr,
    key: Arc<LinkKeypair>,
    rx: mpsc::Receiver<Inbound>,
    counters: Arc<LinkCounters>,
    gate: Arc<Gate>,
    _stop: watch::Sender<bool>,
}

async fn entry(link: LinkConfig, allow: usize, tweak: impl FnOnce(&mut ListenerConfig)) -> Entry {
    let key = key();
    let gate = Arc::new(Gate { allow, ..Gate::default() });
    let mut config = ListenerConfig::new(link, key.clone(), Arc::new(HashSet::new()));
    config.accept.clients = true;
    config.gate = gate.clone();
    tweak(&mut config);
    let (tx, rx) = mpsc::channel(64);
    let (stop, shutdown) = watch::channel(false);
    let counters = Arc::new(LinkCounters::default());
    let mut listener =
        Listener::bind("127.0.0.1:0".parse().unwrap(), config, tx, counters.clone(), shutdown).await.unwrap();
    let ws = listener.bind_websocket("127.0.0.1:0".parse().unwrap(), WsListenerConfig::default()).await.unwrap();
    Entry { listener, ws, key, rx, counters, gate, _stop: stop }
}

struct Client {
    links: OutboundLinks,
    rx: mpsc::Receiver<Inbound>,
    counters: Arc<LinkCounters>,
    _stop: watch::Sender<bool>,
}

fn ws_client(link: LinkConfig, entry: &Entry, mailbox: Option<Mailbox>) -> Client {
    let mut config = DialerConfig::client(link);
    config.transport = Transport::WebSocket;
    config.mailbox = mailbox;
    config.backoff = Backoff { initial: Duration::from_millis(20), max: Duration::from_millis(200) };
    let (tx, rx) = mpsc::channel(64);
    let (stop, shutdown) = watch::channel(false);
    let counters = Arc::new(LinkCounters::default());
    let dir: HashMap<_, _> = [(entry.key.public(), entry.ws)].into_iter().collect();
    let links = OutboundLinks::new(config, Arc::new(dir), tx, counters.clone(), shutdown).unwrap();
    Client { links, rx, counters, _stop: stop }
}

async fn recv(rx: &mut mpsc::Receiver<Inbound>) -> Inbound {
    tokio::time::timeout(WAIT, rx.recv()).await.expect("packet in time").expect("channel open")
}

async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A WebSocket client at the protocol level: the upgrade only.
async fn raw_ws(addr: SocketAddr) -> WebSocketStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    tokio_tungstenite::client_async(format!("ws://{addr}/"), tcp).await.unwrap().0
}

/// Waits until the server ends the connection (close, error or end of stream).
async fn closed_by_server(ws: &mut WebSocketStream<TcpStream>) {
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match ws.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the entry did not close the connection");
}

/// A client dialing over WebSocket sends a packet to its entry and gets a
/// reply through the mailbox it registered: the same handshake, mailbox
/// record and records as over TCP.
async fn round_trip(e: &mut Entry, link: LinkConfig, tag: u8) {
    let mailbox = Mailbox([tag; 32]);
    let mut client = ws_client(link, e, Some(mailbox));
    client.links.send(&e.key.public(), vec![tag; link.packet_len()]).unwrap();
    let got = recv(&mut e.rx).await;
    assert!(matches!(got.from, PeerIdentity::Client(_, ip) if ip == IpAddr::from([127, 0, 0, 1])));
    assert_eq!(got.packet, vec![tag; link.packet_len()]);
    e.listener.send_to_mailbox(&mailbox, vec![tag ^ 0xff; link.packet_len()]).unwrap();
    let back = recv(&mut client.rx).await;
    assert_eq!((back.from, back.packet), (PeerIdentity::Node(e.key.public()), vec![tag ^ 0xff; link.packet_len()]));
    assert_eq!(client.counters.snapshot().ws_connections, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_client_link_carries_packets_both_ways() {
    let link = cfg(2048);
    let mut e = entry(link, usize::MAX, |_| {}).await;
    round_trip(&mut e, link, 0x21).await;
    let c = e.counters.snapshot();
    assert_eq!((c.ws_connections, c.handshakes_ok, c.ws_protocol_errors, c.ws_upgrade_failures), (1, 1, 0, 0));
    assert_eq!(e.gate.offences.load(SeqCst), 0);
    // Each record travelled as one binary message of exactly record_len bytes.
    let mut ws = raw_ws(e.ws).await;
    let (init, first) = Initiator::client(&link, &e.key.public(), None).unwrap();
    ws.send(Message::Binary(first.into())).await.unwrap();
    let Some(Ok(Message::Binary(reply))) = ws.next().await else { panic!("no message 2") };
    assert_eq!(reply.len(), RESPONSE_LEN, "message 2 is one binary message");
    let mut session = init.finish(&reply).unwrap();
    let mut tail = Vec::new();
    session.write_mailbox_record(&mut tail).unwrap();
    ws.send(Message::Binary(tail.into())).await.unwrap();
    eventually("second link established", || e.counters.snapshot().handshakes_ok == 2).await;
    let (mut seal, _) = session.into_parts();
    let mut record = Vec::new();
    seal.seal_into(&vec![3; link.packet_len()], &mut record).unwrap();
    ws.send(Message::Binary(record.into())).await.unwrap();
    let PeerIdentity::Client(id, _) = recv(&mut e.rx).await.from else { panic!("not a client") };
    e.listener.send_to_client(id, vec![4; link.packet_len()]).unwrap();
    let Some(Ok(Message::Binary(record))) = ws.next().await else { panic!("no record") };
    assert_eq!(record.len(), link.record_len());
}

/// Each bad input is refused or cut, counted, and reported to the gate as an
/// offence; the entry keeps serving: a good client afterwards works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_websocket_input_is_closed_and_counted_and_the_entry_keeps_serving() {
    let link = cfg(2048);
    let mut e = entry(link, usize::MAX, |c| c.handshake_timeout = Duration::from_millis(400)).await;

    // Garbage after the upgrade: a frame with reserved bits set.
    let mut ws = raw_ws(e.ws).await;
    ws.get_mut().write_all(&[0xff; 64]).await.unwrap();
    closed_by_server(&mut ws).await;
    eventually("garbage counted", || e.counters.snapshot().ws_protocol_errors == 1).await;
    eventually("garbage is an offence", || e.gate.offences.load(SeqCst) == 1).await;

    // A text message.
    let mut ws = raw_ws(e.ws).await;
    ws.send(Message::text("hello")).await.unwrap();
    closed_by_server(&mut ws).await;
    eventually("text counted", || e.counters.snapshot().ws_protocol_errors == 2).await;
    eventually("text is an offence", || e.gate.offences.load(SeqCst) == 2).await;

    // A binary message one byte over the limit (refused on its frame header).
    let mut ws = raw_ws(e.ws).await;
    let _ = ws.send(Message::Binary(vec![0; ws_max_message(&link) + 1].into())).await;
    closed_by_server(&mut ws).await;
    eventually("oversize counted", || e.counters.snapshot().ws_protocol_errors == 3).await;
    eventually("oversize is an offence", || e.gate.offences.load(SeqCst) == 3).await;

    // A continuation frame with no message to continue (FIN, opcode 0, masked, empty).
    let mut ws = raw_ws(e.ws).await;
    ws.get_mut().write_all(&[0x80, 0x80, 1, 2, 3, 4]).await.unwrap();
    closed_by_server(&mut ws).await;
    eventually("stray continuation counted", || e.counters.snapshot().ws_protocol_errors == 4).await;

    // A slow client: upgrades, then never sends its handshake.
    let started = tokio::time::Instant::now();
    let mut ws = raw_ws(e.ws).await;
    closed_by_server(&mut ws).await;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(350) && waited < Duration::from_secs(3), "cut after {waited:?}");
    eventually("timeout counted", || e.counters.snapshot().handshake_timeouts == 1).await;
    eventually("timeout is an offence", || e.gate.offences.load(SeqCst) == 5).await;

    // A node handshake over WebSocket: refused (clients only).
    let mut ws = raw_ws(e.ws).await;
    let node = key();
    let (_init, first) = Initiator::node(&link, &node, &e.key.public()).unwrap();
    ws.send(Message::Binary(first.into())).await.unwrap();
    closed_by_server(&mut ws).await;
    eventually("node refused", || e.gate.offences.load(SeqCst) == 6).await;

    // A raw HTTP request that is no upgrade.
    let mut tcp = TcpStream::connect(e.ws).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    eventually("bad upgrade counted", || e.counters.snapshot().ws_upgrade_failures == 1).await;

    let c = e.counters.snapshot();
    assert_eq!((c.handshakes_ok, c.frames_in), (0, 0));
    // Still serving.
    round_trip(&mut e, link, 0x42).await;
}

/// A client that stops reading is disconnected when a write does not finish
/// within the write timeout; its queue is bounded (`QueueFull`), never grown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_disconnected_not_buffered() {
    let link = cfg(16 * 1024);
    let mut e = entry(link, usize::MAX, |c| {
        c.write_timeout = Duration::from_millis(300);
        c.client_queue = 8;
    })
    .await;
    // A small receive buffer so the entry's writes stall quickly.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let tcp = socket.connect(e.ws).await.unwrap();
    let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{}/", e.ws), tcp).await.unwrap();
    let (init, first) = Initiator::client(&link, &e.key.public(), None).unwrap();
    ws.send(Message::Binary(first.into())).await.unwrap();
    let Some(Ok(Message::Binary(reply))) = ws.next().await else { panic!("no message 2") };
    let mut session = init.finish(&reply).unwrap();
    let mut tail = Vec::new();
    session.write_mailbox_record(&mut tail).unwrap();
    ws.send(Message::Binary(tail.into())).await.unwrap();
    let (mut seal, _) = session.into_parts();
    let mut record = Vec::new();
    seal.seal_into(&vec![9; link.packet_len()], &mut record).unwrap();
    ws.send(Message::Binary(record.into())).await.unwrap();
    let PeerIdentity::Client(id, _) = recv(&mut e.rx).await.from else { panic!("not a client") };
    // From here the client reads nothing.
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut full = 0;
    loop {
        match e.listener.send_to_client(id, vec![1; link.packet_len()]) {
            Ok(()) => {}
            Err(SendError::QueueFull) => full += 1,
            Err(SendError::UnknownPeer) => break,
            Err(other) => panic!("unexpected {other:?}"),
        }
        assert!(tokio::time::Instant::now() < deadline, "a client that does not read was never disconnected");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(full > 0, "the queue filled and refused instead of growing");
    let c = e.counters.snapshot();
    assert!(c.dropped_link_down >= 1 && c.links_closed == 1, "{c:?}");
    drop(ws);
    round_trip(&mut e, link, 0x17).await;
}

/// The gate (per-address limits of nox-admission) and the connection limit
/// see WebSocket connections on accept, before the upgrade.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_and_the_connection_limit_apply_to_websocket_connections() {
    let link = cfg(2048);
    let e = entry(link, 1, |_| {}).await;
    let _held = raw_ws(e.ws).await;
    let tcp = TcpStream::connect(e.ws).await.unwrap();
    let refused = tokio::time::timeout(WAIT, tokio_tungstenite::client_async(format!("ws://{}/", e.ws), tcp)).await;
    assert!(matches!(refused, Ok(Err(_))), "a connection over the gate's limit must not be upgraded");
    eventually("gate refusal counted", || e.counters.snapshot().rejected_by_gate == 1).await;
    assert_eq!(e.gate.admitted.load(SeqCst), 2);

    let f = entry(link, usize::MAX, |c| c.max_connections = 1).await;
    let _held = raw_ws(f.ws).await;
    let tcp = TcpStream::connect(f.ws).await.unwrap();
    let refused = tokio::time::timeout(WAIT, tokio_tungstenite::client_async(format!("ws://{}/", f.ws), tcp)).await;
    assert!(matches!(refused, Ok(Err(_))), "a connection over the limit must not be upgraded");
    eventually("limit counted", || f.counters.snapshot().rejected_connection_limit == 1).await;
    // The limit is shared with the TCP listener.
    let mut tcp = TcpStream::connect(f.listener.local_addr()).await.unwrap();
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(WAIT, tokio::io::AsyncReadExt::read(&mut tcp, &mut buf)).await.unwrap().unwrap_or(0);
    assert_eq!(n, 0);
    eventually("shared limit counted", || f.counters.snapshot().rejected_connection_limit == 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_without_clients_refuses_a_websocket_address() {
    let (tx, _rx) = mpsc::channel(1);
    let (_stop, shutdown) = watch::channel(false);
    let config = ListenerConfig::new(cfg(2048), key(), Arc::new(HashSet::new()));
    let mut l = Listener::bind("127.0.0.1:0".parse().unwrap(), config, tx, Arc::default(), shutdown).await.unwrap();
    let err = l.bind_websocket("127.0.0.1:0".parse().unwrap(), WsListenerConfig::default()).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}
