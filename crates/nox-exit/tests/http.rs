//! The HTTP(S) fetch service against canned servers on loopback.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{RecordingDialer, Reply, ScriptedResolver, canned, loopback_allowed, response, serve};
use nox_exit::{ErrorKind, ExitConfig, ExitError, ExitServices, HttpRequest, SystemResolver};

const CAP: usize = 64 * 1024;

fn get(url: &str) -> HttpRequest {
    HttpRequest { method: "GET".into(), url: url.into(), ..Default::default() }
}

fn hello() -> Vec<u8> {
    response("200 OK", &[("X-Test", "yes"), ("Keep-Alive", "timeout=5")], b"hello")
}

#[tokio::test]
async fn get_with_allow_list_returns_status_headers_body() {
    let server = canned(hello()).await;
    let exit = ExitServices::new(loopback_allowed()).unwrap();
    let res = exit.http(get(&server.url("/path?q=1#frag")), CAP).await.unwrap();
    assert_eq!(res.status, 200);
    assert_eq!(res.body, b"hello");
    assert!(res.headers.contains(&("x-test".into(), "yes".into())), "{:?}", res.headers);
    assert!(!res.headers.iter().any(|(n, _)| n == "connection" || n == "keep-alive"), "{:?}", res.headers);
    let request = server.request(0);
    assert!(request.starts_with("GET /path?q=1 HTTP/1.1\r\n"), "{request}");
    assert!(request.to_ascii_lowercase().contains(&format!("host: {}\r\n", server.addr)), "{request}");
}

#[tokio::test]
async fn loopback_without_allow_list_is_forbidden_before_connecting() {
    let server = canned(hello()).await;
    let exit = ExitServices::new(ExitConfig::default()).unwrap();
    let err = exit.http(get(&server.url("/")), CAP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert_eq!(err.to_string(), "destination 127.0.0.1 is not a global address (loopback 127.0.0.0/8)");
    assert_eq!(server.accepted(), 0);
}

/// A name from the exit's /etc/hosts (`localhost`) is refused without naming the address it
/// resolved to.
#[tokio::test]
async fn localhost_name_is_refused_without_naming_its_address() {
    let server = canned(hello()).await;
    let exit = ExitServices::with_resolver(ExitConfig::default(), Arc::new(SystemResolver)).unwrap();
    let err = exit.http(get(&format!("http://localhost:{}/", server.addr.port())), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::Refused { host: "localhost".into() });
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    let text = err.to_string();
    for leak in ["127.", "::1", "loopback"] {
        assert!(!text.contains(leak), "the refusal names {leak}: {text}");
    }
    assert_eq!(server.accepted(), 0);
}

/// "Does not resolve", "resolves to nothing", "resolves to a private address" and "resolves
/// partly to a private address" are one answer: the kind and the text differ only by the name
/// the client sent, so refusals are no oracle for the exit's private names.
#[tokio::test]
async fn refusals_for_names_do_not_tell_unresolvable_from_private() {
    let mut answers = std::collections::HashMap::new();
    answers.insert("private.test".to_owned(), vec![vec!["10.1.2.3".parse().unwrap()]]);
    answers
        .insert("mixed.test".to_owned(), vec![vec!["93.184.216.34".parse().unwrap(), "192.168.1.1".parse().unwrap()]]);
    answers.insert("empty.test".to_owned(), vec![vec![]]);
    let resolver = Arc::new(ScriptedResolver { answers, ..Default::default() });
    let dialer = Arc::new(RecordingDialer::default());
    let exit = ExitServices::with_hooks(ExitConfig::default(), resolver, dialer.clone()).unwrap();
    let mut shapes = Vec::new();
    for host in ["private.test", "mixed.test", "empty.test", "nowhere.test"] {
        let err = exit.http(get(&format!("http://{host}/")), CAP).await.unwrap_err();
        assert_eq!(err, ExitError::Refused { host: host.into() }, "{host}");
        shapes.push((err.kind(), err.to_string().replace(host, "HOST")));
    }
    shapes.dedup();
    assert_eq!(shapes.len(), 1, "{shapes:?}");
    assert_eq!(shapes[0].1, "destination HOST refused: it does not resolve to an address this exit may connect to");
    assert!(dialer.dialed().is_empty());
}

/// An IPv4-mapped literal is refused as IPv4-mapped, whatever it embeds (a global address
/// included): the client must write the IPv4 literal.
#[tokio::test]
async fn ipv4_mapped_literals_are_refused_as_mapped() {
    let dialer = Arc::new(RecordingDialer::default());
    let exit =
        ExitServices::with_hooks(loopback_allowed(), Arc::new(ScriptedResolver::default()), dialer.clone()).unwrap();
    for (url, addr) in [
        ("http://[::ffff:8.8.8.8]/", "::ffff:8.8.8.8"),
        ("http://[::ffff:7f00:1]:8080/", "::ffff:127.0.0.1"),
        ("http://[0:0:0:0:0:ffff:10.0.0.1]/", "::ffff:10.0.0.1"),
    ] {
        let err = exit.http(get(url), CAP).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Forbidden, "{url}");
        assert_eq!(err.to_string(), format!("destination {addr} is not a global address (IPv4-mapped ::ffff:0:0/96)"));
    }
    assert!(dialer.dialed().is_empty());
}

/// A port outside 1-65535 is a bad request; `:65536` used to become port 80.
#[tokio::test]
async fn ports_outside_the_u16_range_are_bad_requests() {
    let dialer = Arc::new(RecordingDialer::default());
    let exit =
        ExitServices::with_hooks(ExitConfig::default(), Arc::new(ScriptedResolver::default()), dialer.clone()).unwrap();
    for (url, expected) in [
        ("http://example.com:65536/", "port 65536 is outside 1-65535"),
        ("http://93.184.216.34:99999/", "port 99999 is outside 1-65535"),
        ("http://[2606:4700::1]:65536/", "port 65536 is outside 1-65535"),
        ("http://example.com:0/", "port 0 is outside 1-65535"),
        ("http://example.com:00/", "port 00 is outside 1-65535"),
        ("https://example.com:4294967376/", "outside 1-65535"),
    ] {
        let err = exit.http(get(url), CAP).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{url}: {err}");
        assert!(err.to_string().contains(expected), "{url}: {err}");
    }
    assert!(dialer.dialed().is_empty());
}

#[tokio::test]
async fn ipv4_mapped_literal_is_refused_even_with_loopback_allowed() {
    let server = canned(hello()).await;
    let exit = ExitServices::new(loopback_allowed()).unwrap();
    let err = exit.http(get(&format!("http://[::ffff:127.0.0.1]:{}/", server.addr.port())), CAP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert!(err.to_string().contains("IPv4-mapped ::ffff:0:0/96"), "{err}");
    assert_eq!(server.accepted(), 0);
}

async fn redirect_to(location: &str) -> (ExitError, Vec<std::net::SocketAddr>) {
    let server = canned(response("302 Found", &[("Location", location)], b"")).await;
    let dialer = Arc::new(RecordingDialer::default());
    let exit = ExitServices::with_hooks(loopback_allowed(), Arc::new(SystemResolver), dialer.clone()).unwrap();
    let err = exit.http(get(&server.url("/")), CAP).await.unwrap_err();
    assert_eq!(server.accepted(), 1);
    (err, dialer.dialed())
}

#[tokio::test]
async fn redirect_to_private_address_is_forbidden() {
    let (err, dialed) = redirect_to("http://10.0.0.1/admin").await;
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert_eq!(err.to_string(), "destination 10.0.0.1 is not a global address (private-use 10.0.0.0/8)");
    assert!(dialed.iter().all(|a| a.ip().is_loopback()), "{dialed:?}");
}

#[tokio::test]
async fn redirect_to_cloud_metadata_is_forbidden() {
    let (err, dialed) = redirect_to("http://169.254.169.254/latest/meta-data/").await;
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert_eq!(err.to_string(), "destination 169.254.169.254 is not a global address (link-local 169.254.0.0/16)");
    assert_eq!(dialed.len(), 1);
}

#[tokio::test]
async fn relative_redirects_are_followed_up_to_the_limit() {
    let server = serve(Arc::new(|req: &str| {
        let hop: usize =
            req.split_whitespace().nth(1).and_then(|p| p.trim_start_matches("/r").parse().ok()).unwrap_or(0);
        if hop < 2 {
            Reply::Bytes(response("301 Moved", &[("Location", &format!("/r{}", hop + 1))], b""))
        } else {
            Reply::Bytes(response("200 OK", &[], b"arrived"))
        }
    }))
    .await;
    let exit = ExitServices::new(loopback_allowed()).unwrap();
    let res = exit.http(get(&server.url("/r0")), CAP).await.unwrap();
    assert_eq!((res.status, res.body.as_slice()), (200, &b"arrived"[..]));
    assert_eq!(server.accepted(), 3);

    let mut config = loopback_allowed();
    config.http.max_redirects = 1;
    let exit = ExitServices::new(config).unwrap();
    let err = exit.http(get(&server.url("/r0")), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::Upstream("too many redirects (limit 1)".into()));
}

#[tokio::test]
async fn dns_answer_is_pinned_and_resolved_once_per_hop() {
    let server = canned(hello()).await;
    // A rebinding resolver: a global address first, loopback afterwards.
    let resolver = ScriptedResolver::new("rebind.test", vec![vec!["93.184.216.34"], vec!["127.0.0.1"]]);
    let global = "93.184.216.34:8080".parse().unwrap();
    let dialer = Arc::new(RecordingDialer { map: [(global, server.addr)].into(), ..Default::default() });
    let exit = ExitServices::with_hooks(ExitConfig::default(), resolver.clone(), dialer.clone()).unwrap();
    let res = exit.http(get("http://rebind.test:8080/"), CAP).await.unwrap();
    assert_eq!(res.body, b"hello");
    assert_eq!(resolver.calls(), 1);
    assert_eq!(dialer.dialed(), vec![global]);
    assert!(server.request(0).contains("host: rebind.test:8080\r\n"));
}

#[tokio::test]
async fn rebinding_on_a_redirect_hop_is_refused() {
    let server = canned(response("302 Found", &[("Location", "/next")], b"")).await;
    let resolver = ScriptedResolver::new("rebind.test", vec![vec!["93.184.216.34"], vec!["127.0.0.1"]]);
    let global = "93.184.216.34:80".parse().unwrap();
    let dialer = Arc::new(RecordingDialer { map: [(global, server.addr)].into(), ..Default::default() });
    let exit = ExitServices::with_hooks(ExitConfig::default(), resolver.clone(), dialer.clone()).unwrap();
    let err = exit.http(get("http://rebind.test/"), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::Refused { host: "rebind.test".into() });
    assert_eq!(resolver.calls(), 2, "one resolution per hop");
    assert_eq!(dialer.dialed(), vec![global], "never connected to the rebound address");
}

#[tokio::test]
async fn a_mixed_dns_answer_is_refused_entirely() {
    let resolver = ScriptedResolver::new("mixed.test", vec![vec!["93.184.216.34", "127.0.0.1"]]);
    let dialer = Arc::new(RecordingDialer::default());
    let exit = ExitServices::with_hooks(ExitConfig::default(), resolver.clone(), dialer.clone()).unwrap();
    let err = exit.http(get("http://mixed.test/"), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::Refused { host: "mixed.test".into() });
    assert!(!err.to_string().contains("127.0.0.1"), "{err}");
    assert!(dialer.dialed().is_empty());
}

#[tokio::test]
async fn unresolvable_host_is_refused_like_a_private_one() {
    let resolver = ScriptedResolver::new("other.test", vec![]);
    let exit = ExitServices::with_resolver(ExitConfig::default(), resolver).unwrap();
    let err = exit.http(get("http://nowhere.test/"), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::Refused { host: "nowhere.test".into() });
}

#[tokio::test]
async fn oversized_bodies_are_too_large() {
    let declared = canned(response("200 OK", &[], &[b'x'; 5000])).await;
    let exit = ExitServices::new(loopback_allowed()).unwrap();
    let err = exit.http(get(&declared.url("/")), 1000).await.unwrap_err();
    assert_eq!(err, ExitError::ResponseTooLarge(1000));

    // No Content-Length: the body is read until close, with a running cap.
    let mut streamed = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
    streamed.extend(std::iter::repeat_n(b'y', 200_000));
    let streamed = canned(streamed).await;
    let err = exit.http(get(&streamed.url("/")), 1000).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge);

    // The configured cap wins when it is the smaller one.
    let mut config = loopback_allowed();
    config.http.max_response_bytes = 100;
    let exit = ExitServices::new(config).unwrap();
    assert_eq!(exit.http(get(&declared.url("/")), CAP).await.unwrap_err(), ExitError::ResponseTooLarge(100));
}

#[tokio::test]
async fn stalled_server_times_out() {
    let server = serve(Arc::new(|_: &str| Reply::Stall)).await;
    let mut config = loopback_allowed();
    config.http.timeout = Duration::from_millis(300);
    let exit = ExitServices::new(config).unwrap();
    let start = Instant::now();
    let err = exit.http(get(&server.url("/")), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::Timeout(300));
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
}

#[tokio::test]
async fn malformed_requests_are_bad_requests() {
    let exit = ExitServices::new(loopback_allowed()).unwrap();
    let cases = [
        ("http://user:pw@127.0.0.1/", "credentials (userinfo) in URLs are not accepted"),
        ("http://user@example.com/", "credentials (userinfo)"),
        ("ftp://example.com/file", "URL scheme ftp is not supported"),
        ("file:///etc/passwd", "bad request"),
        ("not a url", "malformed URL"),
        ("http://", "malformed URL"),
        ("/relative/path", "malformed URL"),
        ("http://exa%6dple.com/", "malformed URL"),
        ("http://ex!ample.com/", "invalid host name ex!ample.com"),
        ("http://127.0.0.1:0/", "port 0 is outside 1-65535"),
        ("http://127.0.0.1:65536/", "port 65536 is outside 1-65535"),
    ];
    for (url, expected) in cases {
        let err = exit.http(get(url), CAP).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{url}: {err}");
        assert!(err.to_string().contains(expected), "{url}: {err}");
    }
    let long = format!("http://example.com/{}", "a".repeat(9000));
    assert_eq!(exit.http(get(&long), CAP).await.unwrap_err().kind(), ErrorKind::BadRequest);
    let bad_method = HttpRequest { method: "BREW".into(), ..get("http://example.com/") };
    assert_eq!(exit.http(bad_method, CAP).await.unwrap_err().kind(), ErrorKind::BadRequest);
    let connect = HttpRequest { method: "CONNECT".into(), ..get("http://example.com/") };
    assert_eq!(exit.http(connect, CAP).await.unwrap_err().kind(), ErrorKind::Unsupported);
    let bad_header =
        HttpRequest { headers: vec![("X-A".into(), "a\r\nInjected: 1".into())], ..get("http://example.com/") };
    assert_eq!(exit.http(bad_header, CAP).await.unwrap_err().kind(), ErrorKind::BadRequest);
}

#[tokio::test]
async fn request_limits_and_header_policy() {
    let server = canned(hello()).await;
    let mut config = loopback_allowed();
    config.http.max_request_body = 10;
    config.http.ports = vec![server.addr.port()];
    let exit = ExitServices::new(config).unwrap();

    let big = HttpRequest { method: "POST".into(), body: vec![0; 11], ..get(&server.url("/")) };
    assert_eq!(exit.http(big, CAP).await.unwrap_err().kind(), ErrorKind::TooLarge);

    let spoof = HttpRequest { headers: vec![("Host".into(), "internal.example".into())], ..get(&server.url("/")) };
    let err = exit.http(spoof, CAP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert!(err.to_string().contains("Host header internal.example disagrees"), "{err}");

    let other_port = exit.http(get("http://127.0.0.1:1/"), CAP).await.unwrap_err();
    assert_eq!(other_port, ExitError::Forbidden("destination port 1 is not allowed".into()));
    assert_eq!(server.accepted(), 0);

    let headers = [("Host", &*server.addr.to_string()), ("Connection", "X-Secret"), ("X-Secret", "1"), ("X-Kept", "2")];
    let headers = headers.iter().map(|(n, v)| ((*n).into(), (*v).into())).collect();
    let post = HttpRequest { method: "post".into(), headers, body: b"0123456789".to_vec(), ..get(&server.url("/")) };
    exit.http(post, CAP).await.unwrap();
    let seen = server.request(0).to_ascii_lowercase();
    assert!(seen.starts_with("post / http/1.1\r\n") && seen.ends_with("\r\n\r\n0123456789"), "{seen}");
    assert!(seen.contains("x-kept: 2") && !seen.contains("x-secret"), "{seen}");
}

#[tokio::test]
async fn concurrency_bound_gives_busy() {
    let server = serve(Arc::new(|_: &str| Reply::Stall)).await;
    let mut config = loopback_allowed();
    config.max_concurrent = 1;
    config.http.timeout = Duration::from_millis(500);
    let exit = ExitServices::new(config).unwrap();
    let first = tokio::spawn({
        let exit = exit.clone();
        let url = server.url("/");
        async move { exit.http(get(&url), CAP).await }
    });
    while server.accepted() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(exit.http(get(&server.url("/")), CAP).await.unwrap_err(), ExitError::Busy(1));
    assert_eq!(first.await.unwrap().unwrap_err().kind(), ErrorKind::Timeout);
    // The permit is released again.
    assert_eq!(exit.http(get(&server.url("/")), CAP).await.unwrap_err().kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn https_sends_the_url_host_as_sni_to_the_pinned_address() {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hello = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 2048];
        let n = stream.read(&mut buf).await.unwrap();
        buf.truncate(n);
        buf // dropped: the handshake fails
    });
    let resolver = ScriptedResolver::new("sni.test", vec![vec!["127.0.0.1"]]);
    let exit = ExitServices::with_resolver(loopback_allowed(), resolver.clone()).unwrap();
    let err = exit.http(get(&format!("https://sni.test:{port}/")), CAP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upstream);
    assert!(err.to_string().contains("TLS handshake failed"), "{err}");
    let client_hello = hello.await.unwrap();
    assert_eq!(client_hello.first(), Some(&0x16), "a TLS handshake record");
    assert!(client_hello.windows(8).any(|w| w == b"sni.test"), "SNI carries the URL host");
    assert_eq!(resolver.calls(), 1);
}

#[tokio::test]
async fn see_other_becomes_get_and_credentials_stay_with_their_origin() {
    let target = canned(hello()).await;
    let location = target.url("/landing");
    let origin = canned(response("303 See Other", &[("Location", &location)], b"")).await;
    let exit = ExitServices::new(loopback_allowed()).unwrap();
    let headers = vec![("Authorization".into(), "Bearer secret".into()), ("X-Kept".into(), "1".into())];
    let post = HttpRequest { method: "POST".into(), headers, body: b"form=1".to_vec(), ..get(&origin.url("/submit")) };
    let res = exit.http(post, CAP).await.unwrap();
    assert_eq!(res.body, b"hello");
    let first = origin.request(0).to_ascii_lowercase();
    assert!(first.starts_with("post /submit") && first.contains("authorization: bearer secret"), "{first}");
    let second = target.request(0).to_ascii_lowercase();
    assert!(second.starts_with("get /landing http/1.1\r\n"), "{second}");
    assert!(!second.contains("authorization") && !second.contains("form=1"), "{second}");
    assert!(second.contains("x-kept: 1"), "{second}");
}
