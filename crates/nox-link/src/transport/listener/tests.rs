//! The shared accept loop, with a stand-in for what serves a connection: the connection limit
//! and the gate on accept, the stage the serving returns reaching the gate on close, and
//! shutdown waiting for every connection task.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use nox_sphinx::Geometry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

#[derive(Default)]
struct Recorder {
    closed: Mutex<Vec<GateStage>>,
}

impl ConnectionGate for Recorder {
    fn admit(&self, _peer: IpAddr) -> bool {
        true
    }
    fn offence(&self, _peer: IpAddr) {}
    fn closed(&self, _peer: IpAddr, stage: GateStage) {
        lock(&self.closed).push(stage);
    }
}

fn shared(gate: Arc<Recorder>, max_connections: usize) -> Arc<Shared> {
    let link = LinkConfig::new(Geometry::new(2048, 3).expect("geometry")).expect("link config");
    let keypair = Arc::new(LinkKeypair::generate().expect("keypair"));
    let mut config = ListenerConfig::new(link, keypair, Arc::new(HashSet::new()));
    config.max_connections = max_connections;
    config.gate = gate;
    let (inbound, _) = mpsc::channel(1);
    Arc::new(Shared {
        config,
        limit: Arc::new(Semaphore::new(max_connections)),
        inbound,
        counters: Arc::new(LinkCounters::default()),
        clients: Arc::default(),
        mailboxes: Arc::default(),
        next_client: AtomicU64::new(0),
    })
}

/// Polls `what` until it holds (10 s deadline: a loaded machine).
async fn eventually(name: &str, what: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !what() {
        assert!(Instant::now() < deadline, "{name}: not reached within 10 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads one byte and answers the stage it names ('n' node, 'c' client, anything else
/// accepted); on shutdown, lingers 100 ms and then marks `finished`.
async fn stand_in(
    mut stream: TcpStream,
    mut shutdown: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
    finished: Arc<AtomicBool>,
) -> GateStage {
    let _permit = permit;
    let mut byte = [0u8; 1];
    tokio::select! {
        r = stream.read(&mut byte) => match (r, byte[0]) {
            (Ok(1), b'n') => GateStage::Node,
            (Ok(1), b'c') => GateStage::Client,
            _ => GateStage::Accepted,
        },
        () = wait_shutdown(&mut shutdown) => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            finished.store(true, Ordering::SeqCst);
            GateStage::Accepted
        }
    }
}

#[tokio::test]
async fn the_accept_loop_admits_serves_reports_and_drains() {
    let gate = Arc::new(Recorder::default());
    let shared = shared(gate.clone(), 1);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, shutdown) = watch::channel(false);
    let finished = Arc::new(AtomicBool::new(false));
    let lingering = finished.clone();
    let serve_one =
        move |stream, _peer, _shared, shutdown, permit| stand_in(stream, shutdown, permit, lingering.clone());
    let task = tokio::spawn(accept_loop(listener, shared.clone(), shutdown, serve_one));

    // One connection slot: a second connection while the first is served is refused (closed
    // at once, counted); the first's stage reaches the gate when it ends.
    let mut first = TcpStream::connect(addr).await.expect("connect");
    let mut second = TcpStream::connect(addr).await.expect("connect");
    let mut buf = [0u8; 1];
    let refused = tokio::time::timeout(Duration::from_secs(10), second.read(&mut buf)).await.expect("closed in time");
    assert!(matches!(refused, Ok(0) | Err(_)), "the second connection is closed unserved");
    assert_eq!(shared.counters.snapshot().rejected_connection_limit, 1);
    first.write_all(b"n").await.expect("write");
    eventually("node stage", || *lock(&gate.closed) == [GateStage::Node]).await;

    // The slot is free again once the first connection's task has ended.
    let mut third = TcpStream::connect(addr).await.expect("connect");
    third.write_all(b"c").await.expect("write");
    eventually("client stage", || *lock(&gate.closed) == [GateStage::Node, GateStage::Client]).await;
    assert_eq!(shared.counters.snapshot().rejected_connection_limit, 1);

    // Shutdown ends the loop only after every connection task has ended.
    let _fourth = TcpStream::connect(addr).await.expect("connect");
    eventually("fourth admitted", || shared.limit.available_permits() == 0).await;
    stop.send(true).expect("signal");
    tokio::time::timeout(Duration::from_secs(10), task).await.expect("loop ends").expect("no panic");
    assert!(finished.load(Ordering::SeqCst), "the loop waited for the lingering connection");
    assert_eq!(lock(&gate.closed).len(), 3);
}
