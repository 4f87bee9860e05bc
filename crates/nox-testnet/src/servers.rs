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

use std::{io, net::SocketAddr, path::Path, sync::Arc, time::Duration};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The body of `GET /`.
pub const HELLO: &[u8] = b"hello through the mixnet\n";

/// The largest body `GET /bytes/<n>` sends and `POST /sha256` accepts: 64 MiB.
pub const MAX_BODY: u64 = 64 << 20;

/// A request head (request line and headers) longer than this is refused with 400.
const MAX_HEAD: usize = 16 << 10;

/// Time a client has to finish the TLS handshake and send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(120);

/// Chunk size for streaming `/bytes/<n>` and reading `/sha256` bodies.
const CHUNK: usize = 64 << 10;

/// The names the server certificate is valid for.
pub const SERVER_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// A throwaway certificate authority made at run time and a server certificate signed by it,
/// valid for `localhost`, `127.0.0.1` and `::1` (ECDSA P-256, rcgen with the ring backend).
/// Trust it with `curl --cacert` ([`TestCa::write_ca_pem`]) or [`TestCa::client_config`].
pub struct TestCa {
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    server_cert: CertificateDer<'static>,
    server_key: Vec<u8>,
}

impl TestCa {
    /// Generates the CA's key and self-signed certificate, then the server's key and
    /// certificate (subject alternative names [`SERVER_NAMES`], server-auth usage).
    pub fn new() -> io::Result<Self> {
        let ca_key = rcgen::KeyPair::generate().map_err(io::Error::other)?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(io::Error::other)?;
        ca_params.distinguished_name = rcgen::DistinguishedName::new();
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "NOX throwaway test CA");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).map_err(io::Error::other)?;

        let server_key = rcgen::KeyPair::generate().map_err(io::Error::other)?;
        let names: Vec<String> = SERVER_NAMES.iter().map(|n| (*n).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(names).map_err(io::Error::other)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let server_cert = params.signed_by(&server_key, &ca).map_err(io::Error::other)?;
        Ok(Self {
            ca_pem: ca.pem(),
            ca_der: ca.der().clone(),
            server_cert: server_cert.der().clone(),
            server_key: server_key.serialize_der(),
        })
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate, DER.
    pub fn ca_der(&self) -> &CertificateDer<'static> {
        &self.ca_der
    }

    /// Writes the CA certificate (PEM) to `path`, for `curl --cacert <path>`.
    pub fn write_ca_pem(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, &self.ca_pem)
    }

    /// A rustls server configuration (ring provider, TLS 1.2 and 1.3, ALPN `http/1.1`) that
    /// presents the server certificate.
    pub fn server_config(&self) -> io::Result<Arc<rustls::ServerConfig>> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.server_key.clone()));
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(io::Error::other)?
                .with_no_client_auth()
                .with_single_cert(vec![self.server_cert.clone()], key)
                .map_err(io::Error::other)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// A rustls client configuration (ring provider) that trusts this CA and nothing else.
    pub fn client_config(&self) -> io::Result<Arc<rustls::ClientConfig>> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca_der.clone()).map_err(io::Error::other)?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}

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

/// A parsed request head.
struct Head {
    method: String,
    path: String,
    content_length: Option<u64>,
    chunked: bool,
    expect_continue: bool,
}

/// Parses the request line and the headers the routes need; `None` if malformed.
fn parse_head(head: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, path, version) = (request_line.next()?, request_line.next()?, request_line.next()?);
    if request_line.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut parsed = Head {
        method: method.to_owned(),
        path: path.to_owned(),
        content_length: None,
        chunked: false,
        expect_continue: false,
    };
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            if parsed.content_length.replace(value.parse().ok()?).is_some() {
                return None;
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            parsed.chunked = true;
        } else if name.eq_ignore_ascii_case("expect") {
            parsed.expect_continue = value.eq_ignore_ascii_case("100-continue");
        }
    }
    Some(parsed)
}

/// Writes a complete response with a small body.
async fn respond<S: AsyncWrite + Unpin>(stream: &mut S, status: &str, body: &[u8]) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

/// Serves one request on `stream` (TLS or plain), then closes it.
async fn serve_http<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) -> io::Result<()> {
    let mut buffer = Vec::with_capacity(4096);
    let read_head = async {
        loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                return Ok(Some(end));
            }
            if buffer.len() > MAX_HEAD {
                return Ok(None);
            }
            if stream.read_buf(&mut buffer).await? == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
        }
    };
    let head_end = tokio::time::timeout(HEAD_TIMEOUT, read_head).await.map_err(io::Error::other)??;
    let Some(head) = head_end.and_then(|end| parse_head(&buffer[..end])) else {
        return respond(&mut stream, "400 Bad Request", b"bad request\n").await;
    };
    let body_start = head_end.map_or(0, |end| end + 4);
    match (head.method.as_str(), head.path.as_str()) {
        ("GET", "/") => respond(&mut stream, "200 OK", HELLO).await?,
        ("GET", path) if path.starts_with("/bytes/") => match path["/bytes/".len()..].parse::<u64>() {
            Ok(n) if n <= MAX_BODY => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
                );
                stream.write_all(head.as_bytes()).await?;
                let mut chunk = vec![0u8; CHUNK];
                let mut sent = 0u64;
                while sent < n {
                    let len = usize::try_from(n - sent).map_or(CHUNK, |left| left.min(CHUNK));
                    fill_pattern(sent, &mut chunk[..len]);
                    stream.write_all(&chunk[..len]).await?;
                    sent += len as u64;
                }
                stream.flush().await?;
            }
            Ok(_) => respond(&mut stream, "400 Bad Request", b"at most 67108864 bytes\n").await?,
            Err(_) => respond(&mut stream, "400 Bad Request", b"GET /bytes/<n>\n").await?,
        },
        ("POST", "/sha256") => {
            if head.chunked {
                return respond(&mut stream, "411 Length Required", b"send a content-length\n").await;
            }
            let Some(length) = head.content_length else {
                return respond(&mut stream, "411 Length Required", b"send a content-length\n").await;
            };
            if length > MAX_BODY {
                return respond(&mut stream, "413 Content Too Large", b"at most 67108864 bytes\n").await;
            }
            if head.expect_continue {
                stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
                stream.flush().await?;
            }
            let mut hasher = Sha256::new();
            let early = &buffer[body_start..];
            let early = &early[..early.len().min(usize::try_from(length).unwrap_or(usize::MAX))];
            hasher.update(early);
            let mut left = length - early.len() as u64;
            let mut chunk = vec![0u8; CHUNK];
            while left > 0 {
                let want = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
                let got = stream.read(&mut chunk[..want]).await?;
                if got == 0 {
                    return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
                }
                hasher.update(&chunk[..got]);
                left -= got as u64;
            }
            let mut answer = hex::encode(hasher.finalize());
            answer.push('\n');
            respond(&mut stream, "200 OK", answer.as_bytes()).await?;
        }
        (_, "/" | "/sha256") => respond(&mut stream, "405 Method Not Allowed", b"method not allowed\n").await?,
        ("GET", _) => respond(&mut stream, "404 Not Found", b"not found\n").await?,
        (_, path) if path.starts_with("/bytes/") => {
            respond(&mut stream, "405 Method Not Allowed", b"method not allowed\n").await?
        }
        _ => respond(&mut stream, "404 Not Found", b"not found\n").await?,
    }
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
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
        let hash = ok(&curl(&[
            "--cacert",
            ca_arg,
            "--fail",
            "--data-binary",
            &data,
            &format!("https://localhost:{port}/sha256"),
        ]));
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
        assert_eq!(
            status(&["-H", "transfer-encoding: chunked", "--data-binary", "x", &format!("{base}/sha256")]),
            "411"
        );
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
}
