//! One HTTP/1.1 exchange over a connection the exit opens itself to a pinned address.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

use crate::error::ExitError;
use crate::resolver::Dialer;
use crate::target::Target;

/// Response header block limit handed to hyper (its minimum is 8 KiB).
const MAX_HEADER_BUF: usize = 64 * 1024;

/// A complete, size-capped response.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// Aborts the connection driver when the exchange ends, times out or is dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn upstream(msg: String) -> ExitError {
    ExitError::Upstream(msg)
}

/// Connect to the first of `addrs` that accepts (all already checked), then exchange `request`.
/// `cap` bounds the response: header bytes plus body bytes.
pub(crate) async fn exchange(
    dialer: &dyn Dialer,
    tls: &TlsConnector,
    target: &Target,
    addrs: &[SocketAddr],
    request: Request<Full<Bytes>>,
    cap: usize,
) -> Result<Fetched, ExitError> {
    let mut last = None;
    let mut stream = None;
    for addr in addrs {
        match dialer.dial(*addr).await {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(stream) = stream else {
        let why = last.map_or_else(|| "no address".to_owned(), |e| e.kind().to_string());
        return Err(upstream(format!("could not connect: {why}")));
    };
    if !target.tls {
        return send(stream, request, cap).await;
    }
    let name = ServerName::try_from(target.host.clone())
        .map_err(|_| ExitError::BadRequest(format!("{} is not a valid TLS server name", target.host)))?;
    let stream = tls.connect(name, stream).await.map_err(|e| upstream(format!("TLS handshake failed: {e}")))?;
    send(stream, request, cap).await
}

async fn send<S>(io: S, request: Request<Full<Bytes>>, cap: usize) -> Result<Fetched, ExitError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(MAX_HEADER_BUF)
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| upstream(format!("HTTP handshake failed: {e}")))?;
    let _driver = AbortOnDrop(tokio::spawn(async move {
        // Errors surface through `send_request` or the body stream.
        let _ = conn.await;
    }));
    let response = sender.send_request(request).await.map_err(|e| upstream(format!("HTTP exchange failed: {e}")))?;
    let (parts, mut body) = response.into_parts();
    let header_bytes: usize = parts.headers.iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum();
    let mut budget = cap.checked_sub(header_bytes).ok_or(ExitError::ResponseTooLarge(cap))?;
    let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > budget as u64) {
        return Err(ExitError::ResponseTooLarge(cap));
    }
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| upstream(format!("reading the response body failed: {e}")))?;
        if let Ok(data) = frame.into_data() {
            budget = budget.checked_sub(data.len()).ok_or(ExitError::ResponseTooLarge(cap))?;
            out.extend_from_slice(&data);
        }
    }
    Ok(Fetched { status: parts.status, headers: parts.headers, body: out })
}
