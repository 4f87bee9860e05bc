//! One HTTP/1.1 request per connection: the head parsed, the three routes answered
//! (`/`, `/bytes/<n>` streamed, `/sha256` hashed as it arrives), anything else refused.

use super::*;

/// Chunk size for streaming `/bytes/<n>` and reading `/sha256` bodies.
pub(super) const CHUNK: usize = 64 << 10;
/// A parsed request head.
pub(super) struct Head {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) content_length: Option<u64>,
    pub(super) chunked: bool,
    pub(super) expect_continue: bool,
}

/// Parses the request line and the headers the routes need; `None` if malformed.
pub(super) fn parse_head(head: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, path, version) = (request_line.next()?, request_line.next()?, request_line.next()?);
    if request_line.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut parsed = Head {
        method: method.to_owned(),
        path: path.to_owned(),
        content_length: None,
        chunked: false,
        expect_continue: false,
    };
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            if parsed.content_length.replace(value.parse().ok()?).is_some() {
                return None;
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            parsed.chunked = true;
        } else if name.eq_ignore_ascii_case("expect") {
            parsed.expect_continue = value.eq_ignore_ascii_case("100-continue");
        }
    }
    Some(parsed)
}

/// Writes a complete response with a small body.
pub(super) async fn respond<S: AsyncWrite + Unpin>(stream: &mut S, status: &str, body: &[u8]) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

/// Serves one request on `stream` (TLS or plain), then closes it.
pub(super) async fn serve_http<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) -> io::Result<()> {
    let mut buffer = Vec::with_capacity(4096);
    let read_head = async {
        loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                return Ok(Some(end));
            }
            if buffer.len() > MAX_HEAD {
                return Ok(None);
            }
            if stream.read_buf(&mut buffer).await? == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
        }
    };
    let head_end = tokio::time::timeout(HEAD_TIMEOUT, read_head).await.map_err(io::Error::other)??;
    let Some(head) = head_end.and_then(|end| parse_head(&buffer[..end])) else {
        return respond(&mut stream, "400 Bad Request", b"bad request\n").await;
    };
    let body_start = head_end.map_or(0, |end| end + 4);
    match (head.method.as_str(), head.path.as_str()) {
        ("GET", "/") => respond(&mut stream, "200 OK", HELLO).await?,
        ("GET", path) if path.starts_with("/bytes/") => match path["/bytes/".len()..].parse::<u64>() {
            Ok(n) if n <= MAX_BODY => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
                );
                stream.write_all(head.as_bytes()).await?;
                let mut chunk = vec![0u8; CHUNK];
                let mut sent = 0u64;
                while sent < n {
                    let len = usize::try_from(n - sent).map_or(CHUNK, |left| left.min(CHUNK));
                    fill_pattern(sent, &mut chunk[..len]);
                    stream.write_all(&chunk[..len]).await?;
                    sent += len as u64;
                }
                stream.flush().await?;
            }
            Ok(_) => respond(&mut stream, "400 Bad Request", b"at most 67108864 bytes\n").await?,
            Err(_) => respond(&mut stream, "400 Bad Request", b"GET /bytes/<n>\n").await?,
        },
        ("POST", "/sha256") => {
            if head.chunked {
                return respond(&mut stream, "411 Length Required", b"send a content-length\n").await;
            }
            let Some(length) = head.content_length else {
                return respond(&mut stream, "411 Length Required", b"send a content-length\n").await;
            };
            if length > MAX_BODY {
                return respond(&mut stream, "413 Content Too Large", b"at most 67108864 bytes\n").await;
            }
            if head.expect_continue {
                stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
                stream.flush().await?;
            }
            let mut hasher = Sha256::new();
            let early = &buffer[body_start..];
            let early = &early[..early.len().min(usize::try_from(length).unwrap_or(usize::MAX))];
            hasher.update(early);
            let mut left = length - early.len() as u64;
            let mut chunk = vec![0u8; CHUNK];
            while left > 0 {
                let want = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
                let got = stream.read(&mut chunk[..want]).await?;
                if got == 0 {
                    return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
                }
                hasher.update(&chunk[..got]);
                left -= got as u64;
            }
            let mut answer = hex::encode(hasher.finalize());
            answer.push('\n');
            respond(&mut stream, "200 OK", answer.as_bytes()).await?;
        }
        (_, "/" | "/sha256") => respond(&mut stream, "405 Method Not Allowed", b"method not allowed\n").await?,
        ("GET", _) => respond(&mut stream, "404 Not Found", b"not found\n").await?,
        (_, path) if path.starts_with("/bytes/") => {
            respond(&mut stream, "405 Method Not Allowed", b"method not allowed\n").await?
        }
        _ => respond(&mut stream, "404 Not Found", b"not found\n").await?,
    }
    stream.shutdown().await
}
