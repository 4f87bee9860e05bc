//! The small subset of HTTP/1.1 the directory speaks (docs/spec/directory.md §2): one request
//! per connection, `content-length` bodies only, `connection: close` on every response.
//! Parsing is pure (bytes in, values out); the async readers only bound what they read.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Largest request head (request line and headers) the server reads.
pub const MAX_HEAD_BYTES: usize = 8 << 10;
/// Largest request body the server reads (a descriptor is far smaller).
pub const MAX_BODY_BYTES: usize = nox_topology::MAX_DESCRIPTOR_BYTES;

/// Why a request or response could not be read; each maps to one status code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// Malformed request line, header or length.
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    /// The head is longer than [`MAX_HEAD_BYTES`].
    #[error("request head too large")]
    HeadTooLarge,
    /// The body is longer than allowed.
    #[error("request body too large ({0} bytes)")]
    BodyTooLarge(usize),
    /// A body without `content-length` (chunked or unknown transfer coding).
    #[error("a body needs content-length")]
    LengthRequired,
    /// The peer closed the connection early.
    #[error("connection closed before the message was complete")]
    Truncated,
    /// Socket error.
    #[error("i/o: {0}")]
    Io(String),
}

impl HttpError {
    /// The status code the server answers with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Malformed(_) | Self::Truncated | Self::Io(_) => 400,
            Self::HeadTooLarge => 431,
            Self::BodyTooLarge(_) => 413,
            Self::LengthRequired => 411,
        }
    }
}

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target, e.g. `/topology`.
    pub path: String,
    /// The `content-length`, 0 if absent.
    pub content_length: usize,
}

/// Index just past the `\r\n\r\n` ending the head, if present.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a request head (up to and including the blank line).
pub fn parse_request_head(head: &[u8], max_body: usize) -> Result<RequestHead, HttpError> {
    let text = std::str::from_utf8(head).map_err(|_| HttpError::Malformed("head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().ok_or(HttpError::Malformed("no request line"))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(path), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::Malformed("request line"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || method.is_empty() || !path.starts_with('/') {
        return Err(HttpError::Malformed("request line"));
    }
    let mut content_length = None;
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or(HttpError::Malformed("header without ':'"))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value.parse().map_err(|_| HttpError::Malformed("content-length"))?;
            if content_length.is_some_and(|c| c != n) {
                return Err(HttpError::Malformed("conflicting content-length"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HttpError::LengthRequired);
        }
    }
    let content_length = content_length.unwrap_or(0);
    if content_length > max_body {
        return Err(HttpError::BodyTooLarge(content_length));
    }
    Ok(RequestHead { method: method.to_string(), path: path.to_string(), content_length })
}

/// Reads one request: the head (at most [`MAX_HEAD_BYTES`]) and its body (at most `max_body`).
/// The caller bounds the time.
pub async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    max_body: usize,
) -> Result<(RequestHead, Vec<u8>), HttpError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    let end = loop {
        if let Some(end) = head_end(&buf) {
            break end;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(HttpError::HeadTooLarge);
        }
        let n = stream.read(&mut chunk).await.map_err(|e| HttpError::Io(e.to_string()))?;
        if n == 0 {
            return Err(HttpError::Truncated);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    if end > MAX_HEAD_BYTES {
        return Err(HttpError::HeadTooLarge);
    }
    let head = parse_request_head(&buf[..end], max_body)?;
    let mut body = buf.split_off(end);
    if body.len() > head.content_length {
        return Err(HttpError::Malformed("more bytes than content-length"));
    }
    let missing = head.content_length - body.len();
    let mut rest = vec![0u8; missing];
    stream.read_exact(&mut rest).await.map_err(|_| HttpError::Truncated)?;
    body.extend_from_slice(&rest);
    Ok((head, body))
}

/// A complete response with `connection: close`.
pub fn response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Splits a whole response (read to EOF) into its status code and body. The body is cut to
/// `content-length` when present; fewer bytes than announced is [`HttpError::Truncated`].
pub fn parse_response(bytes: &[u8]) -> Result<(u16, &[u8]), HttpError> {
    let end = head_end(bytes).ok_or(HttpError::Truncated)?;
    let head = std::str::from_utf8(&bytes[..end]).map_err(|_| HttpError::Malformed("head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        return Err(HttpError::Malformed("status line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed("status line"));
    }
    let status: u16 = code.parse().map_err(|_| HttpError::Malformed("status code"))?;
    let body = &bytes[end..];
    let length = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.trim().parse::<usize>().map_err(|_| HttpError::Malformed("content-length")))
        .transpose()?;
    match length {
        Some(n) if n > body.len() => Err(HttpError::Truncated),
        Some(n) => Ok((status, &body[..n])),
        None => Ok((status, body)),
    }
}
