//! The test harness of `transport.rs`: keys and configurations, a listening node and a dialer
//! with their channels and counters, raw Noise dials through the core API (node, client, an
//! old-version peer) and a recording connection gate.

use super::*;

pub(crate) const WAIT: Duration = Duration::from_secs(5);

pub(crate) fn cfg(packet_len: usize) -> LinkConfig {
    LinkConfig::new(Geometry::new(packet_len, 3).unwrap()).unwrap()
}

pub(crate) fn key() -> Arc<LinkKeypair> {
    Arc::new(LinkKeypair::generate().unwrap())
}

pub(crate) struct Node {
    pub(crate) listener: Listener,
    pub(crate) rx: mpsc::Receiver<Inbound>,
    pub(crate) counters: Arc<LinkCounters>,
    pub(crate) stop: watch::Sender<bool>,
}

pub(crate) async fn listen_on(addr: SocketAddr, config: ListenerConfig, inbound_cap: usize) -> Node {
    let (tx, rx) = mpsc::channel(inbound_cap);
    let (stop, shutdown) = watch::channel(false);
    let counters = Arc::new(LinkCounters::default());
    let listener = Listener::bind(addr, config, tx, counters.clone(), shutdown).await.unwrap();
    Node { listener, rx, counters, stop }
}

pub(crate) async fn listen(link: LinkConfig, kp: &Arc<LinkKeypair>, allowed: &[LinkPublicKey], clients: bool) -> Node {
    let mut config = ListenerConfig::new(link, kp.clone(), Arc::new(allowed.iter().copied().collect::<HashSet<_>>()));
    config.accept.clients = clients;
    listen_on("127.0.0.1:0".parse().unwrap(), config, 64).await
}

pub(crate) struct Dialer {
    pub(crate) links: OutboundLinks,
    pub(crate) rx: mpsc::Receiver<Inbound>,
    pub(crate) counters: Arc<LinkCounters>,
    pub(crate) _stop: watch::Sender<bool>,
}

pub(crate) fn dialer(mut config: DialerConfig, directory: &[(LinkPublicKey, SocketAddr)]) -> Dialer {
    config.backoff = Backoff { initial: Duration::from_millis(20), max: Duration::from_millis(200) };
    let (tx, rx) = mpsc::channel(64);
    let (stop, shutdown) = watch::channel(false);
    let counters = Arc::new(LinkCounters::default());
    let dir: HashMap<_, _> = directory.iter().copied().collect();
    let links = OutboundLinks::new(config, Arc::new(dir), tx, counters.clone(), shutdown).unwrap();
    Dialer { links, rx, counters, _stop: stop }
}

pub(crate) async fn recv(rx: &mut mpsc::Receiver<Inbound>) -> Inbound {
    tokio::time::timeout(WAIT, rx.recv()).await.expect("packet in time").expect("channel open")
}

pub(crate) async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The first flight of a node that was not upgraded: version 1 (classical
/// only, empty payload) or version 2 (hybrid, the 1,184-byte `ek` payload).
pub(crate) fn old_node_flight(version: u8, link: &LinkConfig, old: &LinkKeypair, server: &LinkPublicKey) -> Vec<u8> {
    let mut flight = b"NOX1".to_vec();
    flight.extend([version, 0x01, 0x01]);
    flight.extend(link.geometry().identifier());
    let params = LinkKind::Node.protocol_name(CipherSuite::AesGcm).parse().unwrap();
    let mut hs = snow::Builder::new(params)
        .prologue(&flight)
        .unwrap()
        .local_private_key(old.secret_bytes())
        .unwrap()
        .remote_public_key(server.as_bytes())
        .unwrap()
        .build_initiator()
        .unwrap();
    let payload = if version == 1 { vec![] } else { vec![7; KEM_EK_LEN] };
    let mut msg = vec![0u8; 96 + payload.len() + 16];
    let n = hs.write_message(&payload, &mut msg).unwrap();
    flight.extend(&msg[..n]);
    flight
}

/// Dials `addr` as a client with the core API, through message 2, and
/// returns the raw stream and the session, whose mailbox record is not sent.
pub(crate) async fn raw_client(
    addr: SocketAddr,
    link: &LinkConfig,
    server: &LinkPublicKey,
    mailbox: &Mailbox,
) -> (TcpStream, Session) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let (init, first) = Initiator::client(link, server, Some(mailbox)).unwrap();
    s.write_all(&first).await.unwrap();
    let mut resp = [0u8; RESPONSE_LEN];
    s.read_exact(&mut resp).await.unwrap();
    (s, init.finish(&resp).unwrap())
}

/// Dials `addr` as node `kp` with the core API and returns the raw stream and session.
pub(crate) async fn raw_link(
    addr: SocketAddr,
    link: &LinkConfig,
    kp: &LinkKeypair,
    server: &LinkPublicKey,
) -> (TcpStream, Session) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let (init, first) = Initiator::node(link, kp, server).unwrap();
    s.write_all(&first).await.unwrap();
    let mut resp = [0u8; RESPONSE_LEN];
    s.read_exact(&mut resp).await.unwrap();
    (s, init.finish(&resp).unwrap())
}

pub(crate) fn ka_unknown() -> LinkPublicKey {
    LinkPublicKey([0xEE; 32])
}

/// A gate that refuses after `allow` admissions and records what it hears.
#[derive(Default)]
pub(crate) struct RecordingGate {
    pub(crate) allow: usize,
    pub(crate) admitted: std::sync::Mutex<usize>,
    pub(crate) offences: std::sync::atomic::AtomicUsize,
    pub(crate) closed: std::sync::atomic::AtomicUsize,
}

impl ConnectionGate for RecordingGate {
    fn admit(&self, _peer: std::net::IpAddr) -> bool {
        let mut admitted = self.admitted.lock().unwrap();
        *admitted += 1;
        *admitted <= self.allow
    }
    fn offence(&self, _peer: std::net::IpAddr) {
        self.offences.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn closed(&self, _peer: std::net::IpAddr, stage: GateStage) {
        assert_eq!(stage, GateStage::Accepted, "no handshake completed in this test");
        self.closed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}
