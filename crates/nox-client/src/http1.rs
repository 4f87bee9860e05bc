//! One HTTP/1.x request read from a SOCKS tunnel, and the response written
//! back. Pure: bytes in, values out; the SOCKS task does the I/O.
//!
//! Bounds: the head (request line and headers) is at most
//! [`HttpLimits::max_head`] bytes with at most [`MAX_HEADERS`] headers; the
//! body is given by `Content-Length` and at most [`HttpLimits::max_body`].
//! `Transfer-Encoding` (chunked uploads) is refused: the whole request must
//! be known before it enters the mixnet.

use nox_message::{HttpRequestMsg, HttpResponseMsg};

/// Most headers accepted in one request (the message format's own limit).
pub const MAX_HEADERS: usize = 64;

/// Size limits for a request read from a tunnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Request line plus headers, bytes (default 16 KiB).
    pub max_head: usize,
    /// Body, bytes (default 256 KiB).
    pub max_body: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self { max_head: 16 * 1024, max_body: 256 * 1024 }
    }
}

/// Why a request was refused; each maps to an HTTP status sent back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The head is not valid HTTP/1.x.
    #[error("malformed request: {0}")]
    Malformed(String),
    /// The head exceeds the limit.
    #[error("request head exceeds {0} bytes")]
    HeadTooLarge(usize),
    /// The body exceeds the limit.
    #[error("request body of {len} bytes exceeds {max}")]
    BodyTooLarge {
        /// Declared length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A framing this proxy does not support (`Transfer-Encoding`).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// The stream starts with a TLS record: HTTPS through the tunnel.
    #[error("TLS on the tunnel: only plain HTTP is proxied (use the exit's HTTPS fetch)")]
    Tls,
}

impl HttpError {
    /// The status code to answer with.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::Malformed(_) | HttpError::Tls => 400,
            HttpError::HeadTooLarge(_) => 431,
            HttpError::BodyTooLarge { .. } => 413,
            HttpError::Unsupported(_) => 501,
        }
    }
}

/// A parsed request head: what precedes the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// Method, as sent.
    pub method: String,
    /// Path and query (origin form), starting with `/`.
    pub path: String,
    /// Headers in order, hop-by-hop ones removed.
    pub headers: Vec<(String, String)>,
    /// Bytes of the head, including the blank line.
    pub head_len: usize,
    /// Body length from `Content-Length` (0 if absent).
    pub content_length: usize,
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1),
/// plus `Content-Length`, which the writer sets itself.
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// Parses a request head from the start of `buf`. `Ok(None)`: incomplete,
/// read more (unless `buf` already holds `max_head` bytes, which is an error).
pub fn parse_head(buf: &[u8], limits: &HttpLimits) -> Result<Option<RequestHead>, HttpError> {
    if buf.first() == Some(&0x16) {
        return Err(HttpError::Tls);
    }
    let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut storage);
    let status = request.parse(buf).map_err(|e| match e {
        httparse::Error::TooManyHeaders => HttpError::Malformed(format!("more than {MAX_HEADERS} headers")),
        other => HttpError::Malformed(other.to_string()),
    })?;
    let head_len = match status {
        httparse::Status::Complete(n) if n <= limits.max_head => n,
        httparse::Status::Complete(_) => return Err(HttpError::HeadTooLarge(limits.max_head)),
        httparse::Status::Partial if buf.len() >= limits.max_head => {
            return Err(HttpError::HeadTooLarge(limits.max_head));
        }
        httparse::Status::Partial => return Ok(None),
    };
    let method = request.method.ok_or_else(|| HttpError::Malformed("no method".into()))?.to_string();
    let target = request.path.ok_or_else(|| HttpError::Malformed("no target".into()))?;
    let path = origin_form(target)?;
    let mut content_length = 0usize;
    let mut headers = Vec::new();
    for header in request.headers.iter() {
        let value = std::str::from_utf8(header.value)
            .map_err(|_| HttpError::Malformed(format!("header {} is not UTF-8", header.name)))?;
        if header.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HttpError::Unsupported("Transfer-Encoding in a request"));
        }
        if header.name.eq_ignore_ascii_case("content-length") {
            content_length = value.trim().parse().map_err(|_| HttpError::Malformed("bad Content-Length".into()))?;
            if content_length > limits.max_body {
                return Err(HttpError::BodyTooLarge { len: content_length, max: limits.max_body });
            }
        }
        if !is_hop_by_hop(header.name) {
            headers.push((header.name.to_string(), value.to_string()));
        }
    }
    Ok(Some(RequestHead { method, path, headers, head_len, content_length }))
}

/// The path of a request target: origin form as is; absolute form
/// (`http://host/path`, as some proxies send) reduced to its path. The
/// host always comes from the SOCKS target.
fn origin_form(target: &str) -> Result<String, HttpError> {
    if target.starts_with('/') {
        return Ok(target.to_string());
    }
    let rest = target
        .strip_prefix("http://")
        .ok_or_else(|| HttpError::Malformed("request target is neither a path nor an http:// URL".into()))?;
    Ok(match rest.find('/') {
        Some(i) => rest[i..].to_string(),
        None => "/".to_string(),
    })
}

/// The message for the exit: `http://<authority><path>`.
pub fn to_message(head: RequestHead, authority: &str, body: Vec<u8>) -> HttpRequestMsg {
    HttpRequestMsg { method: head.method, url: format!("http://{authority}{}", head.path), headers: head.headers, body }
}

/// An HTTP/1.1 response for the tunnel: hop-by-hop headers dropped,
/// `Content-Length` set, `Connection: close`.
pub fn write_response(response: &HttpResponseMsg) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {} {}\r\n", response.status, reason(response.status)).into_bytes();
    for (name, value) in &response.headers {
        if is_hop_by_hop(name) || name.contains(['\r', '\n']) || value.contains(['\r', '\n']) {
            continue;
        }
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("Content-Length: {}\r\nConnection: close\r\n\r\n", response.body.len()).as_bytes());
    out.extend_from_slice(&response.body);
    out
}

/// A plain-text error response written by the proxy itself.
pub fn error_response(status: u16, message: &str) -> Vec<u8> {
    let headers = vec![("Content-Type".to_string(), "text/plain; charset=utf-8".to_string())];
    write_response(&HttpResponseMsg { status, headers, body: format!("nox: {message}\n").into_bytes() })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> HttpLimits {
        HttpLimits { max_head: 256, max_body: 100 }
    }

    #[test]
    fn parses_a_get_and_drops_hop_by_hop_headers() {
        let req = b"GET /a?b=1 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n";
        let head = parse_head(req, &limits()).unwrap().unwrap();
        assert_eq!(head.method, "GET");
        assert_eq!(head.path, "/a?b=1");
        assert_eq!(head.head_len, req.len());
        assert_eq!(head.content_length, 0);
        assert_eq!(head.headers, vec![("Host".into(), "x".into()), ("Accept".into(), "*/*".into())]);
        let msg = to_message(head, "127.0.0.1:8080", Vec::new());
        assert_eq!(msg.url, "http://127.0.0.1:8080/a?b=1");
    }

    #[test]
    fn partial_head_asks_for_more_until_the_limit() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost: x\r\n", &limits()), Ok(None));
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.resize(256, b'a');
        assert_eq!(parse_head(&long, &limits()), Err(HttpError::HeadTooLarge(256)));
    }

    #[test]
    fn body_bounds_and_framing() {
        let big = b"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n";
        assert!(matches!(parse_head(big, &limits()), Err(HttpError::BodyTooLarge { len: 101, max: 100 })));
        let ok = b"POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n";
        assert_eq!(parse_head(ok, &limits()).unwrap().unwrap().content_length, 100);
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(parse_head(chunked, &limits()).unwrap_err().status(), 501);
        let bad = b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n";
        assert!(matches!(parse_head(bad, &limits()), Err(HttpError::Malformed(_))));
    }

    #[test]
    fn refuses_tls_garbage_and_odd_targets() {
        assert_eq!(parse_head(&[0x16, 0x03, 0x01, 0x02, 0x00], &limits()), Err(HttpError::Tls));
        assert!(matches!(parse_head(b"\x00\x01garbage\r\n\r\n", &limits()), Err(HttpError::Malformed(_))));
        assert!(parse_head(b"GET ftp://x/ HTTP/1.1\r\n\r\n", &limits()).is_err());
        let abs = parse_head(b"GET http://h:1/p HTTP/1.1\r\n\r\n", &limits()).unwrap().unwrap();
        assert_eq!(abs.path, "/p");
        let bare = parse_head(b"GET http://h:1 HTTP/1.1\r\n\r\n", &limits()).unwrap().unwrap();
        assert_eq!(bare.path, "/");
    }

    #[test]
    fn too_many_headers_is_refused() {
        let mut req = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            req.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        req.extend_from_slice(b"\r\n");
        let big = HttpLimits { max_head: 1 << 20, max_body: 0 };
        assert!(matches!(parse_head(&req, &big), Err(HttpError::Malformed(_))));
    }

    #[test]
    fn response_sets_length_and_close_and_strips_hop_by_hop() {
        let response = HttpResponseMsg {
            status: 200,
            headers: vec![
                ("Content-Type".into(), "text/plain".into()),
                ("Transfer-Encoding".into(), "chunked".into()),
                ("Content-Length".into(), "999".into()),
                ("X-Bad".into(), "a\r\nInjected: 1".into()),
            ],
            body: b"hello".to_vec(),
        };
        let text = String::from_utf8(write_response(&response)).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        );
    }
}
