//! One HTTP transfer, direct or through the SOCKS5 endpoint: the SOCKS greeting and `CONNECT`,
//! GET and POST with every body checked, timed from the TCP connect, with a progress trace.

use super::*;

/// How a transfer reaches the server.
#[derive(Clone, Copy)]
pub(crate) enum Via {
    /// Straight to the server over loopback.
    Direct,
    /// Through this SOCKS5 endpoint (a stream through the mixnet).
    Socks(SocketAddr),
}

/// Timings of one successful transfer, ms from the start of the TCP connect.
pub(crate) struct Transfer {
    /// SOCKS: the `CONNECT` answered; direct: the TCP connection established.
    pub(crate) connected_ms: f64,
    /// First response byte.
    pub(crate) first_byte_ms: f64,
    /// Last body byte (GET) or the whole answer (POST).
    pub(crate) done_ms: f64,
    /// `[ms, bytes]`: response bytes read (GET) or request bytes the local
    /// socket took (POST), every [`TRACE_STEP`] bytes.
    pub(crate) progress: Vec<[f64; 2]>,
}

/// Bytes between two points of a transfer's progress trace.
pub(crate) const TRACE_STEP: usize = 256 << 10;

pub(crate) fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Opens a connection to `server`, through the SOCKS endpoint if asked
/// (greeting, then `CONNECT` to the server's IPv4 address, as curl does it).
pub(crate) async fn open(via: Via, server: SocketAddr) -> Result<TcpStream, String> {
    let proxy = match via {
        Via::Direct => {
            let s = TcpStream::connect(server).await.map_err(|e| format!("connect: {e}"))?;
            let _ = s.set_nodelay(true);
            return Ok(s);
        }
        Via::Socks(proxy) => proxy,
    };
    let mut s = TcpStream::connect(proxy).await.map_err(|e| format!("connect to SOCKS: {e}"))?;
    let _ = s.set_nodelay(true);
    let io = |e: std::io::Error| format!("SOCKS exchange: {e}");
    s.write_all(&[5, 1, 0]).await.map_err(io)?;
    let mut method = [0u8; 2];
    s.read_exact(&mut method).await.map_err(io)?;
    if method != [5, 0] {
        return Err(format!("SOCKS method reply {method:?}"));
    }
    let IpAddr::V4(ip) = server.ip() else { return Err("the server is not IPv4".into()) };
    let mut request = vec![5, 1, 0, 1];
    request.extend_from_slice(&ip.octets());
    request.extend_from_slice(&server.port().to_be_bytes());
    s.write_all(&request).await.map_err(io)?;
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).await.map_err(io)?;
    if reply[1] != 0 {
        return Err(format!("CONNECT refused, SOCKS5 reply code {}", reply[1]));
    }
    Ok(s)
}

/// Reads an HTTP/1.1 response to the end; returns the body and the times of
/// the first byte and of the last body byte (ms since `started`). Refuses a
/// status other than 200 and a body whose length differs from
/// `content-length`.
pub(crate) async fn read_response(
    s: &mut TcpStream,
    started: Instant,
    size_hint: usize,
    progress: &mut Vec<[f64; 2]>,
) -> Result<(Vec<u8>, f64, f64), String> {
    let mut buf = Vec::with_capacity(size_hint + 512);
    let mut next_point = TRACE_STEP;
    let mut first_byte = None;
    let mut done = None;
    let mut expected_end = None;
    loop {
        let n = s.read_buf(&mut buf).await.map_err(|e| format!("read after {} bytes: {e}", buf.len()))?;
        if n == 0 {
            break;
        }
        if first_byte.is_none() {
            first_byte = Some(ms(started));
        }
        if buf.len() >= next_point {
            progress.push([round3(ms(started)), buf.len() as f64]);
            next_point = (buf.len() / TRACE_STEP + 1) * TRACE_STEP;
        }
        if expected_end.is_none()
            && let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            if !head.starts_with("HTTP/1.1 200") {
                return Err(format!("status line {:?}", head.lines().next().unwrap_or("")));
            }
            let length = head
                .lines()
                .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
                .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                .ok_or("no content-length")?;
            expected_end = Some(head_end + 4 + length);
        }
        if let Some(end) = expected_end {
            if buf.len() > end {
                return Err(format!("{} bytes after the body", buf.len() - end));
            }
            if buf.len() == end && done.is_none() {
                done = Some(ms(started));
            }
        }
    }
    let (Some(end), Some(first), Some(done)) = (expected_end, first_byte, done) else {
        return Err(format!("connection closed after {} bytes, response incomplete", buf.len()));
    };
    let body_start = buf.windows(4).position(|w| w == b"\r\n\r\n").map_or(end, |p| p + 4);
    Ok((buf.split_off(body_start.min(end)), first, done))
}

/// `GET /bytes/<n>`; checks the body against the pattern.
pub(crate) async fn get(via: Via, server: SocketAddr, n: usize, expected: &[u8]) -> Result<Transfer, String> {
    let started = Instant::now();
    let mut s = open(via, server).await?;
    let connected_ms = ms(started);
    let request = format!("GET /bytes/{n} HTTP/1.1\r\nhost: {server}\r\nconnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.map_err(|e| format!("write request: {e}"))?;
    let mut progress = Vec::new();
    let (body, first_byte_ms, done_ms) = read_response(&mut s, started, n, &mut progress).await?;
    if body.len() != n {
        return Err(format!("body of {} bytes, not {n}", body.len()));
    }
    if let Some(at) = body.iter().zip(&expected[..n]).position(|(a, b)| a != b) {
        return Err(format!("body differs from the pattern at byte {at}"));
    }
    Ok(Transfer { connected_ms, first_byte_ms, done_ms, progress })
}

/// `POST /sha256` of `body`; checks the hash the server answers.
pub(crate) async fn post(via: Via, server: SocketAddr, body: &[u8], hash: &str) -> Result<Transfer, String> {
    let started = Instant::now();
    let mut s = open(via, server).await?;
    let connected_ms = ms(started);
    let head = format!(
        "POST /sha256 HTTP/1.1\r\nhost: {server}\r\ncontent-type: application/octet-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.map_err(|e| format!("write head: {e}"))?;
    let mut progress = Vec::new();
    for (i, chunk) in body.chunks(TRACE_STEP).enumerate() {
        s.write_all(chunk).await.map_err(|e| format!("write body: {e}"))?;
        progress.push([round3(ms(started)), (i * TRACE_STEP + chunk.len()) as f64]);
    }
    let (answer, first_byte_ms, done_ms) = read_response(&mut s, started, 128, &mut Vec::new()).await?;
    if answer.trim_ascii() != hash.as_bytes() {
        return Err(format!("server hashed {:?}, expected {hash}", String::from_utf8_lossy(&answer).trim()));
    }
    Ok(Transfer { connected_ms, first_byte_ms, done_ms, progress })
}

/// Runs `f` with a deadline; a timeout is a failure.
pub(crate) async fn deadline<F: Future<Output = Result<Transfer, String>>>(
    limit: Duration,
    f: F,
) -> Result<Transfer, String> {
    tokio::time::timeout(limit, f).await.unwrap_or_else(|_| Err(format!("timed out after {} s", limit.as_secs())))
}

/// Counts and reports a failure.
pub(crate) fn failed(what: &str, errors: &mut Vec<String>, error: String) {
    if errors.len() < ERRORS_SHOWN {
        eprintln!("  {what}: FAILED: {error}");
    }
    errors.push(error);
}

/// MiB/s of `bytes` in `ms` milliseconds.
pub(crate) fn mib_per_s(bytes: usize, ms: f64) -> f64 {
    bytes as f64 / (1 << 20) as f64 / (ms / 1e3).max(1e-9)
}

/// Median of a few samples (`None` if empty).
pub(crate) fn median(samples: &mut [f64]) -> Option<f64> {
    samples.sort_by(f64::total_cmp);
    crate::harness::percentile(samples, 0.5)
}
