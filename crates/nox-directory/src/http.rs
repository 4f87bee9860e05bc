//! The small subset of HTTP/1.1 the directory speaks (docs/spec/directory.md §2): one request
//! per connection, `content-length` bodies only, `connection: close` on every response.
//! Parsing is pure (bytes in, values out) and strict: anything RFC 9112 calls invalid, and
//! anything this subset does not need, is refused rather than interpreted (no sign or spaces in
//! a length, no duplicate `content-length` or `host`, no `transfer-encoding`, no obsolete line
//! folding, no bare CR or LF, no whitespace before a header's colon, ASCII heads only, bounded
//! line length and header count). The async reader only bounds what it reads.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Largest request head (request line and headers) the server reads.
pub const MAX_HEAD_BYTES: usize = 8 << 10;
/// Largest request body the server reads (a descriptor is far smaller).
pub const MAX_BODY_BYTES: usize = nox_topology::MAX_DESCRIPTOR_BYTES;
/// Longest request line or header line, without its CRLF.
pub const MAX_LINE_BYTES: usize = 2 << 10;
/// Most header lines in a request head.
pub const MAX_HEADERS: usize = 32;
/// Most digits in a `content-length` (more cannot be within any limit here).
const MAX_LENGTH_DIGITS: usize = 9;

/// Why a request or response could not be read; each maps to one status code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// Malformed request line, header or length.
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    /// Malformed response (a client reading a directory's answer): status line, header or
    /// length, or a head over the request limits.
    #[error("malformed response: {0}")]
    MalformedResponse(&'static str),
    /// The head is longer than [`MAX_HEAD_BYTES`], a line longer than [`MAX_LINE_BYTES`], or
    /// there are more than [`MAX_HEADERS`] headers.
    #[error("request head too large")]
    HeadTooLarge,
    /// The body is longer than allowed.
    #[error("request body too large ({0} bytes)")]
    BodyTooLarge(usize),
    /// A body without `content-length` (some `transfer-encoding`).
    #[error("transfer-encoding is not supported; a body needs content-length")]
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
            // Only a client reads a response; were it ever relayed, the upstream answered badly.
            Self::MalformedResponse(_) => 502,
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

/// RFC 9110 `tchar`: the characters of a method or a header name.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

/// A header value's characters: visible ASCII, space and tab (no controls, no CR or LF).
fn is_field_value(s: &str) -> bool {
    s.bytes().all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
}

/// A decimal length: 1 to 9 ASCII digits, nothing else (no sign, no spaces, no `0x`).
pub fn parse_length(value: &str) -> Result<usize, HttpError> {
    if value.is_empty() || value.len() > MAX_LENGTH_DIGITS || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HttpError::Malformed("content-length"));
    }
    value.parse().map_err(|_| HttpError::Malformed("content-length"))
}

/// The header lines of a head (after its first line, up to the blank line), checked for
/// framing: each `(name, value)` with the value's surrounding spaces and tabs removed.
fn header_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Result<Vec<(&'a str, &'a str)>, HttpError> {
    let mut headers = Vec::new();
    for line in lines {
        if line.is_empty() {
            return Err(HttpError::Malformed("blank line inside the head"));
        }
        if line.len() > MAX_LINE_BYTES || headers.len() == MAX_HEADERS {
            return Err(HttpError::HeadTooLarge);
        }
        if line.starts_with([' ', '\t']) {
            return Err(HttpError::Malformed("obsolete line folding"));
        }
        let (name, value) = line.split_once(':').ok_or(HttpError::Malformed("header without ':'"))?;
        if !is_token(name) {
            return Err(HttpError::Malformed("header name"));
        }
        if !is_field_value(value) {
            return Err(HttpError::Malformed("header value"));
        }
        headers.push((name, value.trim_matches([' ', '\t'])));
    }
    Ok(headers)
}

/// Parses a request head (up to and including the blank line).
pub fn parse_request_head(head: &[u8], max_body: usize) -> Result<RequestHead, HttpError> {
    if head.len() > MAX_HEAD_BYTES {
        return Err(HttpError::HeadTooLarge);
    }
    if !head.is_ascii() {
        return Err(HttpError::Malformed("head is not ASCII"));
    }
    let text = std::str::from_utf8(head).map_err(|_| HttpError::Malformed("head is not ASCII"))?;
    let text = text.strip_suffix("\r\n\r\n").ok_or(HttpError::Malformed("head does not end with a blank line"))?;
    // Bare CR or LF anywhere: a line ending some parser would see and we would not.
    let mut lines = text.split("\r\n");
    if lines.clone().any(|l| l.contains(['\r', '\n'])) {
        return Err(HttpError::Malformed("bare CR or LF"));
    }
    let request_line = lines.next().ok_or(HttpError::Malformed("no request line"))?;
    if request_line.len() > MAX_LINE_BYTES {
        return Err(HttpError::HeadTooLarge);
    }
    let mut parts = request_line.split(' ');
    let (Some(method), Some(path), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::Malformed("request line"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0")
        || !is_token(method)
        || !path.starts_with('/')
        || !path.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return Err(HttpError::Malformed("request line"));
    }
    let mut content_length = None;
    let mut host = false;
    for (name, value) in header_lines(lines)? {
        if name.eq_ignore_ascii_case("content-length") {
            if content_length.is_some() {
                return Err(HttpError::Malformed("duplicate content-length"));
            }
            content_length = Some(parse_length(value)?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HttpError::LengthRequired);
        } else if name.eq_ignore_ascii_case("host") {
            if host {
                return Err(HttpError::Malformed("duplicate host"));
            }
            host = true;
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
    response_with(status, content_type, &[], body)
}

/// [`response`] with extra header lines (`name`, `value`; both plain ASCII chosen by the server).
pub fn response_with(status: u16, content_type: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
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
    let extra: String = headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Splits a whole response (read to EOF) into its status code and body. The body is cut to
/// `content-length` when present; fewer bytes than announced is [`HttpError::Truncated`]. The
/// head is checked as strictly as a request's: a duplicate or non-decimal `content-length`, or
/// any `transfer-encoding` (the directory never sends one), is refused as
/// [`HttpError::MalformedResponse`].
pub fn parse_response(bytes: &[u8]) -> Result<(u16, &[u8]), HttpError> {
    response_parts(bytes).map_err(|e| match e {
        HttpError::Malformed(what) => HttpError::MalformedResponse(what),
        HttpError::HeadTooLarge => HttpError::MalformedResponse("head too large"),
        e => e,
    })
}

/// [`parse_response`] with the request parser's error kinds (the shared header checks).
fn response_parts(bytes: &[u8]) -> Result<(u16, &[u8]), HttpError> {
    let end = head_end(bytes).ok_or(HttpError::Truncated)?;
    if !bytes[..end].is_ascii() {
        return Err(HttpError::Malformed("head is not ASCII"));
    }
    let head = std::str::from_utf8(&bytes[..end - 4]).map_err(|_| HttpError::Malformed("head is not ASCII"))?;
    let mut lines = head.split("\r\n");
    if lines.clone().any(|l| l.contains(['\r', '\n'])) {
        return Err(HttpError::Malformed("bare CR or LF"));
    }
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        return Err(HttpError::Malformed("status line"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HttpError::Malformed("status line"));
    }
    let status: u16 = code.parse().map_err(|_| HttpError::Malformed("status code"))?;
    let mut length = None;
    for (name, value) in header_lines(lines)? {
        if name.eq_ignore_ascii_case("content-length") {
            if length.is_some() {
                return Err(HttpError::Malformed("duplicate content-length"));
            }
            length = Some(parse_length(value)?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HttpError::Malformed("transfer-encoding in a response"));
        }
    }
    let body = &bytes[end..];
    match length {
        Some(n) if n > body.len() => Err(HttpError::Truncated),
        Some(n) => Ok((status, &body[..n])),
        None => Ok((status, body)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_response_is_not_called_a_malformed_request() {
        let e = parse_response(b"SMTP 200 OK\r\n\r\n").unwrap_err();
        assert_eq!(e, HttpError::MalformedResponse("status line"));
        assert_eq!(e.to_string(), "malformed response: status line");
        let headers = parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 1\r\n\r\nx");
        assert_eq!(headers.unwrap_err().to_string(), "malformed response: duplicate content-length");
        let folded = parse_response(b"HTTP/1.1 200 OK\r\nx-a: b\r\n c\r\n\r\n").unwrap_err();
        assert_eq!(folded.to_string(), "malformed response: obsolete line folding");
        let long = format!("HTTP/1.1 200 OK\r\nx-a: {}\r\n\r\n", "a".repeat(MAX_LINE_BYTES + 1));
        assert_eq!(parse_response(long.as_bytes()).unwrap_err().to_string(), "malformed response: head too large");
        // A request keeps its own text.
        let request = parse_request_head(b"GET /topology\r\n\r\n", 0).unwrap_err();
        assert_eq!(request.to_string(), "malformed request: request line");
    }
}
