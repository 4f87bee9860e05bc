//! `GET /metrics` over HTTP/1.1 with hyper: Prometheus text of the node's,
//! the exit's, the exit handler's and the links' counters. One request per
//! connection; a client has 2 s to send its request head, and at most
//! [`MAX_CONNECTIONS`] are served at once (more are closed on accept), so a
//! slow or idle client cannot hold the endpoint.

use std::{convert::Infallible, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Incoming, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use nox_link::transport::LinkCounters;
use tokio::sync::{Semaphore, watch};

use crate::NodeMetrics;

/// Connections served at once; more are closed on accept.
pub(super) const MAX_CONNECTIONS: usize = 32;
/// Time a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// Time a whole exchange may take.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// What `/metrics` renders.
pub(super) struct MetricSources {
    pub(super) node: Arc<NodeMetrics>,
    pub(super) exit: Arc<crate::ExitMetrics>,
    /// The exit handler's own counters (streams), on exits.
    pub(super) handler: Option<Arc<dyn crate::ExitHandler>>,
    pub(super) links: Arc<LinkCounters>,
    /// The `[chaos]` fault layer's counters (builds with the `chaos` feature).
    pub(super) chaos: Option<Arc<crate::chaos::LinkFaults>>,
}

impl MetricSources {
    fn render(&self) -> String {
        let handler = self.handler.as_ref().map(|h| h.render_metrics()).unwrap_or_default();
        self.node.render()
            + &self.exit.render()
            + &handler
            + &render_link_counters(&self.links)
            + &crate::chaos::render(self.chaos.as_deref())
    }
}

/// Serves until `shutdown` turns true.
pub(super) async fn serve_metrics(
    listener: tokio::net::TcpListener,
    sources: Arc<MetricSources>,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.wait_for(|stop| *stop) => return Ok(()),
        };
        // An accept error (out of file descriptors, a connection reset before
        // it was taken) is transient: say so and go on serving, instead of
        // ending the task and leaving the node without metrics, unnoticed.
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "metrics: accept failed; retrying in 100 ms");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let sources = sources.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| answer(sources.clone(), request));
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, connection).await;
            drop(slot);
        });
    }
}

async fn answer(sources: Arc<MetricSources>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = if request.method() == Method::GET && request.uri().path() == "/metrics" {
        (StatusCode::OK, sources.render())
    } else {
        (StatusCode::NOT_FOUND, "not found\n".to_owned())
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(CONTENT_TYPE));
    Ok(response)
}

fn render_link_counters(links: &LinkCounters) -> String {
    let mut out =
        String::from("# HELP nox_link_events_total Link-layer events by kind.\n# TYPE nox_link_events_total counter\n");
    for (name, value) in links.snapshot().pairs() {
        out.push_str(&format!("nox_link_events_total{{event=\"{name}\"}} {value}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    async fn server() -> (std::net::SocketAddr, watch::Sender<bool>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sources = MetricSources {
            node: Arc::new(NodeMetrics::default()),
            exit: Arc::new(crate::ExitMetrics::default()),
            handler: None,
            links: Arc::new(LinkCounters::default()),
            chaos: None,
        };
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(serve_metrics(listener, Arc::new(sources), stopped));
        (addr, stop)
    }

    async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_metrics_and_refuses_everything_else() {
        let (addr, _stop) = server().await;
        let ok = exchange(addr, b"GET /metrics HTTP/1.1\r\nhost: n\r\n\r\n").await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains("content-type: text/plain; version=0.0.4"), "{ok}");
        assert!(ok.contains("nox_packets_received_total") && ok.contains("nox_link_events_total"), "{ok}");
        for request in [
            &b"GET / HTTP/1.1\r\nhost: n\r\n\r\n"[..],
            b"POST /metrics HTTP/1.1\r\nhost: n\r\ncontent-length: 0\r\n\r\n",
            b"GET /metricsx HTTP/1.1\r\nhost: n\r\n\r\n",
        ] {
            let answer = exchange(addr, request).await;
            assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
        }
        let garbage = exchange(addr, b"\x16\x03\x01 not http at all\r\n\r\n").await;
        assert!(garbage.is_empty() || garbage.starts_with("HTTP/1.1 400"), "{garbage}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_clients_neither_hold_the_endpoint_nor_exhaust_it() {
        let (addr, _stop) = server().await;
        // More idle connections than slots: each is cut at the head timeout, and the endpoint
        // answers again afterwards.
        let mut idle = Vec::new();
        for _ in 0..MAX_CONNECTIONS + 8 {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        let started = std::time::Instant::now();
        let mut closed = 0;
        for mut stream in idle {
            let mut byte = [0u8; 1];
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(6), stream.read(&mut byte)).await {
                closed += 1;
            }
        }
        assert_eq!(closed, MAX_CONNECTIONS + 8, "every idle connection is closed");
        assert!(started.elapsed() < Duration::from_secs(6), "cut at the head timeout");
        let ok = exchange(addr, b"GET /metrics HTTP/1.1\r\nhost: n\r\n\r\n").await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    }
}
