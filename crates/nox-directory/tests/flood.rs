//! One host cannot take the directory (docs/spec/directory.md §2): hundreds of idle
//! connections from one address leave the service answering everyone else, and idle
//! connections are closed after the first-byte timeout. Real sockets on loopback only; the
//! "other" client connects from 127.0.0.2 (Linux routes all of 127.0.0.0/8 to lo).

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
