//! Test helpers: a canned HTTP/1.1 server on loopback, a scripted resolver, a recording dialer.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nox_exit::{AllowEntry, BoxFuture, Dialer, ExitConfig, Resolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one request: answer these bytes, or hold the connection open.
pub enum Reply {
    Bytes(Vec<u8>),
    Stall,
}

pub type Handler = Arc<dyn Fn(&str) -> Reply + Send + Sync>;

pub struct Server {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<String>>>,
    pub accepted: Arc<AtomicUsize>,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
    pub fn request(&self, i: usize) -> String {
        self.requests.lock().unwrap()[i].clone()
    }
}

/// A status line, headers and body, with `Content-Length` and `Connection: close`.
pub fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// Read one request: the header block and a `Content-Length` body.
async fn read_request(stream: &mut TcpStream) -> io::Result<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                break;
            }
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

pub async fn serve(handler: Handler) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (reqs, acc) = (requests.clone(), accepted.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            acc.fetch_add(1, Ordering::SeqCst);
            let (handler, reqs) = (handler.clone(), reqs.clone());
            tokio::spawn(async move {
                let Ok(request) = read_request(&mut stream).await else { return };
                let reply = handler(&request);
                reqs.lock().unwrap().push(request);
                match reply {
                    Reply::Bytes(bytes) => {
                        let _ = stream.write_all(&bytes).await;
                        let _ = stream.shutdown().await;
                    }
                    Reply::Stall => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    Server { addr, requests, accepted }
}

/// A server answering every request with the same bytes.
pub async fn canned(bytes: Vec<u8>) -> Server {
    serve(Arc::new(move |_| Reply::Bytes(bytes.clone()))).await
}

/// Answers from a script: the n-th call for a host gets the n-th answer (the last one repeats).
#[derive(Default)]
pub struct ScriptedResolver {
    pub answers: HashMap<String, Vec<Vec<IpAddr>>>,
    pub calls: AtomicUsize,
}

impl ScriptedResolver {
    pub fn new(host: &str, answers: Vec<Vec<&str>>) -> Arc<Self> {
        let answers =
            answers.into_iter().map(|a| a.into_iter().map(|s| s.parse::<IpAddr>().unwrap()).collect()).collect();
        Arc::new(Self { answers: HashMap::from([(host.to_owned(), answers)]), calls: AtomicUsize::new(0) })
    }
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Resolver for ScriptedResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = self.answers.get(host).and_then(|a| a.get(n).or(a.last()).cloned());
        Box::pin(async move {
            let answer = answer.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"))?;
            Ok(answer.into_iter().map(|ip| SocketAddr::new(ip, port)).collect())
        })
    }
}

/// Records every address dialed; connects to `map[addr]` if present (a test stand-in for a
/// global address), otherwise to the address itself.
#[derive(Default)]
pub struct RecordingDialer {
    pub map: HashMap<SocketAddr, SocketAddr>,
    pub dialed: Mutex<Vec<SocketAddr>>,
}

impl RecordingDialer {
    pub fn dialed(&self) -> Vec<SocketAddr> {
        self.dialed.lock().unwrap().clone()
    }
}

impl Dialer for RecordingDialer {
    fn dial(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        self.dialed.lock().unwrap().push(addr);
        let target = self.map.get(&addr).copied().unwrap_or(addr);
        Box::pin(TcpStream::connect(target))
    }
}

pub fn loopback_allowed() -> ExitConfig {
    let mut config = ExitConfig::default();
    config.http.allow = vec!["127.0.0.0/8".parse::<AllowEntry>().unwrap()];
    config.http.timeout = Duration::from_secs(5);
    config
}
