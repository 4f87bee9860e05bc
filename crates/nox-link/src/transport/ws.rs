//! The WebSocket client link (docs/spec/link.md §5): the exact client-link
//! byte stream (preamble, Noise handshake, mailbox record, records) carried
//! in binary WebSocket messages, for browsers, which cannot open raw TCP.
//!
//! RFC 6455 framing and the HTTP upgrade are `tokio-tungstenite`'s; this
//! module only adapts a WebSocket to a byte stream ([`WsIo`]) so the same
//! per-connection code serves both transports, and sets the bounds.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_util::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Bytes, Error as WsError, Message};

use crate::config::{LinkConfig, RESPONSE_LEN};
use crate::preamble::PREAMBLE_LEN;

/// The largest first flight a client sends: the preamble and `Noise_NK`
/// message 1 (32 + 1,184 + 16 bytes). Node links (`Noise_IK`) never travel
/// over WebSocket.
pub const WS_CLIENT_FIRST_FLIGHT: usize = PREAMBLE_LEN + 32 + crate::KEM_EK_LEN + 16;

/// The largest WebSocket message (and frame payload) either side accepts on a
/// link of `link`'s geometry: one record, or a handshake message if larger.
/// Anything longer is a protocol violation that closes the connection.
pub fn ws_max_message(link: &LinkConfig) -> usize {
    link.record_len().max(WS_CLIENT_FIRST_FLIGHT).max(RESPONSE_LEN)
}

/// WebSocket settings of a listener ([`super::Listener::bind_websocket`]).
#[derive(Clone, Copy, Debug)]
pub struct WsListenerConfig {
    /// Time allowed for the HTTP upgrade after accept (default 2 s). The
    /// listener's `handshake_timeout` still bounds the whole setup, from
    /// accept to an established link.
    pub upgrade_timeout: Duration,
}

impl Default for WsListenerConfig {
    fn default() -> Self {
        Self { upgrade_timeout: Duration::from_secs(2) }
    }
}

/// tungstenite's settings for a link: messages and frames of at most one
/// record (or handshake message); writes go to the socket at once (no
/// 128 KiB staging buffer) and at most one unsent message is held (a peer
/// that does not read makes the writer wait, then time out); clients must
/// mask their frames (RFC 6455 §5.1).
pub(crate) fn ws_config(link: &LinkConfig) -> WebSocketConfig {
    let max = ws_max_message(link);
    WebSocketConfig::default()
        .read_buffer_size(max.min(64 * 1024) + 16)
        .write_buffer_size(0)
        .max_write_buffer_size(2 * (max + 16))
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
        .accept_unmasked_frames(false)
}

/// A WebSocket seen as a byte stream. Reads return the payloads of binary
/// messages in order (their boundaries carry no meaning); pings are answered
/// by tungstenite, pongs ignored, a close message is the end of the stream.
/// A text message, or any framing error (malformed or unmasked frame, a
/// message or frame over the limit, a continuation out of place), is an
/// error and sets the violation flag. Each write sends one binary message of
/// at most `chunk` bytes (the record length: the link writes whole records,
/// so each record is one message, and each handshake message too).
pub(crate) struct WsIo<S> {
    ws: WebSocketStream<S>,
    current: Bytes,
    pos: usize,
    chunk: usize,
    violation: Arc<AtomicBool>,
}

impl<S> WsIo<S> {
    pub(crate) fn new(ws: WebSocketStream<S>, link: &LinkConfig) -> Self {
        Self { ws, current: Bytes::new(), pos: 0, chunk: link.record_len(), violation: Arc::default() }
    }

    /// Set once the peer broke the WebSocket protocol or sent a text message.
    pub(crate) fn violation(&self) -> Arc<AtomicBool> {
        self.violation.clone()
    }
}

fn to_io(e: WsError) -> io::Error {
    match e {
        WsError::Io(e) => e,
        WsError::ConnectionClosed | WsError::AlreadyClosed => io::Error::from(io::ErrorKind::BrokenPipe),
        other => io::Error::new(io::ErrorKind::InvalidData, other),
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for WsIo<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.pos < this.current.len() {
                let n = buf.remaining().min(this.current.len() - this.pos);
                buf.put_slice(&this.current[this.pos..this.pos + n]);
                this.pos += n;
                return Poll::Ready(Ok(()));
            }
            match ready!(Pin::new(&mut this.ws).poll_next(cx)) {
                // The end of the stream: a close message or the TCP stream ending.
                None | Some(Ok(Message::Close(_))) => return Poll::Ready(Ok(())),
                Some(Ok(Message::Binary(bytes))) => {
                    this.current = bytes;
                    this.pos = 0;
                }
                // tungstenite queues the pong itself.
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Text(_) | Message::Frame(_))) => {
                    this.violation.store(true, Ordering::Relaxed);
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, "text message on a link")));
                }
                Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => return Poll::Ready(Ok(())),
                Some(Err(WsError::Io(e))) => return Poll::Ready(Err(e)),
                Some(Err(e)) => {
                    this.violation.store(true, Ordering::Relaxed);
                    return Poll::Ready(Err(to_io(e)));
                }
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for WsIo<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(Pin::new(&mut this.ws).poll_ready(cx)).map_err(to_io)?;
        let n = buf.len().min(this.chunk);
        Pin::new(&mut this.ws).start_send(Message::Binary(Bytes::copy_from_slice(&buf[..n]))).map_err(to_io)?;
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.ws).poll_flush(cx).map_err(to_io)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.ws).poll_close(cx).map_err(to_io)
    }
}
