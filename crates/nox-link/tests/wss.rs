//! `wss://` (docs/spec/link.md §5.3) over loopback with a throwaway CA made here: a native
//! client's link through a TLS entry, the certificate swapped while links are open, bad
//! certificate files refused with their reason, and TLS garbage (plain HTTP, an untrusting
//! client, silence) closed, counted and harmless.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, SystemTime};

use nox_link::transport::*;
use nox_link::*;
use nox_sphinx::Geometry;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

const WAIT: Duration = Duration::from_secs(5);

fn link() -> LinkConfig {
    LinkConfig::new(Geometry::new(1024, 3).unwrap()).unwrap()
}

/// A throwaway CA and server certificates it signs for `127.0.0.1`.
struct Ca {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
        Self { issuer: rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap() }
    }

    /// A server certificate for `127.0.0.1` (PEM) and its key (PEM, PKCS#8).
    fn leaf(&self) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        (params.signed_by(&key, &self.issuer).unwrap().pem(), key.serialize_pem())
    }

    fn write_root(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, self.issuer.pem()).unwrap();
        path
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nox-wss-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the pair and moves both modification times forward by `bump` seconds (so a change
/// shows even on a file system with coarse timestamps).
fn write_pair(dir: &Path, (cert, key): &(String, String), bump: u64) -> (PathBuf, PathBuf) {
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&c, cert).unwrap();
    std::fs::write(&k, key).unwrap();
    let when = SystemTime::now() + Duration::from_secs(bump);
    for p in [&c, &k] {
        std::fs::File::options().write(true).open(p).unwrap().set_modified(when).unwrap();
    }
    (c, k)
}

fn der_of(pem: &str) -> CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
}

#[derive(Default)]
struct Gate {
    offences: AtomicUsize,
}

impl ConnectionGate for Gate {
    fn admit(&self, _peer: IpAddr) -> bool {
        true
    }
    fn offence(&self, _peer: IpAddr) {
        self.offences.fetch_add(1, SeqCst);
    }
    fn closed(&self, _peer: IpAddr, _stage: GateStage) {}
}

struct Entry {
    listener: Listener,
    wss: SocketAddr,
    key: Arc<LinkKeypair>,
    rx: mpsc::Receiver<Inbound>,
    counters: Arc<LinkCounters>,
    gate: Arc<Gate>,
    _stop: watch::Sender<bool>,
}

async fn tls_entry(cert: &Arc<TlsCertificate>, upgrade_timeout: Duration) -> Entry {
    let key = Arc::new(LinkKeypair::generate().unwrap());
    let gate = Arc::new(Gate::default());
    let mut config = ListenerConfig::new(link(), key.clone(), Arc::new(HashSet::new()));
    config.accept.clients = true;
    config.gate = gate.clone();
    let (tx, rx) = mpsc::channel(64);
    let (stop, shutdown) = watch::channel(false);
    let counters = Arc::new(LinkCounters::default());
    let mut listener =
        Listener::bind("127.0.0.1:0".parse().unwrap(), config, tx, counters.clone(), shutdown).await.unwrap();
    let ws = WsListenerConfig { upgrade_timeout };
    let wss =
        listener.bind_websocket_tls("127.0.0.1:0".parse().unwrap(), ws, cert.server_config().unwrap()).await.unwrap();
    Entry { listener, wss, key, rx, counters, gate, _stop: stop }
}

/// The topology as a native client sees it: the entry's WebSocket endpoint, marked `wss://`.
struct Wss(LinkPublicKey, SocketAddr);

impl PeerDirectory for Wss {
    fn address(&self, peer: &LinkPublicKey) -> Option<SocketAddr> {
        (*peer == self.0).then_some(self.1)
    }
    fn websocket_tls(&self, peer: &LinkPublicKey) -> bool {
        *peer == self.0
    }
}

struct Client {
    links: OutboundLinks,
    rx: mpsc::Receiver<Inbound>,
    counters: Arc<LinkCounters>,
    _stop: watch::Sender<bool>,
}

fn wss_client(entry: &Entry, tls: Option<Arc<rustls::ClientConfig>>, mailbox: Mailbox) -> Client {
    let mut config = DialerConfig::client(link());
    config.transport = Transport::WebSocket;
    config.tls = tls;
    config.mailbox = Some(mailbox);
    config.backoff = Backoff { initial: Duration::from_millis(20), max: Duration::from_millis(200) };
    let (tx, rx) = mpsc::channel(64);
    let (stop, shutdown) = watch::channel(false);
    let counters = Arc::new(LinkCounters::default());
    let dir = Arc::new(Wss(entry.key.public(), entry.wss));
    let links = OutboundLinks::new(config, dir, tx, counters.clone(), shutdown).unwrap();
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

/// One packet up from the client and one reply down through its mailbox.
async fn round_trip(e: &mut Entry, client: &mut Client, mailbox: Mailbox, tag: u8) {
    let len = link().packet_len();
    client.links.send(&e.key.public(), vec![tag; len]).unwrap();
    let got = recv(&mut e.rx).await;
    assert!(matches!(got.from, PeerIdentity::Client(..)));
    assert_eq!(got.packet, vec![tag; len]);
    e.listener.send_to_mailbox(&mailbox, vec![!tag; len]).unwrap();
    assert_eq!(recv(&mut client.rx).await.packet, vec![!tag; len]);
}

/// The certificate a fresh TLS connection to `addr` is shown (trusting `tls`'s roots). No
/// session resumption: a resumed session reports the certificate of the session it resumes.
async fn presented(addr: SocketAddr, tls: Arc<rustls::ClientConfig>) -> CertificateDer<'static> {
    let mut tls = (*tls).clone();
    tls.resumption = rustls::client::Resumption::disabled();
    let tls = Arc::new(tls);
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::IpAddress(addr.ip().into());
    let stream = tokio_rustls::TlsConnector::from(tls).connect(name, tcp).await.expect("TLS handshake");
    stream.get_ref().1.peer_certificates().unwrap()[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_client_links_to_a_tls_entry_and_gets_its_reply() {
    let dir = scratch("trip");
    let ca = Ca::new("NOX test CA");
    let (cert, key) = write_pair(&dir, &ca.leaf(), 0);
    let certificate = TlsCertificate::load(&cert, &key).unwrap();
    let mut e = tls_entry(&certificate, Duration::from_secs(2)).await;
    let roots = client_config_with_roots(&ca.write_root(&dir)).unwrap();
    let mailbox = Mailbox([7; 32]);
    let mut client = wss_client(&e, Some(roots), mailbox);
    round_trip(&mut e, &mut client, mailbox, 0x5a).await;
    let (server, dialer) = (e.counters.snapshot(), client.counters.snapshot());
    assert_eq!((server.ws_connections, server.ws_tls_failures, server.handshakes_ok), (1, 0, 1));
    assert_eq!((dialer.ws_connections, dialer.ws_tls_failures), (1, 0));
    assert_eq!(e.gate.offences.load(SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_certificate_serves_new_connections_and_open_links_keep_going() {
    let dir = scratch("swap");
    let ca = Ca::new("NOX test CA");
    let first = ca.leaf();
    let (cert, key) = write_pair(&dir, &first, 0);
    let certificate = TlsCertificate::load(&cert, &key).unwrap();
    let mut e = tls_entry(&certificate, Duration::from_secs(2)).await;
    let roots = client_config_with_roots(&ca.write_root(&dir)).unwrap();
    let mailbox = Mailbox([1; 32]);
    let mut open = wss_client(&e, Some(roots.clone()), mailbox);
    round_trip(&mut e, &mut open, mailbox, 1).await;
    assert_eq!(presented(e.wss, roots.clone()).await, der_of(&first.0));

    // Nothing changed: nothing reloaded.
    assert!(!certificate.reload_if_changed().unwrap());
    // The renewal lands on disk; the watcher notices within a few periods.
    let (_stop_watch, watch_rx) = watch::channel(false);
    let watcher = certificate.clone().watch(Duration::from_millis(20), watch_rx);
    let second = ca.leaf();
    write_pair(&dir, &second, 5);
    eventually("the watcher to load the new certificate", || certificate.chain()[0] == der_of(&second.0)).await;
    watcher.abort();

    // A connection after the swap is shown the new certificate ...
    assert_eq!(presented(e.wss, roots.clone()).await, der_of(&second.0));
    // ... and the link opened before it carries packets both ways, on its old session.
    round_trip(&mut e, &mut open, mailbox, 2).await;
    assert_eq!(open.counters.snapshot().reconnects, 0, "the open link was not interrupted");
    // A new client links under the new certificate.
    let mailbox2 = Mailbox([2; 32]);
    let mut fresh = wss_client(&e, Some(roots), mailbox2);
    round_trip(&mut e, &mut fresh, mailbox2, 3).await;

    // A renewal that does not load (a key from another certificate) keeps the one in use.
    let third = ca.leaf();
    write_pair(&dir, &(third.0.clone(), ca.leaf().1), 10);
    assert!(matches!(certificate.reload_if_changed(), Err(TlsError::Mismatch { .. })));
    assert_eq!(certificate.chain()[0], der_of(&second.0));
    // Once both files are right, it loads.
    write_pair(&dir, &third, 15);
    assert!(certificate.reload_if_changed().unwrap());
    assert_eq!(certificate.chain()[0], der_of(&third.0));
}

#[tokio::test]
async fn bad_certificate_files_are_refused_with_their_reason() {
    let dir = scratch("bad");
    let ca = Ca::new("NOX test CA");
    let (cert_pem, key_pem) = ca.leaf();
    let (cert, key) = write_pair(&dir, &(cert_pem.clone(), key_pem.clone()), 0);
    let missing = dir.join("missing.pem");
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a PEM file\n").unwrap();
    let other_key = dir.join("other-key.pem");
    std::fs::write(&other_key, rcgen::KeyPair::generate().unwrap().serialize_pem()).unwrap();

    assert!(matches!(TlsCertificate::load(&missing, &key), Err(TlsError::Read { path, .. }) if path == missing));
    assert!(matches!(TlsCertificate::load(&cert, &missing), Err(TlsError::Read { path, .. }) if path == missing));
    assert!(matches!(TlsCertificate::load(&junk, &key), Err(TlsError::NoCertificate { .. })));
    assert!(matches!(TlsCertificate::load(&cert, &junk), Err(TlsError::NoKey { .. })));
    // A certificate in the key file, a key in the certificate file.
    assert!(matches!(TlsCertificate::load(&key, &cert), Err(TlsError::NoCertificate { .. })));
    assert!(matches!(TlsCertificate::load(&cert, &other_key), Err(TlsError::Mismatch { .. })));
    let message = TlsCertificate::load(&cert, &other_key).unwrap_err().to_string();
    assert!(message.contains("cert.pem") && message.contains("other-key.pem"), "{message}");
    assert!(TlsCertificate::load(&cert, &key).is_ok());
    // The roots file of a native client.
    assert!(matches!(client_config_with_roots(&junk), Err(TlsError::NoCertificate { .. })));
    assert!(matches!(client_config_with_roots(&missing), Err(TlsError::Read { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_untrusting_and_silent_clients_cost_the_entry_nothing() {
    let dir = scratch("junk");
    let ca = Ca::new("NOX test CA");
    let (cert, key) = write_pair(&dir, &ca.leaf(), 0);
    let certificate = TlsCertificate::load(&cert, &key).unwrap();
    let mut e = tls_entry(&certificate, Duration::from_millis(300)).await;

    // A plain-HTTP WebSocket upgrade on the TLS port: refused, the connection closed at once.
    let mut plain = TcpStream::connect(e.wss).await.unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        .await
        .unwrap();
    let mut sink = Vec::new();
    let read = tokio::time::timeout(WAIT, plain.read_to_end(&mut sink)).await.expect("closed in time");
    assert!(read.is_err() || !sink.starts_with(b"HTTP/1.1 101"), "no upgrade over plain HTTP");
    eventually("the plain-HTTP failure to be counted", || e.counters.snapshot().ws_tls_failures == 1).await;

    // A client that does not trust the certificate (another CA) fails its handshake on both sides.
    let stranger = client_config_with_roots(&Ca::new("another CA").write_root(&scratch("junk-other"))).unwrap();
    let tcp = TcpStream::connect(e.wss).await.unwrap();
    let name = ServerName::IpAddress(e.wss.ip().into());
    assert!(tokio_rustls::TlsConnector::from(stranger.clone()).connect(name, tcp).await.is_err());
    eventually("the refused handshake to be counted", || e.counters.snapshot().ws_tls_failures == 2).await;
    // So does the node's own dialer with that trust: counted, no link.
    let refused = wss_client(&e, Some(stranger), Mailbox([9; 32]));
    refused.links.connect(&e.key.public()).unwrap();
    eventually("the dialer to count its TLS failure", || refused.counters.snapshot().ws_tls_failures >= 1).await;
    // And one without any TLS settings does not dial a wss:// endpoint in the clear.
    let bare = wss_client(&e, None, Mailbox([8; 32]));
    bare.links.connect(&e.key.public()).unwrap();
    eventually("the bare dialer to count its TLS failure", || bare.counters.snapshot().ws_tls_failures >= 1).await;
    assert_eq!(bare.counters.snapshot().ws_connections, 0);

    // A client that connects and says nothing is dropped after the upgrade timeout.
    let before = e.counters.snapshot().ws_tls_failures;
    let mut silent = TcpStream::connect(e.wss).await.unwrap();
    let mut byte = [0u8; 1];
    let ended = tokio::time::timeout(WAIT, silent.read(&mut byte)).await.expect("silent client dropped in time");
    assert!(matches!(ended, Ok(0) | Err(_)));
    eventually("the timeout to be counted", || e.counters.snapshot().ws_tls_failures > before).await;
    assert!(e.counters.snapshot().handshake_timeouts >= 1);
    drop((refused, bare));

    // None of it reached the link layer, each was an offence, and the entry still serves.
    assert_eq!(e.counters.snapshot().ws_connections, 0);
    assert!(e.gate.offences.load(SeqCst) >= 4);
    let roots = client_config_with_roots(&ca.write_root(&dir)).unwrap();
    let mailbox = Mailbox([3; 32]);
    let mut client = wss_client(&e, Some(roots), mailbox);
    round_trip(&mut e, &mut client, mailbox, 0x33).await;
    assert_eq!(e.counters.snapshot().ws_connections, 1);
}
