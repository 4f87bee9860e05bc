//! The SOCKS5 endpoint: one plain-HTTP request per connection, carried
//! through the mixnet as an `Http` request to the exit.

use std::time::Duration;

use nox_message::{HttpResponseMsg, RequestBody, Status};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::error::ClientError;
use crate::http1::{self, HttpError, HttpLimits};
use crate::shell::Requester;
use crate::socks::{self, SocksError};

/// Settings of the SOCKS endpoint.
#[derive(Clone, Copy, Debug)]
pub struct SocksConfig {
    /// Request size bounds.
    pub limits: HttpLimits,
    /// Expected reply size, for the SURB budget (default 64 KiB).
    pub expected_reply_len: usize,
    /// Time allowed to read the SOCKS exchange and the request (default 30 s).
    pub read_timeout: Duration,
}

impl Default for SocksConfig {
    fn default() -> Self {
        Self { limits: HttpLimits::default(), expected_reply_len: 64 * 1024, read_timeout: Duration::from_secs(30) }
    }
}

/// Serves SOCKS5 connections until the listener fails.
pub async fn serve_socks(listener: TcpListener, client: impl Requester, config: SocksConfig) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let client = client.clone();
        tokio::spawn(async move {
            if let Err(e) = handle(stream, client, config).await {
                tracing::info!("socks connection closed: {e}");
            }
        });
    }
}

#[derive(Debug, thiserror::Error)]
enum ProxyError {
    #[error("socks: {0}")]
    Socks(#[from] SocksError),
    #[error("http: {0}")]
    Http(#[from] HttpError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("timed out reading from the local client")]
    ReadTimeout,
    #[error("connection closed early")]
    Eof,
}

/// Reads more bytes into `buf` (at most `max` in total), with a deadline.
async fn fill(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    max: usize,
    deadline: tokio::time::Instant,
) -> Result<(), ProxyError> {
    let mut chunk = [0u8; 4096];
    let want = chunk.len().min(max.saturating_sub(buf.len())).max(1);
    let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk[..want]))
        .await
        .map_err(|_| ProxyError::ReadTimeout)??;
    if n == 0 {
        return Err(ProxyError::Eof);
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

async fn handle(mut stream: TcpStream, client: impl Requester, config: SocksConfig) -> Result<(), ProxyError> {
    let deadline = tokio::time::Instant::now() + config.read_timeout;
    let mut buf = Vec::new();
    let greeting_len = loop {
        match socks::parse_greeting(&buf) {
            Ok(Some(n)) => break n,
            Ok(None) => fill(&mut stream, &mut buf, 258, deadline).await?,
            Err(e) => {
                if e == SocksError::NoAcceptableAuth {
                    stream.write_all(&socks::method_reply(false)).await?;
                }
                return Err(e.into());
            }
        }
    };
    buf.drain(..greeting_len);
    stream.write_all(&socks::method_reply(true)).await?;
    let (target, request_len) = loop {
        match socks::parse_request(&buf) {
            Ok(Some(found)) => break found,
            Ok(None) => fill(&mut stream, &mut buf, 262, deadline).await?,
            Err(e) => {
                if let Some(code) = e.reply() {
                    stream.write_all(&socks::reply(code)).await?;
                }
                return Err(e.into());
            }
        }
    };
    buf.drain(..request_len);
    stream.write_all(&socks::reply(socks::Reply::Succeeded)).await?;

    let head = loop {
        match http1::parse_head(&buf, &config.limits) {
            Ok(Some(head)) => break head,
            Ok(None) => fill(&mut stream, &mut buf, config.limits.max_head, deadline).await?,
            Err(HttpError::Tls) => {
                tracing::warn!(
                    "TLS ClientHello on the SOCKS tunnel: closing; only plain http:// is proxied (HTTPS goes through the exit's own fetch via the RPC/HTTP API)"
                );
                return Ok(());
            }
            Err(e) => {
                stream.write_all(&http1::error_response(e.status(), &e.to_string())).await?;
                return Err(e.into());
            }
        }
    };
    let body_end = head.head_len + head.content_length;
    while buf.len() < body_end {
        fill(&mut stream, &mut buf, body_end, deadline).await?;
    }
    let body = buf[head.head_len..body_end].to_vec();
    let message = http1::to_message(head, &target.authority(), body);
    let result = client.request(RequestBody::Http(message), config.expected_reply_len).await;
    stream.write_all(&answer(result)).await?;
    stream.shutdown().await?;
    Ok(())
}

/// The bytes written back for a mixnet result.
fn answer(result: Result<nox_message::Response, ClientError>) -> Vec<u8> {
    match result {
        Ok(response) if response.status == Status::Ok => match HttpResponseMsg::decode(&response.body) {
            Ok(http) => http1::write_response(&http),
            Err(e) => http1::error_response(502, &format!("undecodable response from the exit: {e}")),
        },
        Ok(response) => {
            let status = match response.status {
                Status::BadRequest => 400,
                Status::Forbidden => 403,
                Status::TooLarge => 413,
                Status::Timeout => 504,
                Status::Busy => 503,
                Status::Unsupported => 501,
                _ => 502,
            };
            let message = response.error_message().unwrap_or("error from the exit");
            http1::error_response(status, &format!("exit: {message}"))
        }
        Err(ClientError::Timeout) => http1::error_response(504, "no reply through the mixnet in time"),
        Err(e) => http1::error_response(502, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_errors_map_to_http_statuses() {
        let text = |r| String::from_utf8(answer(r)).unwrap();
        assert!(text(Err(ClientError::Timeout)).starts_with("HTTP/1.1 504 "));
        let forbidden = nox_message::Response::error(Status::Forbidden, "not allowed");
        let t = text(Ok(forbidden));
        assert!(t.starts_with("HTTP/1.1 403 ") && t.contains("exit: not allowed"), "{t}");
        let ok =
            nox_message::Response::ok(HttpResponseMsg { status: 201, headers: vec![], body: b"x".to_vec() }.encode());
        assert!(text(Ok(ok)).starts_with("HTTP/1.1 201 Created\r\n"));
        assert!(text(Ok(nox_message::Response::ok(vec![0xff]))).starts_with("HTTP/1.1 502 "));
    }
}
