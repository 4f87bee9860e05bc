//! Unit tests of the dashboard's server shell (scrapes, argument parsing, the page server).

use super::*;

#[test]
fn node_specs_parse() {
    let (id, addr) = parse_node("0123ABCD=127.0.0.1:19100").unwrap();
    assert_eq!((id.as_str(), addr), ("0123abcd", "127.0.0.1:19100".parse().unwrap()));
    for bad in ["0123abc=127.0.0.1:1", "0123abcd", "0123abcz=127.0.0.1:1", "0123abcd=localhost:1"] {
        assert!(parse_node(bad).is_err(), "{bad}");
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    assert!(matches!(parse_node("0123abcd"), Err(DashboardError::BadNode { spec }) if spec == "0123abcd"));
    assert!(matches!(authority_key("zz"), Err(DashboardError::AuthorityNotHex)));
    assert!(matches!(authority_key(&"ab".repeat(31)), Err(DashboardError::AuthorityNotHex)));
    // About half of all 32-byte strings are no curve point's encoding: those are refused as such.
    let refused: Vec<_> = (0u8..=255).filter_map(|b| authority_key(&hex::encode([b; 32])).err()).collect();
    assert!(!refused.is_empty());
    assert!(refused.iter().all(|e| matches!(e, DashboardError::AuthorityNotAKey)), "{refused:?}");
    assert_eq!(DashboardError::AuthorityNotHex.to_string(), "--authority: expected 64 hex digits");
}

/// A server that answers each connection with `response` (or stalls when `None`).
async fn fake(response: Option<Vec<u8>>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut stream, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf).await;
                match response {
                    Some(bytes) => {
                        let _ = stream.write_all(&bytes).await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(10)).await,
                }
            });
        }
    });
    addr
}

fn http(status: &str, body: &[u8]) -> Vec<u8> {
    let mut out =
        format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

#[tokio::test]
async fn scrapes_are_bounded_and_say_why_without_the_address() {
    let ok = fake(Some(http("200 OK", b"nox_key_epoch 3\n"))).await;
    assert_eq!(scrape(ok).await.unwrap(), "nox_key_epoch 3\n");

    let not_found = fake(Some(http("404 Not Found", b"no"))).await;
    assert_eq!(scrape(not_found).await.unwrap_err(), "HTTP 404");

    let huge = fake(Some(http("200 OK", &vec![b'a'; MAX_METRICS_BYTES + 1]))).await;
    assert!(scrape(huge).await.unwrap_err().contains("over 256 KiB"));

    let stalled = fake(None).await;
    let started = Instant::now();
    assert!(scrape(stalled).await.unwrap_err().starts_with("no answer within"));
    assert!(started.elapsed() < SCRAPE_TIMEOUT + Duration::from_millis(500));

    let garbage = fake(Some(b"\x00\x01garbage\r\n\r\n".to_vec())).await;
    let error = scrape(garbage).await.unwrap_err();
    assert!(error.starts_with("HTTP request failed"), "{error}");

    // A port nobody listens on.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    assert_eq!(scrape(closed).await.unwrap_err(), "connection refused");
    for addr in [ok, not_found, huge, stalled, garbage, closed] {
        let error = scrape(addr).await.err().unwrap_or_default();
        assert!(!error.contains(&addr.to_string()), "{error}");
    }
}

async fn get_page(addr: SocketAddr) -> std::io::Result<Vec<u8>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.write_all(b"GET / HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").await?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut response)).await??;
    Ok(response)
}

#[tokio::test]
async fn connections_over_the_limit_are_closed() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shared = Arc::new(Mutex::new(Shared {
        tracker: Tracker::new(Vec::new()),
        topology: TopologyStatus::default(),
        chain: None,
    }));
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(http_loop(listener, shared, stop_rx));
    assert!(get_page(addr).await.unwrap().starts_with(b"HTTP/1.1 200"));
    let mut idle = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = get_page(addr).await.unwrap_or_default();
    assert!(refused.is_empty(), "a connection over the limit is closed unanswered");
    drop(idle);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(get_page(addr).await.unwrap().starts_with(b"HTTP/1.1 200"), "slots come back");
}

#[test]
fn the_page_is_self_contained() {
    assert!(PAGE.contains("/api/state"));
    // The SVG namespace is a name, not a request.
    let page = PAGE.replace("http://www.w3.org/2000/svg", "");
    for external in ["http://", "https://", "//cdn", "@import", "<link"] {
        assert!(!page.contains(external), "the page loads nothing from elsewhere: {external}");
    }
    assert!(!PAGE.contains("innerHTML"), "data reaches the page as text only");
}
