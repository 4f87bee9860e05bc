//! The request part of `nox testnet demo`: an anonymous client (`nox-client`)
//! asks the running testnet's exits for things and gets the answers back
//! through single-use reply blocks, split into FEC shards. Prints what
//! happened: round-trip times, sizes, shards, and the exit's refusals.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use nox_client::{Client, ClientConfig, ClientHandle, ShellConfig};
use nox_message::{HttpRequestMsg, HttpResponseMsg, RequestBody, Status};

use crate::net::TestnetError;

/// Echo round trips in the demo.
const ECHOES: usize = 50;
/// Size of the multi-fragment echo.
const LARGE: usize = 256 * 1024;

/// Runs the requests against the testnet in `dir` (already up, its exits
/// allowed to reach `server`, which serves the demo's web page, and `tls`,
/// where an HTTPS server of a throwaway CA answers a stream).
pub fn run(dir: &Path, server: std::net::TcpListener, tls: std::net::TcpListener) -> Result<(), TestnetError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(requests(dir, server, tls))
}

async fn requests(dir: &Path, server: std::net::TcpListener, tls: std::net::TcpListener) -> Result<(), TestnetError> {
    // The geometry is the one the testnet's topology names.
    let topology = crate::directory::topology_async(dir).await?;
    let geometry = *topology.geometry();
    let client =
        Client::start(ShellConfig { topology, core: ClientConfig::default() }).await.map_err(|e| e.to_string())?;
    println!("requests: an anonymous client (reply gateway in the last layer) sends requests; answers return on SURBs");

    let mut rtts = Vec::with_capacity(ECHOES);
    for i in 0..ECHOES {
        let text = format!("echo {i} through entry, mix, exit and back");
        let started = Instant::now();
        let response = request(&client, RequestBody::Echo(text.clone().into_bytes()), 1024).await?;
        if response.body != text.as_bytes() {
            return Err(format!("echo {i} came back altered"));
        }
        rtts.push(started.elapsed());
    }
    rtts.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "  echo ×{ECHOES}: all answered; SURB round trip p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms (6 hops, μ = 1 ms per hop)",
        ms(rtts[ECHOES / 2]),
        ms(rtts[ECHOES * 9 / 10]),
        ms(rtts[ECHOES - 1])
    );

    let large: Vec<u8> = (0..LARGE).map(|i| (i % 253) as u8).collect();
    let sent_before = client.stats().real_packets;
    let started = Instant::now();
    let response = request(&client, RequestBody::Echo(large.clone()), LARGE).await?;
    let forward_packets = client.stats().real_packets - sent_before;
    let shards = LARGE.div_ceil(nox_message::max_reply_len(&geometry, 1));
    if response.body != large {
        return Err("the 256 KiB echo came back altered".into());
    }
    println!(
        "  echo 256 KiB: request in {} forward packets, reply rebuilt from ≥{shards} FEC shards in {:.1} ms",
        forward_packets,
        ms(started.elapsed())
    );

    let page = b"<html><body>hello from a web server the exit may reach</body></html>".to_vec();
    // Testnet exits allow this one server's address and port; a real exit
    // refuses every loopback destination.
    let server = crate::servers::http_server_on(server, page.clone()).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let body = http_get(&client, &format!("http://{server}/")).await?;
    let fetched = HttpResponseMsg::decode(&body).map_err(|e| e.to_string())?;
    println!(
        "  HTTP GET http://{server}/ via the exit: status {}, {} bytes, {:.1} ms",
        fetched.status,
        fetched.body.len(),
        ms(started.elapsed())
    );
    // A node's own metrics port on the same loopback address: not allowed.
    let metrics = crate::net::nodes(dir).first().map(|n| format!("http://{}/metrics", n.metrics));
    let urls = ["http://10.0.0.1/".to_owned(), "http://169.254.169.254/latest/meta-data/".to_owned()];
    for url in urls.iter().chain(metrics.iter()) {
        let message = HttpRequestMsg { method: "GET".into(), url: url.into(), headers: Vec::new(), body: Vec::new() };
        let response = client.request(RequestBody::Http(message), 4096).await.map_err(|e| e.to_string())?;
        if response.status != Status::Forbidden {
            return Err(format!("HTTP GET {url} through the exit was not refused: {:?}", response.status));
        }
        println!(
            "  HTTP GET {url}: refused by the exit ({:?}: {})",
            response.status,
            response.error_message().unwrap_or("")
        );
    }
    tls_stream(&client, tls).await?;
    let stats = client.stats();
    println!("  client: {stats:?}");
    Ok(())
}

/// HTTPS through a stream (docs/spec/streams.md): the local SOCKS5 endpoint
/// relays a `CONNECT`, TLS runs from this process to the server, which the
/// client verifies against the demo's CA; the exit relays ciphertext.
async fn tls_stream(client: &ClientHandle, tls: std::net::TcpListener) -> Result<(), TestnetError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    fn e(what: &'static str) -> impl Fn(std::io::Error) -> String {
        move |err| format!("HTTPS stream, {what}: {err}")
    }
    let ca = crate::servers::TestCa::new().map_err(e("test CA"))?;
    let server = crate::servers::tls_server_on(tls, &ca).map_err(e("server"))?;
    let socks = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(e("SOCKS listener"))?;
    let socks_addr = socks.local_addr().map_err(e("SOCKS listener"))?;
    tokio::spawn(nox_client::serve_socks(socks, client.clone(), nox_client::SocksConfig::default()));
    let started = Instant::now();
    let mut tcp = tokio::net::TcpStream::connect(socks_addr).await.map_err(e("SOCKS connect"))?;
    let mut connect = vec![5, 1, 0, 5, 1, 0, 3, 9];
    connect.extend_from_slice(b"localhost");
    connect.extend_from_slice(&server.port().to_be_bytes());
    tcp.write_all(&connect).await.map_err(e("SOCKS request"))?;
    let mut reply = [0u8; 12];
    tcp.read_exact(&mut reply).await.map_err(e("SOCKS reply"))?;
    if reply[3] != 0 {
        return Err(format!("HTTPS stream: the exit refused the CONNECT (SOCKS reply {})", reply[3]));
    }
    let opened = started.elapsed();
    let config = ca.client_config().map_err(e("TLS config"))?;
    let name = rustls::pki_types::ServerName::try_from("localhost").map_err(|err| err.to_string())?;
    let mut tls = tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.map_err(e("TLS handshake"))?;
    let len = 1 << 20;
    let request = format!("GET /bytes/{len} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await.map_err(e("request"))?;
    let mut response = Vec::new();
    tls.read_to_end(&mut response).await.map_err(e("response"))?;
    let body = response.windows(4).position(|w| w == b"\r\n\r\n").map(|at| &response[at + 4..]);
    if body != Some(&crate::servers::pattern(len)[..]) {
        return Err("HTTPS stream: the 1 MiB body differs from what the server sent".into());
    }
    println!(
        "  HTTPS GET https://localhost:{}/bytes/{len} through a SOCKS5 stream: CONNECT answered in {:.1} ms, \
         certificate verified by the client (the exit relays ciphertext), {len} bytes intact in {:.1} ms",
        server.port(),
        opened.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

async fn request(
    client: &ClientHandle,
    body: RequestBody,
    expected: usize,
) -> Result<nox_message::Response, TestnetError> {
    let response = client.request(body, expected).await.map_err(|e| e.to_string())?;
    if response.status != Status::Ok {
        return Err(format!("the exit answered {:?}: {}", response.status, response.error_message().unwrap_or("")));
    }
    Ok(response)
}

async fn http_get(client: &ClientHandle, url: &str) -> Result<Vec<u8>, TestnetError> {
    let message = HttpRequestMsg { method: "GET".into(), url: url.into(), headers: Vec::new(), body: Vec::new() };
    Ok(request(client, RequestBody::Http(message), 16 * 1024).await?.body)
}
