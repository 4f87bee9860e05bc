//! The SOCKS5 endpoint: every `CONNECT` opens a stream through the mixnet
//! (docs/spec/streams.md) and relays bytes both ways, so TLS runs end to end
//! from the local program to the server: the exit sees the destination and
//! ciphertext. The SOCKS reply waits for the exit's answer and carries its
//! reason on failure (RFC 1928 §6 codes).

use std::future::Future;
use std::time::Duration;

use nox_stream::{ResetCode, Target};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::error::ClientError;
use crate::shell::{ClientHandle, MixStream};
use crate::socks::{self, Host, SocksError};
use crate::streams::StreamStatus;

/// Settings of the SOCKS endpoint.
#[derive(Clone, Copy, Debug)]
pub struct SocksConfig {
    /// Time allowed to read the SOCKS greeting and request (default 30 s).
    pub read_timeout: Duration,
    /// Bytes read from the local program at a time (default 16 KiB).
    pub chunk: usize,
}

impl Default for SocksConfig {
    fn default() -> Self {
        Self { read_timeout: Duration::from_secs(30), chunk: 16 << 10 }
    }
}

/// One stream as the endpoint drives it: [`MixStream`], or a stand-in in
/// tests of the endpoint.
pub trait StreamIo: Send + 'static {
    /// The stream's state.
    fn status(&self) -> StreamStatus;
    /// Writes what fits; returns how many bytes were taken.
    fn write(&self, bytes: &[u8]) -> usize;
    /// Reads up to `max` bytes.
    fn read(&self, max: usize) -> Vec<u8>;
    /// No more bytes will be written.
    fn finish(&self);
    /// Waits for a change of state; may return spuriously.
    fn changed(&self) -> impl Future<Output = ()> + Send;
}

/// Opens streams: [`ClientHandle`], or a stand-in in tests.
pub trait StreamOpener: Clone + Send + Sync + 'static {
    /// The stream type.
    type Stream: StreamIo + Sync;
    /// Opens a stream to `target`; the exit's answer comes later.
    fn open(&self, target: Target) -> Result<Self::Stream, ClientError>;
}

impl StreamIo for MixStream {
    fn status(&self) -> StreamStatus {
        MixStream::status(self)
    }
    fn write(&self, bytes: &[u8]) -> usize {
        MixStream::write(self, bytes)
    }
    fn read(&self, max: usize) -> Vec<u8> {
        MixStream::read(self, max)
    }
    fn finish(&self) {
        MixStream::finish(self)
    }
    fn changed(&self) -> impl Future<Output = ()> + Send {
        MixStream::changed(self)
    }
}

impl StreamOpener for ClientHandle {
    type Stream = MixStream;
    fn open(&self, target: Target) -> Result<MixStream, ClientError> {
        self.open_stream(target)
    }
}

/// Serves SOCKS5 connections until the listener fails.
pub async fn serve_socks(listener: TcpListener, client: impl StreamOpener, config: SocksConfig) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let client = client.clone();
        tokio::spawn(async move {
            match handle(stream, client, config).await {
                Ok(()) => {}
                Err(e) => tracing::info!("socks connection closed: {e}"),
            }
        });
    }
}

#[derive(Debug, thiserror::Error)]
enum ProxyError {
    #[error("socks: {0}")]
    Socks(#[from] SocksError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("timed out reading from the local client")]
    ReadTimeout,
    #[error("connection closed early")]
    Eof,
    #[error("the stream could not be opened: {0}")]
    Open(String),
    #[error("the stream was reset: {0:?}")]
    Reset(ResetCode),
}

/// Reads more bytes into `buf` (at most `max` in total), with a deadline.
async fn fill(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    max: usize,
    deadline: tokio::time::Instant,
) -> Result<(), ProxyError> {
    let mut chunk = [0u8; 512];
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

/// The greeting and the `CONNECT`; returns the target and any bytes the
/// program sent after the request.
async fn negotiate(stream: &mut TcpStream, config: SocksConfig) -> Result<(Target, Vec<u8>), ProxyError> {
    let deadline = tokio::time::Instant::now() + config.read_timeout;
    let mut buf = Vec::new();
    let greeting_len = loop {
        match socks::parse_greeting(&buf) {
            Ok(Some(n)) => break n,
            Ok(None) => fill(stream, &mut buf, 258, deadline).await?,
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
            Ok(None) => fill(stream, &mut buf, 262 + 4096, deadline).await?,
            Err(e) => {
                if let Some(code) = e.reply() {
                    stream.write_all(&socks::reply(code)).await?;
                }
                return Err(e.into());
            }
        }
    };
    buf.drain(..request_len);
    let host = match target.host {
        Host::Domain(name) => name,
        Host::V4(ip) => ip.to_string(),
        Host::V6(ip) => ip.to_string(),
    };
    Ok((Target { host, port: target.port }, buf))
}

async fn handle(mut local: TcpStream, client: impl StreamOpener, config: SocksConfig) -> Result<(), ProxyError> {
    let _ = local.set_nodelay(true);
    let (target, early) = negotiate(&mut local, config).await?;
    let stream = match client.open(target) {
        Ok(stream) => stream,
        Err(e) => {
            local.write_all(&socks::reply_code(ResetCode::General.socks_reply())).await?;
            return Err(ProxyError::Open(e.to_string()));
        }
    };
    loop {
        let status = stream.status();
        if let Some(code) = status.reset {
            local.write_all(&socks::reply_code(code.socks_reply())).await?;
            return Err(ProxyError::Reset(code));
        }
        if status.opened {
            break;
        }
        stream.changed().await;
    }
    local.write_all(&socks::reply(socks::Reply::Succeeded)).await?;
    relay(local, &stream, early, config).await
}

/// Moves bytes both ways until both directions are finished, or the stream
/// is reset (then the local connection is reset too).
async fn relay(
    local: TcpStream,
    stream: &impl StreamIo,
    early: Vec<u8>,
    config: SocksConfig,
) -> Result<(), ProxyError> {
    let (mut from_local, mut to_local) = local.into_split();
    let mut pending = early;
    let mut local_eof = false;
    let mut finished = false;
    let mut wrote_eof = false;
    let mut chunk = vec![0u8; config.chunk.max(1)];
    loop {
        if !pending.is_empty() {
            let n = stream.write(&pending);
            pending.drain(..n);
        }
        if local_eof && pending.is_empty() && !finished {
            stream.finish();
            finished = true;
        }
        let status = stream.status();
        if let Some(code) = status.reset {
            // An abortive close tells the local program the connection broke.
            let local = from_local.reunite(to_local).map_err(|e| std::io::Error::other(e.to_string()))?;
            let _ = local.set_zero_linger();
            drop(local);
            return Err(ProxyError::Reset(code));
        }
        if status.readable > 0 {
            let bytes = stream.read(config.chunk.max(1) * 4);
            to_local.write_all(&bytes).await?;
            continue;
        }
        if status.eof && !wrote_eof {
            to_local.shutdown().await?;
            wrote_eof = true;
        }
        if status.closed {
            return Ok(());
        }
        let can_read = !local_eof && pending.is_empty();
        tokio::select! {
            read = from_local.read(&mut chunk), if can_read => match read {
                Ok(0) => local_eof = true,
                Ok(n) => pending.extend_from_slice(&chunk[..n]),
                Err(e) => {
                    // The local program reset: abort the stream (dropping it resets).
                    return Err(e.into());
                }
            },
            _ = stream.changed() => {}
        }
    }
}
