//! Streams (`ExitServices::connect`) over real loopback sockets: pinning, dial order, failures
//! and their SOCKS5 codes, the connect timeout, the `max_streams` bound, the off switch.

mod common;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::{RecordingDialer, ScriptedResolver};
use nox_exit::{
    AllowEntry, BoxFuture, ConnectError, Connected, Dialer, ErrorKind, ExitConfig, ExitError, ExitServices, Resolver,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const GLOBAL: &str = "93.184.216.34";

/// A loopback server echoing every byte.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = stream.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// A loopback port with nothing listening.
async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

async fn assert_echoes(connected: &mut Connected) {
    assert!(connected.stream.nodelay().unwrap(), "TCP_NODELAY is set");
    connected.stream.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    connected.stream.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
}

fn allowing(addr: SocketAddr) -> ExitConfig {
    let mut config = ExitConfig::default();
    config.http.allow = vec![AllowEntry::socket(addr)];
    config
}

fn global(port: u16) -> SocketAddr {
    SocketAddr::new(GLOBAL.parse().unwrap(), port)
}

#[tokio::test]
async fn an_allow_listed_loopback_listener_is_connected_and_bytes_flow() {
    let server = echo_server().await;
    let exit = ExitServices::new(allowing(server)).unwrap();
    let mut connected = exit.connect("127.0.0.1", server.port()).await.unwrap();
    assert_eq!(connected.peer, server);
    assert_eq!(connected.stream.peer_addr().unwrap(), server);
    assert_echoes(&mut connected).await;
}

/// A rebinding resolver (global first, loopback after) is asked once; the dialer gets the
/// checked address and nothing else.
#[tokio::test]
async fn a_resolved_name_is_pinned_to_the_checked_address() {
    let server = echo_server().await;
    let resolver = ScriptedResolver::new("rebind.test", vec![vec![GLOBAL], vec!["127.0.0.1"]]);
    let dialer = Arc::new(RecordingDialer { map: [(global(443), server)].into(), ..Default::default() });
    let exit = ExitServices::with_hooks(ExitConfig::default(), resolver.clone(), dialer.clone()).unwrap();
    let mut connected = exit.connect("rebind.test", 443).await.unwrap();
    assert_eq!(connected.peer, global(443));
    assert_eq!(dialer.dialed(), vec![global(443)]);
    assert_eq!(resolver.calls(), 1);
    assert_echoes(&mut connected).await;
}

/// A resolver answering another port: the port checked and dialed is the one asked for.
struct WrongPortResolver;

impl Resolver for WrongPortResolver {
    fn resolve<'a>(&'a self, _host: &'a str, _port: u16) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async { Ok(vec![global(22)]) })
    }
}

#[tokio::test]
async fn the_port_dialed_is_the_port_checked() {
    let server = echo_server().await;
    let dialer = Arc::new(RecordingDialer { map: [(global(443), server)].into(), ..Default::default() });
    let exit = ExitServices::with_hooks(ExitConfig::default(), Arc::new(WrongPortResolver), dialer.clone()).unwrap();
    exit.connect("web.test", 443).await.unwrap();
    assert_eq!(dialer.dialed(), vec![global(443)]);
}

#[tokio::test]
async fn checked_addresses_are_dialed_in_order_until_one_accepts() {
    let (server, closed) = (echo_server().await, closed_port().await);
    let second: SocketAddr = "93.184.216.35:80".parse().unwrap();
    let resolver = ScriptedResolver::new("two.test", vec![vec![GLOBAL, "93.184.216.35"]]);
    let dialer =
        Arc::new(RecordingDialer { map: [(global(80), closed), (second, server)].into(), ..Default::default() });
    let exit = ExitServices::with_hooks(ExitConfig::default(), resolver, dialer.clone()).unwrap();
    let mut connected = exit.connect("two.test", 80).await.unwrap();
    assert_eq!(connected.peer, second);
    assert_eq!(dialer.dialed(), vec![global(80), second]);
    assert_echoes(&mut connected).await;
}

#[tokio::test]
async fn a_closed_allow_listed_port_is_refused() {
    let closed = closed_port().await;
    let exit = ExitServices::new(allowing(closed)).unwrap();
    let err = exit.connect("127.0.0.1", closed.port()).await.unwrap_err();
    assert_eq!(err, ConnectError::Refused(closed.to_string()));
    assert_eq!((err.socks_code(), err.kind()), (0x05, ErrorKind::Upstream));
    assert_eq!(exit.open_streams(), 0, "a failed connect frees its slot");
}

/// Fails every dial with one error kind.
struct FailingDialer(io::ErrorKind);

impl Dialer for FailingDialer {
    fn dial(&self, _addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        let kind = self.0;
        Box::pin(async move { Err(io::Error::from(kind)) })
    }
}

/// The last failure decides the reply; its message names the host asked for, not the address.
#[tokio::test]
async fn dial_failures_map_to_socks_replies() {
    let dest = || "far.test:443".to_owned();
    let cases = [
        (io::ErrorKind::ConnectionRefused, ConnectError::Refused(dest()), 0x05),
        (io::ErrorKind::NetworkUnreachable, ConnectError::NetworkUnreachable(dest()), 0x03),
        (io::ErrorKind::NetworkDown, ConnectError::NetworkUnreachable(dest()), 0x03),
        (io::ErrorKind::HostUnreachable, ConnectError::HostUnreachable(dest()), 0x04),
        (io::ErrorKind::PermissionDenied, ConnectError::HostUnreachable(dest()), 0x04),
    ];
    for (kind, expected, code) in cases {
        let resolver = ScriptedResolver::new("far.test", vec![vec![GLOBAL]]);
        let exit = ExitServices::with_hooks(ExitConfig::default(), resolver, Arc::new(FailingDialer(kind))).unwrap();
        let err = exit.connect("far.test", 443).await.unwrap_err();
        assert_eq!(err, expected, "{kind:?}");
        assert_eq!(err.socks_code(), code, "{kind:?}");
        assert!(!err.to_string().contains("93.184"), "{err}");
    }
    let exit = ExitServices::with_hooks(
        ExitConfig::default(),
        ScriptedResolver::new("far.test", vec![vec![GLOBAL]]),
        Arc::new(FailingDialer(io::ErrorKind::TimedOut)),
    )
    .unwrap();
    let err = exit.connect("far.test", 443).await.unwrap_err();
    assert!(matches!(err, ConnectError::Timeout(_)), "{err:?}");
    assert_eq!(err.socks_code(), 0x06);
}

/// Never answers.
struct Stall;

impl Dialer for Stall {
    fn dial(&self, _addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        Box::pin(std::future::pending())
    }
}

impl Resolver for Stall {
    fn resolve<'a>(&'a self, _host: &'a str, _port: u16) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn connect_timeout_bounds_resolution_and_dialing() {
    let mut config = ExitConfig::default();
    config.streams.connect_timeout = Duration::from_millis(50);
    let resolver = ScriptedResolver::new("slow.test", vec![vec![GLOBAL]]);
    let stalled_dial = ExitServices::with_hooks(config.clone(), resolver, Arc::new(Stall)).unwrap();
    let stalled_dns = ExitServices::with_hooks(config, Arc::new(Stall), Arc::new(RecordingDialer::default())).unwrap();
    for (exit, host) in [(&stalled_dial, "slow.test"), (&stalled_dial, GLOBAL), (&stalled_dns, "slow.test")] {
        let err = tokio::time::timeout(Duration::from_secs(5), exit.connect(host, 443)).await.unwrap().unwrap_err();
        assert_eq!(err, ConnectError::Timeout(50), "{host}");
        assert_eq!((err.socks_code(), err.kind()), (0x06, ErrorKind::Timeout));
        assert_eq!(exit.open_streams(), 0);
    }
}

#[tokio::test]
async fn max_streams_is_a_bound_and_a_dropped_permit_frees_its_slot() {
    let server = echo_server().await;
    let mut config = allowing(server);
    config.streams.max_streams = 2;
    let dialer = Arc::new(RecordingDialer::default());
    let resolver = ScriptedResolver::new("unused.test", vec![]);
    let exit = ExitServices::with_hooks(config, resolver, dialer.clone()).unwrap();
    let first = exit.connect("127.0.0.1", server.port()).await.unwrap();
    let mut second = exit.connect("127.0.0.1", server.port()).await.unwrap();
    assert_eq!(exit.open_streams(), 2);
    let err = exit.connect("127.0.0.1", server.port()).await.unwrap_err();
    assert_eq!(err, ConnectError::Busy(2));
    assert_eq!((err.socks_code(), err.kind()), (0x01, ErrorKind::Busy));
    assert_eq!(dialer.dialed().len(), 2, "a busy exit does not dial");

    // The slot belongs to the permit, not the socket.
    let Connected { stream: _kept, permit, .. } = first;
    drop(permit);
    assert_eq!(exit.open_streams(), 1);
    let _third = exit.connect("127.0.0.1", server.port()).await.unwrap();
    assert!(exit.connect("127.0.0.1", server.port()).await.is_err());
    assert_echoes(&mut second).await;
}

#[tokio::test]
async fn disabled_streams_are_unsupported_before_anything_else() {
    let server = echo_server().await;
    let mut config = allowing(server);
    config.streams.enabled = false;
    let dialer = Arc::new(RecordingDialer::default());
    let resolver = ScriptedResolver::new("unused.test", vec![]);
    let exit = ExitServices::with_hooks(config, resolver.clone(), dialer.clone()).unwrap();
    for (host, port) in [("127.0.0.1", server.port()), ("not a host", 0), ("web.test", 443)] {
        let err = exit.connect(host, port).await.unwrap_err();
        assert_eq!(err, ConnectError::Unsupported("this exit does not relay TCP streams".into()));
        assert_eq!((err.socks_code(), err.kind()), (0x01, ErrorKind::Unsupported));
    }
    assert_eq!(resolver.calls(), 0);
    assert!(dialer.dialed().is_empty());
}

/// The SOCKS5 code, the exit's status class and the `ExitError` conversion of every variant.
#[test]
fn every_error_has_a_socks_code_and_a_kind() {
    let s = || "x:1".to_owned();
    let table = [
        (ConnectError::BadRequest(s()), 0x01, ErrorKind::BadRequest),
        (ConnectError::Forbidden(s()), 0x02, ErrorKind::Forbidden),
        (ConnectError::NetworkUnreachable(s()), 0x03, ErrorKind::Upstream),
        (ConnectError::HostUnreachable(s()), 0x04, ErrorKind::Upstream),
        (ConnectError::Refused(s()), 0x05, ErrorKind::Upstream),
        (ConnectError::Timeout(10), 0x06, ErrorKind::Timeout),
        (ConnectError::Busy(1), 0x01, ErrorKind::Busy),
        (ConnectError::Unsupported(s()), 0x01, ErrorKind::Unsupported),
    ];
    for (err, code, kind) in table {
        assert_eq!((err.socks_code(), err.kind()), (code, kind), "{err:?}");
        assert_eq!(ExitError::from(err.clone()).kind(), kind, "{err:?}");
    }
    assert_eq!(
        ExitError::from(ConnectError::Refused("web.test:443".into())),
        ExitError::Upstream("connection refused by web.test:443".into())
    );
}
