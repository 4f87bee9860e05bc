//! The loopback HTTP proxy between the registry reader and Anvil that counts HTTP requests,
//! JSON-RPC calls by method and bytes both ways.

use super::*;

/// Counters of the proxy (cumulative; take differences around a measured operation).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) http_requests: AtomicU64,
    pub(crate) calls: AtomicU64,
    pub(crate) request_bytes: AtomicU64,
    pub(crate) response_bytes: AtomicU64,
    pub(crate) methods: Mutex<BTreeMap<String, u64>>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Count {
    pub(crate) http_requests: u64,
    pub(crate) calls: u64,
    pub(crate) request_bytes: u64,
    pub(crate) response_bytes: u64,
    pub(crate) methods: BTreeMap<String, u64>,
}

impl Count {
    pub(crate) fn since(&self, before: &Count) -> Count {
        let mut methods = self.methods.clone();
        for (method, n) in &before.methods {
            if let Some(v) = methods.get_mut(method) {
                *v -= n;
            }
        }
        methods.retain(|_, v| *v > 0);
        Count {
            http_requests: self.http_requests - before.http_requests,
            calls: self.calls - before.calls,
            request_bytes: self.request_bytes - before.request_bytes,
            response_bytes: self.response_bytes - before.response_bytes,
            methods,
        }
    }

    pub(crate) fn total_bytes(&self) -> u64 {
        self.request_bytes + self.response_bytes
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({ "calls": self.calls, "http_requests": self.http_requests, "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes, "total_bytes": self.total_bytes(), "methods": self.methods })
    }
}

/// A loopback HTTP/1.1 proxy in front of the RPC endpoint that counts JSON-RPC calls (per
/// method, batches included) and bytes. Requests must carry a Content-Length (reqwest's do).
pub(crate) struct CountingProxy {
    pub(crate) addr: SocketAddr,
    pub(crate) counters: Arc<Counters>,
    pub(crate) task: tokio::task::JoinHandle<()>,
}

impl CountingProxy {
    pub(crate) async fn start(upstream: SocketAddr) -> Result<Self, BenchError> {
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(err)?;
        let addr = listener.local_addr().map_err(err)?;
        let counters = Arc::new(Counters::default());
        let shared = counters.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let counters = shared.clone();
                tokio::spawn(async move {
                    if let Err(e) = relay(client, upstream, counters).await {
                        tracing::debug!("registry bench proxy: {e}");
                    }
                });
            }
        });
        Ok(Self { addr, counters, task })
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn read(&self) -> Count {
        let c = &self.counters;
        Count {
            http_requests: c.http_requests.load(Ordering::SeqCst),
            calls: c.calls.load(Ordering::SeqCst),
            request_bytes: c.request_bytes.load(Ordering::SeqCst),
            response_bytes: c.response_bytes.load(Ordering::SeqCst),
            methods: c.methods.lock().map(|m| m.clone()).unwrap_or_default(),
        }
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) async fn relay(client: TcpStream, upstream: SocketAddr, counters: Arc<Counters>) -> std::io::Result<()> {
    let server = TcpStream::connect(upstream).await?;
    let (client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up_counters = counters.clone();
    let up = async move {
        let mut reader = BufReader::new(client_read);
        loop {
            let mut head = Vec::new();
            let mut content_length = None;
            loop {
                let before = head.len();
                if reader.read_until(b'\n', &mut head).await? == 0 {
                    server_write.shutdown().await?;
                    return Ok::<_, std::io::Error>(());
                }
                let line = String::from_utf8_lossy(&head[before..]).trim().to_ascii_lowercase();
                if line.is_empty() {
                    break;
                }
                if line.starts_with("transfer-encoding:") {
                    return Err(std::io::Error::other("chunked requests are not supported"));
                }
                if let Some(v) = line.strip_prefix("content-length:") {
                    content_length = v.trim().parse::<usize>().ok();
                }
            }
            let mut body = vec![0u8; content_length.unwrap_or(0)];
            reader.read_exact(&mut body).await?;
            count_calls(&up_counters, &body);
            up_counters.http_requests.fetch_add(1, Ordering::SeqCst);
            up_counters.request_bytes.fetch_add((head.len() + body.len()) as u64, Ordering::SeqCst);
            server_write.write_all(&head).await?;
            server_write.write_all(&body).await?;
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = server_read.read(&mut buf).await?;
            if n == 0 {
                client_write.shutdown().await?;
                return Ok::<_, std::io::Error>(());
            }
            // Counted before the client can see the bytes: a finished call is fully counted.
            counters.response_bytes.fetch_add(n as u64, Ordering::SeqCst);
            client_write.write_all(&buf[..n]).await?;
        }
    };
    tokio::try_join!(up, down).map(|_| ())
}

pub(crate) fn count_calls(counters: &Counters, body: &[u8]) {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let calls: Vec<&Value> = match &value {
        Value::Array(batch) => batch.iter().collect(),
        other => vec![other],
    };
    for call in calls {
        let method = call["method"].as_str().unwrap_or("<unparsed>").to_string();
        counters.calls.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut methods) = counters.methods.lock() {
            *methods.entry(method).or_default() += 1;
        }
    }
}
