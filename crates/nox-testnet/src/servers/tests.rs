//! Tests of the servers, with `curl` and a rustls client as the other end.

use super::*;
use std::{
    io::{Read, Write},
    net::TcpListener,
    path::PathBuf,
    process::{Command, Output},
};

/// A runtime for the servers; the test thread itself blocks on `curl`.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn loopback() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").unwrap()
}

/// A fresh directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nox-test-servers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "60"])
        .args(args)
        .output()
        .expect("run curl (the CI script installs it)")
}

fn ok(output: &Output) -> String {
    assert!(output.status.success(), "curl failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_pattern_does_not_repeat_every_256_bytes() {
    let bytes = pattern(100_000);
    assert_eq!(&bytes[..4], &[0, 31, 62, 93]);
    assert_ne!(bytes[..256], bytes[256..512]);
    let mut tail = vec![0; 1000];
    fill_pattern(99_000, &mut tail);
    assert_eq!(tail, bytes[99_000..]);
    assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/// The real curl checks the certificate chain against the throwaway CA, for every name the
/// certificate carries, and gets the pattern and the body's hash right.
#[test]
fn curl_trusts_the_throwaway_ca_and_gets_the_right_bytes_and_hash() {
    let runtime = runtime();
    let _guard = runtime.enter();
    let ca = TestCa::new().unwrap();
    let addr = tls_server_on(loopback(), &ca).unwrap();
    let dir = scratch("tls");
    let ca_file = dir.join("ca.pem");
    ca.write_ca_pem(&ca_file).unwrap();
    let ca_arg = ca_file.to_str().unwrap();
    let port = addr.port();

    let hello = ok(&curl(&["--cacert", ca_arg, &format!("https://localhost:{port}/")]));
    assert_eq!(hello.as_bytes(), HELLO);
    let by_ip = ok(&curl(&["--cacert", ca_arg, &format!("https://127.0.0.1:{port}/")]));
    assert_eq!(by_ip.as_bytes(), HELLO);

    let file = dir.join("bytes");
    let url = format!("https://localhost:{port}/bytes/1000000");
    ok(&curl(&["--cacert", ca_arg, "--fail", &url, "-o", file.to_str().unwrap()]));
    let got = std::fs::read(&file).unwrap();
    assert!(got == pattern(1_000_000), "wrong bytes ({} received)", got.len());

    // 3 MB: curl sends `expect: 100-continue` for large bodies.
    let upload = dir.join("upload");
    let body: Vec<u8> = pattern(3_000_000).iter().map(|b| b ^ 0x5a).collect();
    std::fs::write(&upload, &body).unwrap();
    let data = format!("@{}", upload.display());
    let hash =
        ok(&curl(&["--cacert", ca_arg, "--fail", "--data-binary", &data, &format!("https://localhost:{port}/sha256")]));
    assert_eq!(hash, format!("{}\n", sha256_hex(&body)));
    ok(&curl(&["--cacert", ca_arg, "--fail", "--data-binary", "", &format!("https://localhost:{port}/sha256")]));

    // The certificate also names ::1.
    if let Ok(v6) = TcpListener::bind("[::1]:0") {
        let v6 = tls_server_on(v6, &ca).unwrap();
        let hello = ok(&curl(&["--cacert", ca_arg, &format!("https://[::1]:{}/", v6.port())]));
        assert_eq!(hello.as_bytes(), HELLO);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without the CA, curl refuses the certificate (exit 60): the check above is real. So does
/// a curl that trusts another throwaway CA.
#[test]
fn curl_without_the_ca_refuses_the_certificate() {
    let runtime = runtime();
    let _guard = runtime.enter();
    let ca = TestCa::new().unwrap();
    let addr = tls_server_on(loopback(), &ca).unwrap();
    let url = format!("https://localhost:{}/", addr.port());
    let out = curl(&[&url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(60), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");

    let dir = scratch("other-ca");
    let other = dir.join("other.pem");
    TestCa::new().unwrap().write_ca_pem(&other).unwrap();
    let out = curl(&["--cacert", other.to_str().unwrap(), &url]);
    assert_eq!(out.status.code(), Some(60), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Rust client (tokio-rustls with `client_config`) reaches the same server.
#[test]
fn a_rustls_client_trusting_the_ca_gets_the_pattern() {
    let runtime = runtime();
    runtime.block_on(async {
        let ca = TestCa::new().unwrap();
        let addr = tls_server_on(loopback(), &ca).unwrap();
        let connector = tokio_rustls::TlsConnector::from(ca.client_config().unwrap());
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut tls = connector.connect(name, tcp).await.unwrap();
        tls.write_all(b"GET /bytes/70000 HTTP/1.1\r\nhost: localhost\r\n\r\n").await.unwrap();
        let mut response = Vec::new();
        tls.read_to_end(&mut response).await.unwrap();
        let end = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        assert!(response.starts_with(b"HTTP/1.1 200 OK\r\n"));
        assert!(response[end + 4..] == pattern(70_000));
    });
}

#[test]
fn the_plain_server_serves_the_same_routes_and_refuses_the_rest() {
    let runtime = runtime();
    let _guard = runtime.enter();
    let addr = http_server_plain_on(loopback()).unwrap();
    let base = format!("http://{addr}");
    assert_eq!(ok(&curl(&[&format!("{base}/")])).as_bytes(), HELLO);

    let dir = scratch("plain");
    let file = dir.join("bytes");
    ok(&curl(&["--fail", &format!("{base}/bytes/123457"), "-o", file.to_str().unwrap()]));
    assert!(std::fs::read(&file).unwrap() == pattern(123_457));
    let data = format!("@{}", file.display());
    let hash = ok(&curl(&["--fail", "--data-binary", &data, &format!("{base}/sha256")]));
    assert_eq!(hash.trim(), sha256_hex(&pattern(123_457)));

    let status = |args: &[&str]| -> String {
        ok(&curl(&[&["--output", "/dev/null", "--write-out", "%{http_code}"], args].concat()))
    };
    assert_eq!(status(&[&format!("{base}/nothing")]), "404");
    assert_eq!(status(&[&format!("{base}/bytes/67108865")]), "400");
    assert_eq!(status(&[&format!("{base}/bytes/ten")]), "400");
    assert_eq!(status(&["--data-binary", "x", &format!("{base}/")]), "405");
    assert_eq!(status(&[&format!("{base}/sha256")]), "405");
    assert_eq!(status(&["-H", "transfer-encoding: chunked", "--data-binary", "x", &format!("{base}/sha256")]), "411");
    // Refused from the head alone: the 64 MiB + 1 body is never sent.
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    raw.write_all(b"POST /sha256 HTTP/1.1\r\ncontent-length: 67108865\r\n\r\n").unwrap();
    let mut response = String::new();
    raw.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_echo_server_echoes_until_eof() {
    let runtime = runtime();
    let _guard = runtime.enter();
    let addr = tcp_echo_server_on(loopback()).unwrap();
    let sent = pattern(1 << 20);
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut reader = stream.try_clone().unwrap();
    let receiver = std::thread::spawn(move || {
        let mut back = Vec::new();
        reader.read_to_end(&mut back).unwrap();
        back
    });
    stream.write_all(&sent).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(receiver.join().unwrap() == sent);
}
