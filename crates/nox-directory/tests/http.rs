//! The service on 127.0.0.1:0: documents served and verified, an upload re-published, and bad
//! input answered with a 4xx and counted, never a crash.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nox_directory::{
    DirectoryServer, Limits, fetch_document, fetch_document_blocking, get_blocking, http, upload_descriptor,
};
use nox_sphinx::Geometry;
use nox_topology::{SigningKey, VerifyConfig};

const PATIENCE: Duration = Duration::from_secs(5);

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn raw(addr: SocketAddr, bytes: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    let (status, body) = http::parse_response(&out).unwrap();
    (status, String::from_utf8_lossy(body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_accepts_and_refuses_over_http() {
    let t0 = now();
    let common::Net { nodes, registry, .. } = common::net(t0);
    let limits = Limits {
        request_timeout: Duration::from_millis(300),
        first_byte_timeout: Duration::from_millis(300),
        max_connections: 8,
        max_connections_per_address: 8,
        max_connections_per_subnet: 8,
    };
    let server = DirectoryServer::bind(([127, 0, 0, 1], 0).into(), registry, limits).await.unwrap();
    let addr = server.local_addr().unwrap();
    let counters = server.counters();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let serving = tokio::spawn(server.serve(stop_rx));

    // GET /topology: a document that verifies with the authority key, now.
    let verify = VerifyConfig::new(SigningKey::from_bytes(&[9; 32]).verifying_key(), Geometry::default());
    let document = fetch_document(addr, PATIENCE).await.unwrap();
    let first = document.verify(&verify, now()).unwrap();
    assert_eq!(first.nodes().len(), 3);

    // POST /descriptor: a node raises its difficulty (its to change); the next GET serves it.
    let upload = nodes[0].with(|d| d.pow_difficulty = 5);
    let answer = upload_descriptor(addr, &upload, PATIENCE).await.unwrap();
    assert!(answer.starts_with("accepted"), "{answer}");
    let served = tokio::task::spawn_blocking(move || fetch_document_blocking(addr, PATIENCE)).await.unwrap().unwrap();
    let served = served.verify(&verify, now()).unwrap();
    assert_eq!(served.node(&upload.node_id()).unwrap().descriptor.pow_difficulty, 5);

    // A bad signature: 403 with a reason.
    let mut forged = nodes[1].descriptor();
    forged.descriptor.pow_difficulty = 9;
    let refused = upload_descriptor(addr, &forged, PATIENCE).await.unwrap_err().to_string();
    assert!(refused.contains("403") && refused.contains("self-signature"), "{refused}");
    // A changed link key: 422.
    let moved = nodes[2].with(|d| d.link_key = nox_topology::LinkPublicKey::from_secret(&[3; 32]));
    let refused = upload_descriptor(addr, &moved, PATIENCE).await.unwrap_err().to_string();
    assert!(refused.contains("422") && refused.contains("link key"), "{refused}");

    tokio::task::spawn_blocking(move || {
        // Not JSON.
        let body = b"{not json";
        let request = format!("POST /descriptor HTTP/1.1\r\ncontent-length: {}\r\n\r\n", body.len());
        let (status, text) = raw(addr, &[request.as_bytes(), body].concat());
        assert_eq!(status, 400, "{text}");
        // Too large a body, announced: refused before it is read.
        let (status, _) = raw(addr, b"POST /descriptor HTTP/1.1\r\ncontent-length: 100000000\r\n\r\n");
        assert_eq!(status, 413);
        // Chunked: no.
        let (status, _) = raw(addr, b"POST /descriptor HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!(status, 411);
        // A signed length, and two lengths: no.
        let (status, _) = raw(addr, b"POST /descriptor HTTP/1.1\r\ncontent-length: +5\r\n\r\nhello");
        assert_eq!(status, 400);
        let two = b"POST /descriptor HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\nhello";
        assert_eq!(raw(addr, two).0, 400);
        // An endless head.
        let mut endless = b"GET /topology HTTP/1.1\r\n".to_vec();
        endless.extend(std::iter::repeat_n(b'a', 10_000));
        let (status, _) = raw(addr, &endless);
        assert_eq!(status, 431);
        // A slow sender, and one that sends nothing.
        let (status, _) = raw(addr, b"GET /topology HTTP/1.1\r\n");
        assert_eq!(status, 408);
        let (status, _) = raw(addr, b"");
        assert_eq!(status, 408);
        // Unknown route, wrong method, garbage request line.
        assert_eq!(get_blocking(addr, "/nowhere", PATIENCE).unwrap().0, 404);
        assert_eq!(raw(addr, b"DELETE /topology HTTP/1.1\r\n\r\n").0, 405);
        assert_eq!(raw(addr, b"\x00\x01 garbage\r\n\r\n").0, 400);
        // The service still answers, and counted it all.
        let (status, metrics) = get_blocking(addr, "/metrics", PATIENCE).unwrap();
        assert_eq!(status, 200);
        let text = String::from_utf8(metrics).unwrap();
        assert!(text.contains("nox_directory_requests_total{outcome=\"refused_bad_signature\"} 1"), "{text}");
    })
    .await
    .unwrap();
    assert_eq!(counters.get("accepted"), 1);
    assert_eq!(counters.get("refused_changed"), 1);
    assert_eq!(counters.get("refused_malformed"), 1);
    assert_eq!(counters.get("timeout"), 1);
    assert_eq!(counters.get("idle"), 1);
    assert!(counters.get("bad_http") >= 4);

    stop.send(true).unwrap();
    serving.await.unwrap().unwrap();
}

/// The whole response, head included.
fn raw_head(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    text.split("\r\n\r\n").next().unwrap_or_default().to_ascii_lowercase()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_public_document_is_readable_cross_origin() {
    let common::Net { registry, .. } = common::net(now());
    let server = DirectoryServer::bind(([127, 0, 0, 1], 0).into(), registry, Limits::default()).await.unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let serving = tokio::spawn(server.serve(stop_rx));
    let get = move |path: &str| {
        let request = format!("GET {path} HTTP/1.1\r\nhost: d\r\norigin: https://dapp.example\r\n\r\n");
        raw_head(addr, request.as_bytes())
    };
    let cors = "\r\naccess-control-allow-origin: *\r\n";
    let (topology, metrics, missing) =
        tokio::task::spawn_blocking(move || (get("/topology"), get("/metrics"), get("/nope"))).await.unwrap();
    assert!(topology.starts_with("http/1.1 200"), "{topology}");
    assert!(topology.contains(cors), "a browser page must be able to read the topology: {topology}");
    assert!(metrics.starts_with("http/1.1 200") && !metrics.contains("access-control"), "{metrics}");
    assert!(missing.starts_with("http/1.1 404") && !missing.contains("access-control"), "{missing}");
    let upload = tokio::task::spawn_blocking(move || {
        raw_head(addr, b"POST /descriptor HTTP/1.1\r\nhost: d\r\ncontent-length: 2\r\n\r\n{}")
    })
    .await
    .unwrap();
    assert!(upload.starts_with("http/1.1 400") && !upload.contains("access-control"), "{upload}");
    stop.send(true).unwrap();
    serving.await.unwrap().unwrap();
}
