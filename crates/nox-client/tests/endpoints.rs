//! The SOCKS5 and JSON-RPC endpoints over real loopback sockets, with a
//! stand-in for the mixnet that records what it was asked.

use std::sync::{Arc, Mutex};

use nox_client::{ClientError, Requester, RpcConfig, SocksConfig, serve_rpc, serve_socks};
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
            RequestBody::Echo(_) | RequestBody::Relay(_) => Err(ClientError::Closed),
        }
    }
}

async fn socks_server(fake: Fake) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_socks(listener, fake, SocksConfig::default()));
    addr
}

async fn read_all(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn socks_connect_then_one_http_request() {
    let fake = Fake::default();
    let addr = socks_server(fake.clone()).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    let mut reply = [0u8; 2];
    s.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply, [5, 0]);
    // CONNECT example.org:8080 by name: never resolved locally.
    let mut connect = vec![5, 1, 0, 3, 11];
    connect.extend_from_slice(b"example.org");
    connect.extend_from_slice(&8080u16.to_be_bytes());
    s.write_all(&connect).await.unwrap();
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply[..2], [5, 0]);
    s.write_all(b"POST /submit?x=1 HTTP/1.1\r\nHost: example.org\r\nContent-Length: 4\r\nProxy-Connection: keep-alive\r\n\r\nbody")
        .await
        .unwrap();
    let text = String::from_utf8(read_all(&mut s).await).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("Connection: close\r\n") && !text.contains("keep-alive"), "{text}");
    assert!(text.ends_with("\r\n\r\nPOST http://example.org:8080/submit?x=1 body"), "{text}");
    let seen = fake.seen.lock().unwrap();
    let RequestBody::Http(http) = &seen[0].0 else { panic!("not http") };
    assert_eq!(http.headers, vec![("Host".to_string(), "example.org".to_string())]);
}

#[tokio::test]
async fn socks_refusals() {
    let fake = Fake::default();
    let addr = socks_server(fake.clone()).await;
    // Only username/password offered.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 2]).await.unwrap();
    assert_eq!(read_all(&mut s).await, vec![5, 0xff]);
    // BIND.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80]).await.unwrap();
    assert_eq!(read_all(&mut s).await, vec![5, 0, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0]);
    // TLS on the tunnel: closed without an answer.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 1, 187, 0x16, 3, 1, 0, 5]).await.unwrap();
    assert_eq!(read_all(&mut s).await, vec![5, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    // An error from the exit becomes an HTTP error.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80]).await.unwrap();
    s.write_all(b"GET /forbidden HTTP/1.1\r\n\r\n").await.unwrap();
    let text = String::from_utf8(read_all(&mut s).await).unwrap();
    assert!(text.contains("HTTP/1.1 403 Forbidden\r\n") && text.contains("destination not allowed"), "{text}");
    assert_eq!(fake.seen.lock().unwrap().len(), 1, "only the last connection reached the mixnet");
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
