//! SOCKS5 `CONNECT` streams end to end (docs/spec/streams.md), through real
//! node processes (`nox testnet up`, one node per layer) with the real client
//! (`nox-client`) in this process and the real `curl`:
//!
//! - `curl --socks5-hostname … https://localhost:…/` against a TLS server of a
//!   throwaway CA passes certificate verification with `--cacert` and fails
//!   without it: TLS runs end to end, the exit relays ciphertext;
//! - a 5 MiB download and a 1 MiB upload arrive intact (checked byte for byte
//!   and by SHA-256 at the server);
//! - a stream survives 10 % loss injected in both directions (the client
//!   drops forward packets, the exit drops reply packets);
//! - every class of refused destination fails the `CONNECT` with the right
//!   SOCKS5 reply code (2 not allowed, including unresolvable names; 5 refused);
//! - an exit restart resets its streams: the local connection is reset, and
//!   a new stream works afterwards.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nox_client::{ClientConfig, ClientHandle, SocksConfig};
use nox_testnet::servers::{TestCa, http_server_plain_on, pattern, sha256_hex, tcp_echo_server_on, tls_server_on};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;

use common::{NOX, QUIET, Testnet, client, node_dir_of, port_base, testnet_dir, topology};

/// The highest port a streams testnet can use: the last block, the last slot, then the last of
/// its 3 nodes' WebSocket ports (base + 300 + i; links, metrics and Anvil are below).
const LAST_PORT: u32 = 26_000 + 149 * 40 + 3 * 10 + 300 + 2;

#[test]
fn the_port_blocks_stay_below_the_ephemeral_range() {
    assert!(LAST_PORT < u32::from(common::ephemeral_start()), "{LAST_PORT}");
}

fn testnet(name: &str, slot: u16, extra: &[String]) -> Testnet {
    // Below Linux's ephemeral range (32768..60999): a fixed port in it can be taken at any
    // moment as the local port of some outgoing connection ("Address already in use").
    // The last block's last port (LAST_PORT, tested) stays under 32768.
    let base = port_base(26_000, 150, 40) + slot * 10;
    let mut args: Vec<String> = QUIET.map(str::to_owned).to_vec();
    args.extend_from_slice(extra);
    Testnet::up(testnet_dir("nox-streams", name), base, &args)
}

fn allow(addrs: &[SocketAddr]) -> Vec<String> {
    addrs.iter().flat_map(|a| ["--exit-allow".to_owned(), a.to_string()]).collect()
}

/// The index N of `node-N` that serves the (only) exit: the node whose
/// `listen` address is the last layer's in the topology.
fn exit_index(dir: &Path) -> usize {
    let topology = topology(dir);
    let exit = topology.nodes_in_layer(topology.layers().exit()).next().expect("an exit").descriptor.address;
    node_dir_of(dir, exit).expect("the exit's node directory").0
}

/// A counter from the exit's `/metrics` (0 when absent).
fn exit_metric(dir: &Path, name: &str) -> u64 {
    common::node_metric(&dir.join(format!("node-{}", exit_index(dir))), name)
}

async fn socks(client: &ClientHandle) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(nox_client::serve_socks(listener, client.clone(), SocksConfig::default()));
    addr
}

fn bind() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port")
}

/// Runs curl (off the runtime) and returns its status and stderr.
async fn curl(args: Vec<String>) -> (bool, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new("curl").args(&args).output().expect("curl runs");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    })
    .await
    .unwrap()
}

fn curl_args(socks: SocketAddr, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> =
        ["-sS", "--fail", "--max-time", "120", "--socks5-hostname", &socks.to_string()].map(str::to_owned).to_vec();
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

/// A SOCKS5 `CONNECT` by hand: returns the reply code.
async fn connect_code(socks: SocketAddr, atyp_and_addr: &[u8], port: u16) -> u8 {
    let mut s = TcpStream::connect(socks).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    let mut method = [0u8; 2];
    s.read_exact(&mut method).await.unwrap();
    let mut request = vec![5, 1, 0];
    request.extend_from_slice(atyp_and_addr);
    request.extend_from_slice(&port.to_be_bytes());
    s.write_all(&request).await.unwrap();
    let mut reply = [0u8; 10];
    tokio::time::timeout(Duration::from_secs(60), s.read_exact(&mut reply)).await.expect("a SOCKS reply").unwrap();
    reply[1]
}

fn domain(name: &str) -> Vec<u8> {
    [&[3u8, name.len() as u8][..], name.as_bytes()].concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_https_end_to_end_downloads_and_uploads_through_streams() {
    let ca = TestCa::new().unwrap();
    let tls = tls_server_on(bind(), &ca).unwrap();
    let net = testnet("tls", 0, &allow(&[tls]));
    let client = client(&net.dir, ClientConfig::default()).await;
    let socks = socks(&client).await;
    let ca_pem = net.dir.join("ca.pem");
    ca.write_ca_pem(&ca_pem).unwrap();
    let cacert = ca_pem.display().to_string();
    let base = format!("https://localhost:{}", tls.port());

    // Certificate verification passes with the test CA: TLS ends at curl.
    let page = net.dir.join("page");
    let started = Instant::now();
    let (ok, err) =
        curl(curl_args(socks, &["--cacert", &cacert, "-o", &page.display().to_string(), &format!("{base}/")])).await;
    assert!(ok, "curl https through the stream: {err}");
    assert_eq!(std::fs::read(&page).unwrap(), b"hello through the mixnet\n");
    eprintln!("first https page in {:?}", started.elapsed());

    // Without the CA, curl refuses the server's certificate: the check is real.
    let (ok, err) = curl(curl_args(socks, &[&format!("{base}/")])).await;
    assert!(!ok, "curl accepted a certificate of an unknown CA");
    assert!(err.to_lowercase().contains("certificate"), "{err}");

    // 5 MiB down, byte for byte.
    let blob = net.dir.join("blob");
    let len = 5 << 20;
    let started = Instant::now();
    let (ok, err) = curl(curl_args(
        socks,
        &["--cacert", &cacert, "-o", &blob.display().to_string(), &format!("{base}/bytes/{len}")],
    ))
    .await;
    assert!(ok, "5 MiB download: {err}");
    let got = std::fs::read(&blob).unwrap();
    assert_eq!(got.len(), len);
    assert!(got == pattern(len), "the 5 MiB download differs from what the server sent");
    eprintln!("5 MiB down in {:?}", started.elapsed());

    // 1 MiB up: the server hashes what it received.
    let upload = net.dir.join("upload");
    let up: Vec<u8> = pattern((1 << 20) + 7).into_iter().rev().collect();
    std::fs::write(&upload, &up).unwrap();
    let answer = net.dir.join("answer");
    let started = Instant::now();
    let (ok, err) = curl(curl_args(
        socks,
        &[
            "--cacert",
            &cacert,
            "--data-binary",
            &format!("@{}", upload.display()),
            "-o",
            &answer.display().to_string(),
            &format!("{base}/sha256"),
        ],
    ))
    .await;
    assert!(ok, "1 MiB upload: {err}");
    assert_eq!(std::fs::read_to_string(&answer).unwrap().trim(), sha256_hex(&up));
    eprintln!("1 MiB up in {:?}", started.elapsed());
    assert_eq!(client.stats().timeouts, 0);

    // The exit's aggregate counters saw it (and nothing per stream).
    assert!(exit_metric(&net.dir, "nox_exit_streams_opened_total") >= 4);
    assert!(exit_metric(&net.dir, "nox_exit_streams_bytes_down_total") >= 5 << 20);
    assert!(exit_metric(&net.dir, "nox_exit_streams_bytes_up_total") >= 1 << 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_survives_ten_percent_loss_both_ways() {
    let plain = http_server_plain_on(bind()).unwrap();
    let mut extra = allow(&[plain]);
    extra.extend(["--inject-reply-loss", "0.1"].map(str::to_owned));
    let net = testnet("loss", 1, &extra);
    let core = ClientConfig { inject_loss: 0.1, ..ClientConfig::default() };
    let client = client(&net.dir, core).await;
    let socks = socks(&client).await;
    let out = net.dir.join("blob");
    let len = 2 << 20;
    let url = format!("http://localhost:{}/bytes/{len}", plain.port());
    let (ok, err) = curl(curl_args(socks, &["-o", &out.display().to_string(), &url])).await;
    assert!(ok, "download through 10 % loss: {err}");
    assert!(std::fs::read(&out).unwrap() == pattern(len), "bytes differ after loss");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_destinations_fail_the_connect_with_the_socks_code() {
    let echo = tcp_echo_server_on(bind()).unwrap();
    // A port that was free a moment ago: allow-listed, nothing listens.
    let closed = bind().local_addr().unwrap();
    let net = testnet("refused", 2, &allow(&[echo, closed]));
    let client = client(&net.dir, ClientConfig::default()).await;
    let socks = socks(&client).await;
    let not_allowed = [
        ("private 10/8", vec![1, 10, 0, 0, 1], 443),
        ("private 192.168/16", vec![1, 192, 168, 1, 1], 80),
        ("metadata 169.254.169.254", vec![1, 169, 254, 169, 254], 80),
        ("CGNAT 100.64/10", vec![1, 100, 64, 0, 1], 443),
        ("unspecified 0.0.0.0", vec![1, 0, 0, 0, 0], 80),
        ("loopback, a port not allow-listed", vec![1, 127, 0, 0, 1], 1),
        ("loopback on an allowed port (8545), address not allowed", vec![1, 127, 0, 0, 1], 8545),
        ("IPv6 loopback", [&[4u8][..], &std::net::Ipv6Addr::LOCALHOST.octets()].concat(), 443),
        ("IPv6 unique local", [&[4u8][..], &"fd00::1".parse::<std::net::Ipv6Addr>().unwrap().octets()].concat(), 443),
        (
            "IPv4-mapped loopback",
            [&[4u8][..], &"::ffff:127.0.0.1".parse::<std::net::Ipv6Addr>().unwrap().octets()].concat(),
            443,
        ),
        ("a name for loopback, port not allowed", domain("localhost"), 22),
    ];
    for (what, addr, port) in not_allowed {
        assert_eq!(connect_code(socks, &addr, port).await, 2, "{what}");
    }
    // An unresolvable name gets the policy's one answer (docs/spec/streams.md §2).
    assert_eq!(connect_code(socks, &domain("no-such-host.invalid"), 443).await, 2, "unresolvable name");
    assert_eq!(connect_code(socks, &[1, 127, 0, 0, 1], closed.port()).await, 5, "closed port");
    // And the allowed one connects.
    assert_eq!(connect_code(socks, &[1, 127, 0, 0, 1], echo.port()).await, 0, "allowed echo server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_restart_resets_its_streams() {
    let echo = tcp_echo_server_on(bind()).unwrap();
    let net = testnet("restart", 3, &allow(&[echo]));
    let client = client(&net.dir, ClientConfig::default()).await;
    let socks = socks(&client).await;
    let open = || async {
        let mut s = TcpStream::connect(socks).await.unwrap();
        s.write_all(&[5, 1, 0]).await.unwrap();
        let mut method = [0u8; 2];
        s.read_exact(&mut method).await.unwrap();
        let mut request = vec![5, 1, 0, 1, 127, 0, 0, 1];
        request.extend_from_slice(&echo.port().to_be_bytes());
        s.write_all(&request).await.unwrap();
        let mut reply = [0u8; 10];
        s.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply[1], 0, "CONNECT to the echo server");
        s
    };
    let mut s = open().await;
    s.write_all(b"before the restart").await.unwrap();
    let mut buf = [0u8; 18];
    tokio::time::timeout(Duration::from_secs(30), s.read_exact(&mut buf)).await.expect("echo").unwrap();
    assert_eq!(&buf, b"before the restart");

    // Restart the exit (the only node of the last layer).
    let status = Command::new(NOX)
        .args(["testnet", "restart", "--node", &exit_index(&net.dir).to_string(), "--dir"])
        .arg(&net.dir)
        .stdout(Stdio::null())
        .status()
        .expect("nox testnet restart");
    assert!(status.success(), "testnet restart failed");
    let restarted = Instant::now();

    // The exit lost the stream: the next message (or keepalive) draws a
    // RESET, and the local connection is reset or closed.
    let _ = s.write_all(b"after").await;
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut rest)).await;
    assert!(ended.is_ok(), "the stream was not reset within 60 s of the exit restart");
    assert!(rest.is_empty(), "bytes after the restart: {rest:?}");
    eprintln!("stream reset {:?} after the exit restart", restarted.elapsed());

    // A new stream through the restarted exit works.
    let mut s = open().await;
    s.write_all(b"after the restart").await.unwrap();
    let mut buf = [0u8; 17];
    tokio::time::timeout(Duration::from_secs(30), s.read_exact(&mut buf)).await.expect("echo").unwrap();
    assert_eq!(&buf, b"after the restart");
}
