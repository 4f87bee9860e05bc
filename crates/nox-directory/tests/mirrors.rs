//! Several directory mirrors: a fetch falls over from a mirror that is down, or that serves
//! something that is not a verifiable document, to the next, and starts with the one that answered last.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nox_directory::{ClientError, DirectoryServer, Limits, Mirrors, Registry};
use nox_sphinx::Geometry;
use nox_topology::{SigningKey, VerifyConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PATIENCE: Duration = Duration::from_secs(5);

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

async fn serve(registry: Registry) -> (SocketAddr, tokio::sync::watch::Sender<bool>) {
    let server = DirectoryServer::bind(([127, 0, 0, 1], 0).into(), registry, Limits::default()).await.unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(server.serve(stop_rx));
    (addr, stop)
}

/// A server answering every connection with a 200 that is not a document.
async fn junk() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request).await;
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}").await;
        }
    });
    addr
}

/// An address where nothing listens (bound, then closed).
fn down() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_falls_over_from_a_mirror_that_is_down_or_serves_junk() {
    let t0 = now();
    let common::Net { registry, .. } = common::net(t0);
    let (live, _stop) = serve(registry).await;
    // A mirror that answers, but not with a document.
    let forged = junk().await;
    let verify = VerifyConfig::new(SigningKey::from_bytes(&[9; 32]).verifying_key(), Geometry::default());
    let check = |d: nox_topology::TopologyDocument| d.verify(&verify, now());

    let dead = down();
    let mirrors = Mirrors::new(vec![dead, forged, live]).unwrap();
    let topology = mirrors.fetch(PATIENCE, check).await.unwrap();
    assert_eq!(topology.nodes().len(), 3);
    // The live mirror answered: it is tried first next time (the others are not even asked).
    assert_eq!(mirrors.clone().fetch(PATIENCE, check).await.unwrap().issued_at(), topology.issued_at());

    // All down or refused: one typed error naming each.
    let none = Mirrors::new(vec![dead, forged]).unwrap();
    match none.fetch(PATIENCE, check).await {
        Err(ClientError::AllMirrors(message)) => {
            assert!(message.contains(&dead.to_string()) && message.contains(&forged.to_string()), "{message}")
        }
        other => panic!("expected AllMirrors, got {other:?}"),
    }
    assert!(matches!(Mirrors::parse(Vec::<String>::new()), Err(ClientError::NoMirror)));
    assert!(matches!(Mirrors::parse(["http://127.0.0.1:1", "ftp://x"]), Err(ClientError::Url(_))));
    assert_eq!(Mirrors::parse(["http://127.0.0.1:1", "http://127.0.0.1:1/"]).unwrap().addrs().len(), 1);
}
