//! The SOCKS5 and JSON-RPC endpoints over real loopback sockets, with
//! stand-ins for the mixnet that record what they were asked.

use std::sync::{Arc, Mutex};

use nox_client::{
    ClientError, Requester, ResetCode, RpcConfig, SocksConfig, StreamIo, StreamOpener, StreamStatus, StreamTarget,
    serve_rpc, serve_socks,
};
use nox_message::{HttpResponseMsg, RequestBody, Response, Status};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Default)]
struct Fake {
    seen: Arc<Mutex<Vec<(RequestBody, usize)>>>,
}

impl Requester for Fake {
    async fn request(&self, body: RequestBody, expected_reply_len: usize) -> Result<Response, ClientError> {
        self.seen.lock().unwrap().push((body.clone(), expected_reply_len));
        match body {
            RequestBody::Http(http) if http.url.ends_with("/forbidden") => {
                Ok(Response::error(Status::Forbidden, "destination not allowed"))
            }
            RequestBody::Http(http) => {
                let answer = HttpResponseMsg {
                    status: 200,
                    headers: vec![
                        ("Content-Type".into(), "text/plain".into()),
                        ("Connection".into(), "keep-alive".into()),
                    ],
                    body: format!("{} {} {}", http.method, http.url, String::from_utf8_lossy(&http.body)).into_bytes(),
                };
                Ok(Response::ok(answer.encode()))
            }
            RequestBody::JsonRpc(json) if json.windows(7).any(|w| w == b"timeout") => Err(ClientError::Timeout),
            RequestBody::JsonRpc(_) => Ok(Response::ok(br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#.to_vec())),
            RequestBody::Echo(_) | RequestBody::Relay(_) | RequestBody::Stream(_) => Err(ClientError::Closed),
        }
    }
}

/// A stand-in stream: an echo service at the "exit", with targets that fail.
#[derive(Clone, Default)]
struct FakeOpener {
    opened: Arc<Mutex<Vec<StreamTarget>>>,
}

#[derive(Default)]
struct Echo {
    buf: Vec<u8>,
    finished: bool,
    read_all: bool,
}

struct FakeStream {
    reset: Option<ResetCode>,
    echo: Mutex<Echo>,
}

impl StreamOpener for FakeOpener {
    type Stream = FakeStream;
    fn open(&self, target: StreamTarget) -> Result<FakeStream, ClientError> {
        let reset = match target.host.as_str() {
            "refused.test" => Some(ResetCode::Refused),
            "10.0.0.1" => Some(ResetCode::Forbidden),
            "unknown.test" => Some(ResetCode::HostUnreachable),
            _ => None,
        };
        self.opened.lock().unwrap().push(target);
        Ok(FakeStream { reset, echo: Mutex::new(Echo::default()) })
    }
}

impl StreamIo for FakeStream {
    fn status(&self) -> StreamStatus {
        let echo = self.echo.lock().unwrap();
        StreamStatus {
            opened: self.reset.is_none(),
            readable: echo.buf.len(),
            eof: echo.finished && echo.buf.is_empty(),
            writable: if self.reset.is_none() { 4096usize.saturating_sub(echo.buf.len()) } else { 0 },
            closed: echo.finished && echo.buf.is_empty() && echo.read_all,
            reset: self.reset,
        }
    }
    fn write(&self, bytes: &[u8]) -> usize {
        let mut echo = self.echo.lock().unwrap();
        let n = bytes.len().min(4096usize.saturating_sub(echo.buf.len()));
        echo.buf.extend_from_slice(&bytes[..n]);
        n
    }
    fn read(&self, max: usize) -> Vec<u8> {
        let mut echo = self.echo.lock().unwrap();
        let n = max.min(echo.buf.len());
        let out: Vec<u8> = echo.buf.drain(..n).collect();
        if echo.finished && echo.buf.is_empty() {
            echo.read_all = true;
        }
        out
    }
    fn finish(&self) {
        let mut echo = self.echo.lock().unwrap();
        echo.finished = true;
        echo.read_all = echo.buf.is_empty();
    }
    async fn changed(&self) {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

async fn socks_server(opener: FakeOpener) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_socks(listener, opener, SocksConfig::default()));
    addr
}

async fn read_all(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out).await;
    out
}

#[tokio::test]
async fn socks_connect_relays_a_stream_both_ways_with_half_close() {
    let opener = FakeOpener::default();
    let addr = socks_server(opener.clone()).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    let mut reply = [0u8; 2];
    s.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply, [5, 0]);
    // CONNECT example.org:443 by name: never resolved locally. The first
    // bytes of the stream follow the request at once (pipelined).
    let mut connect = vec![5, 1, 0, 3, 11];
    connect.extend_from_slice(b"example.org");
    connect.extend_from_slice(&443u16.to_be_bytes());
    connect.extend_from_slice(b"early ");
    s.write_all(&connect).await.unwrap();
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply, [5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    s.write_all(&big).await.unwrap();
    s.shutdown().await.unwrap();
    let echoed = read_all(&mut s).await;
    let mut expected = b"early ".to_vec();
    expected.extend_from_slice(&big);
    assert_eq!(echoed.len(), expected.len());
    assert!(echoed == expected, "bytes differ");
    assert_eq!(opener.opened.lock().unwrap()[0], StreamTarget { host: "example.org".into(), port: 443 });
}

#[tokio::test]
async fn socks_refusals_carry_the_exit_reason() {
    let opener = FakeOpener::default();
    let addr = socks_server(opener.clone()).await;
    // Only username/password offered.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 2]).await.unwrap();
    assert_eq!(read_all(&mut s).await, vec![5, 0xff]);
    // BIND.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80]).await.unwrap();
    assert_eq!(read_all(&mut s).await, vec![5, 0, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0]);
    // The exit's refusals, as RFC 1928 codes: not allowed (2), unreachable (4), refused (5).
    for (host, code) in [(&b"10.0.0.1"[..], 2u8), (b"unknown.test", 4), (b"refused.test", 5)] {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut request = vec![5, 1, 0, 5, 1, 0];
        if host == b"10.0.0.1" {
            request.extend_from_slice(&[1, 10, 0, 0, 1]);
        } else {
            request.push(3);
            request.push(host.len() as u8);
            request.extend_from_slice(host);
        }
        request.extend_from_slice(&443u16.to_be_bytes());
        s.write_all(&request).await.unwrap();
        assert_eq!(read_all(&mut s).await, vec![5, 0, 5, code, 0, 1, 0, 0, 0, 0, 0, 0], "{host:?}");
    }
    assert_eq!(opener.opened.lock().unwrap().len(), 3, "only the CONNECTs reached the mixnet");
}

#[tokio::test]
async fn rpc_keep_alive_and_errors() {
    let fake = Fake::default();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_rpc(listener, fake.clone(), RpcConfig::default()));
    let mut s = TcpStream::connect(addr).await.unwrap();
    let post = |body: &str| {
        format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    // Two requests on one connection.
    for body in
        [r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#, r#"{"jsonrpc":"2.0","id":42,"method":"timeout"}"#]
    {
        s.write_all(post(body).as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") || !got.ends_with(b"}") {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "connection closed");
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8(got).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.to_ascii_lowercase().contains("content-type: application/json"), "{text}");
        let json = &text[text.find("\r\n\r\n").unwrap() + 4..];
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        if body.contains("timeout") {
            assert_eq!(v["id"], 42);
            assert_eq!(v["error"]["code"], -32000);
        } else {
            assert_eq!(v["result"], "0x1");
        }
    }
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].1, 16 * 1024, "default expected RPC reply size");
}
