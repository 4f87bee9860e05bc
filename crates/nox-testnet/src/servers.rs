//! Servers for end-to-end tests and benchmarks of streams through the mixnet: an HTTPS server
//! whose certificate is signed by a throwaway CA made at run time ([`TestCa`]), its plain-HTTP
//! twin (the "direct connection" baseline), and a TCP echo server.
//!
//! The HTTP servers answer three routes, one request per connection (`connection: close`):
//!
//! - `GET /` → [`HELLO`];
//! - `GET /bytes/<n>` → exactly `n` bytes of [`pattern`] (`n` ≤ [`MAX_BODY`]), streamed;
//! - `POST /sha256` → the lowercase hex SHA-256 of the request body and a newline (`content-length` ≤
//!   [`MAX_BODY`]; `expect: 100-continue` is answered), hashed as it arrives.
//!
//! Anything else gets 404 (unknown path), 405 (wrong method), 400, 411 or 413. Each server runs
//! on the current Tokio runtime (as [`http_server_on`]): call it inside one, or
//! after `Runtime::enter`, and keep the runtime alive while the server is used.
//!
//! Files: this one holds the servers' entry points and the body pattern; `servers/ca.rs` the
//! throwaway CA, `servers/http.rs` the request handling, `servers/tests.rs` the tests.

use std::{io, net::SocketAddr, path::Path, sync::Arc, time::Duration};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

mod ca;
mod http;
#[cfg(test)]
mod tests;

pub use ca::{SERVER_NAMES, TestCa};
use http::serve_http;

/// The body of `GET /`.
pub const HELLO: &[u8] = b"hello through the mixnet\n";

/// The largest body `GET /bytes/<n>` sends and `POST /sha256` accepts: 64 MiB.
pub const MAX_BODY: u64 = 64 << 20;

/// A request head (request line and headers) longer than this is refused with 400.
const MAX_HEAD: usize = 16 << 10;

/// Time a client has to finish the TLS handshake and send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(120);

/// `n` bytes of the deterministic pattern `GET /bytes/<n>` sends: byte `i` is
/// `(i * 31 + i / 251) as u8` (it does not repeat every 256 bytes, so a shifted or
/// duplicated chunk shows).
pub fn pattern(n: usize) -> Vec<u8> {
    let mut bytes = vec![0; n];
    fill_pattern(0, &mut bytes);
    bytes
}

/// Writes the pattern's bytes `offset..offset + out.len()` into `out`.
fn fill_pattern(offset: u64, out: &mut [u8]) {
    for (i, byte) in (offset..).zip(out.iter_mut()) {
        *byte = i.wrapping_mul(31).wrapping_add(i / 251) as u8;
    }
}

/// Lowercase hex SHA-256 of `bytes`: what `POST /sha256` answers.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Adopts `listener` (bound earlier) on the current Tokio runtime.
fn adopt(listener: std::net::TcpListener) -> io::Result<(tokio::net::TcpListener, SocketAddr)> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

/// The HTTPS server on `listener` (on the current Tokio runtime), with the certificate of `ca`.
/// Returns its address.
pub fn tls_server_on(listener: std::net::TcpListener, ca: &TestCa) -> io::Result<SocketAddr> {
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config()?);
    let (listener, addr) = adopt(listener)?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let Ok(Ok(tls)) = tokio::time::timeout(HEAD_TIMEOUT, acceptor.accept(stream)).await else { return };
                let _ = serve_http(tls).await;
            });
        }
    });
    Ok(addr)
}

/// The same routes over plain TCP (the "direct connection" baseline), on the current Tokio
/// runtime. Returns its address.
pub fn http_server_plain_on(listener: std::net::TcpListener) -> io::Result<SocketAddr> {
    let (listener, addr) = adopt(listener)?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let _ = serve_http(stream).await;
            });
        }
    });
    Ok(addr)
}

/// A TCP server that writes every byte it reads back to the same connection until the client
/// closes its side, then closes. On the current Tokio runtime; returns its address.
pub fn tcp_echo_server_on(listener: std::net::TcpListener) -> io::Result<SocketAddr> {
    let (listener, addr) = adopt(listener)?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let (mut read, mut write) = stream.split();
                if tokio::io::copy(&mut read, &mut write).await.is_ok() {
                    let _ = write.shutdown().await;
                }
            });
        }
    });
    Ok(addr)
}

/// A loopback listener bound now, served later by [`http_server_on`] (or another server here): its
/// address can go into `Layout::exit_allow` before the testnet starts.
pub fn bind_loopback() -> io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// A one-route HTTP/1.1 server on a listener bound earlier (on the current Tokio runtime),
/// answering `body` to every request (`connection: close`). Returns its address.
pub fn http_server_on(listener: std::net::TcpListener, body: Vec<u8>) -> io::Result<SocketAddr> {
    let body = Arc::new(body);
    http_server_with(listener, move |_path| {
        let body = body.clone();
        async move { Some(body) }
    })
}

/// An HTTP/1.1 server on a listener bound earlier (on the current Tokio runtime) that asks
/// `answer` for each request, given the request target (the path): `Some(body)` is sent as a
/// 200 (`application/octet-stream`, `connection: close`), `None` closes the connection
/// unanswered. `answer` may wait (a server that holds requests until released). A request
/// head over 16 KiB is dropped. Returns its address.
pub fn http_server_with<F, Fut>(listener: std::net::TcpListener, answer: F) -> io::Result<SocketAddr>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Option<Arc<Vec<u8>>>> + Send + 'static,
{
    let (listener, addr) = adopt(listener)?;
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    if request.len() > MAX_HEAD {
                        return;
                    }
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let path = String::from_utf8_lossy(&request).split_whitespace().nth(1).unwrap_or("").to_string();
                let Some(body) = answer(path).await else { return };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body).await;
            });
        }
    });
    Ok(addr)
}

/// A plain HTTP/1.1 GET over a fresh TCP connection; returns the body length.
pub async fn direct_get(addr: SocketAddr, path: &str) -> io::Result<usize> {
    let mut stream = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr)).await??;
    let request = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let head_end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no HTTP head"))?;
    Ok(response.len() - head_end - 4)
}
