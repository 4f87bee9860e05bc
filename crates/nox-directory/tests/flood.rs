//! One host or one network cannot take the directory (docs/spec/directory.md §2): hundreds of
//! idle connections from one address, or from every address of one /24, leave the service
//! answering everyone else, and idle connections are closed after the first-byte timeout. Real
//! sockets on loopback only; the "other" clients connect from 127.0.0.2 or another /24,
//! 127.0.2.x (Linux routes all of 127.0.0.0/8 to lo).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nox_directory::{DirectoryServer, Limits, http};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const IDLE_CONNECTIONS: usize = 300;
const PATIENCE: Duration = Duration::from_secs(5);

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

async fn start(
    limits: Limits,
) -> (SocketAddr, std::sync::Arc<nox_directory::Counters>, tokio::sync::watch::Sender<bool>) {
    let common::Net { registry, .. } = common::net(now());
    let server = DirectoryServer::bind(([127, 0, 0, 1], 0).into(), registry, limits).await.unwrap();
    let addr = server.local_addr().unwrap();
    let counters = server.counters();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(server.serve(stop_rx));
    (addr, counters, stop)
}

/// `GET /topology` from `source`: the status, or `None` if the connection was closed unanswered.
async fn fetch_from(source: [u8; 4], addr: SocketAddr) -> Option<u16> {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind((source, 0).into()).unwrap();
    let work = async {
        let mut stream = socket.connect(addr).await.ok()?;
        stream.write_all(b"GET /topology HTTP/1.1\r\nhost: d\r\n\r\n").await.ok()?;
        let mut out = Vec::new();
        stream.read_to_end(&mut out).await.ok()?;
        http::parse_response(&out).ok().map(|(status, _)| status)
    };
    tokio::time::timeout(PATIENCE, work).await.ok().flatten()
}

/// Opens `per_source` connections that send nothing from each of `sources`.
async fn idle_from(addr: SocketAddr, sources: &[[u8; 4]], per_source: usize) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(sources.len() * per_source);
    for source in sources {
        for _ in 0..per_source {
            let socket = TcpSocket::new_v4().unwrap();
            socket.bind((*source, 0).into()).unwrap();
            if let Ok(stream) = socket.connect(addr).await {
                held.push(stream);
            }
        }
    }
    held
}

/// Opens `n` connections from 127.0.0.1 that send nothing.
async fn idle(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        if let Ok(stream) = TcpStream::connect(addr).await {
            held.push(stream);
        }
    }
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_from_one_address_do_not_starve_another_client() {
    // Timeouts far longer than the test: only the per-address cap protects the service here.
    let limits = Limits {
        request_timeout: Duration::from_secs(30),
        first_byte_timeout: Duration::from_secs(30),
        max_connections: 64,
        max_connections_per_address: 4,
        // Same /24 as the flood: only the per-address cap is under test here.
        max_connections_per_subnet: 64,
    };
    let (addr, counters, stop) = start(limits).await;
    let held = idle(addr, IDLE_CONNECTIONS).await;
    assert!(held.len() >= 100, "could open only {} connections", held.len());
    // Every fetch from another address is answered while the idle ones are held.
    for attempt in 0..20 {
        assert_eq!(fetch_from([127, 0, 0, 2], addr).await, Some(200), "fetch {attempt} during the flood");
    }
    assert!(counters.get("busy_address") >= (held.len() - 4) as u64, "excess connections refused at once");
    assert_eq!(counters.get("busy"), 0, "the flood never filled the global slots");
    drop(held);
    stop.send(true).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_after_the_first_byte_timeout() {
    // No per-address cap to speak of: the first-byte timeout alone frees the slots.
    let limits = Limits {
        request_timeout: Duration::from_secs(30),
        first_byte_timeout: Duration::from_millis(200),
        max_connections: 8,
        max_connections_per_address: 1000,
        max_connections_per_subnet: 1000,
    };
    let (addr, counters, stop) = start(limits).await;
    let mut held = idle(addr, 8).await;
    assert_eq!(held.len(), 8);
    // Each idle connection is answered 408 and closed after ~200 ms, well before 30 s.
    let started = Instant::now();
    for stream in &mut held {
        let mut out = Vec::new();
        tokio::time::timeout(PATIENCE, stream.read_to_end(&mut out)).await.unwrap().unwrap();
        assert_eq!(http::parse_response(&out).unwrap().0, 408);
    }
    assert!(started.elapsed() < PATIENCE);
    assert_eq!(counters.get("idle"), 8);
    assert_eq!(fetch_from([127, 0, 0, 2], addr).await, Some(200));
    stop.send(true).unwrap();
}

/// Every address of one /24 (127.0.1.1 to .64, four idle connections each: as many as the
/// per-address cap allows, 256 in all, four times the global slots) floods the directory. With
/// no per-subnet cap (`max_connections_per_subnet` = the global cap, the old behaviour) other
/// networks' fetches fail; with the default cap of 16 per /24 a client in 127.0.2.0/24 is
/// answered every time, while the flooding /24's own further connections are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_subnet_flooding_does_not_starve_another_subnet() {
    let flood: Vec<[u8; 4]> = (1..=64).map(|host| [127, 0, 1, host]).collect();
    let limits = |per_subnet| Limits {
        request_timeout: Duration::from_secs(30),
        first_byte_timeout: Duration::from_secs(30),
        max_connections: 64,
        max_connections_per_address: 4,
        max_connections_per_subnet: per_subnet,
    };

    // The attack, without a subnet cap: the /24 takes every slot.
    let (addr, counters, stop) = start(limits(64)).await;
    let held = idle_from(addr, &flood, 4).await;
    assert!(held.len() >= 200, "could open only {} connections", held.len());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fetch_from([127, 0, 2, 1], addr).await, None, "without a subnet cap the flood starves others");
    assert!(counters.get("busy") > 0);
    drop(held);
    stop.send(true).unwrap();

    // The default cap: 16 connections per /24.
    let default = Limits::default();
    assert_eq!((default.max_connections, default.max_connections_per_subnet), (64, 16));
    let (addr, counters, stop) = start(limits(default.max_connections_per_subnet)).await;
    let held = idle_from(addr, &flood, 4).await;
    assert!(held.len() >= 200, "could open only {} connections", held.len());
    for attempt in 0..20 {
        let source = [127, 0, 2, 1 + (attempt % 4) as u8];
        assert_eq!(fetch_from(source, addr).await, Some(200), "fetch {attempt} from another /24 during the flood");
    }
    let source = std::net::IpAddr::from([127, 0, 3, 9]);
    assert!(nox_directory::fetch_document_from(addr, source, PATIENCE).await.is_ok(), "fetch_document_from");
    assert_eq!(fetch_from([127, 0, 1, 200], addr).await, None, "the flooding /24 has no slot left");
    assert!(counters.get("busy_subnet") >= (held.len() - 16) as u64, "the excess refused at once");
    assert_eq!(counters.get("busy"), 0, "the flood never filled the global slots");
    drop(held);
    stop.send(true).unwrap();
}
