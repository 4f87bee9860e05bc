//! Drives one established link: a read loop and (optionally) a write loop,
//! concurrently in one task.

use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, watch};

use super::counters::{LinkCounters, add, bump};
use super::{Inbound, PeerIdentity, wait_shutdown};
use crate::cipher::{FrameOpener, FrameSealer};
use crate::error::LinkError;
use crate::handshake::Session;

/// Records sealed into one write: bounds the writer's buffer and batches
/// several records per system call.
const MAX_BATCH_BYTES: usize = 256 * 1024;

pub(crate) struct LinkCtx<'a> {
    pub counters: &'a LinkCounters,
    pub inbound: &'a mpsc::Sender<Inbound>,
    pub write_timeout: Duration,
}

/// Why a link ended (fields are read through `Debug` in debug logs).
#[derive(Debug)]
#[allow(dead_code)]
pub(crate) enum LinkEnd {
    Shutdown,
    /// Our side of the send queue was dropped: nobody will send any more.
    QueueClosed,
    /// Nobody receives inbound packets any more.
    InboundClosed,
    /// The peer closed the connection between records.
    PeerClosed,
    Truncated,
    Protocol(LinkError),
    Io(std::io::ErrorKind),
    WriteTimeout,
}

/// A byte stream a link runs over, split into a read half and a write half
/// that the read and write loops drive concurrently.
pub(crate) trait LinkStream {
    type Read: AsyncRead + Unpin + Send;
    type Write: AsyncWrite + Unpin + Send;
    fn into_halves(self) -> (Self::Read, Self::Write);
}

/// TCP keeps its own split: both halves poll the socket directly, no lock.
impl LinkStream for TcpStream {
    type Read = OwnedReadHalf;
    type Write = OwnedWriteHalf;
    fn into_halves(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        self.into_split()
    }
}

/// A WebSocket is one object (tungstenite answers pings from its reader with
/// its writer): `tokio::io::split` shares it between the loops.
impl<S: AsyncRead + AsyncWrite + Unpin + Send> LinkStream for super::ws::WsIo<S> {
    type Read = tokio::io::ReadHalf<Self>;
    type Write = tokio::io::WriteHalf<Self>;
    fn into_halves(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
}

/// Runs a link over a TCP connection or a WebSocket seen as a byte stream
/// (`super::ws::WsIo`).
pub(crate) async fn run_link<S: LinkStream>(
    stream: S,
    session: Session,
    from: PeerIdentity,
    outbound: Option<&mut mpsc::Receiver<Vec<u8>>>,
    ctx: &LinkCtx<'_>,
    shutdown: &mut watch::Receiver<bool>,
) -> LinkEnd {
    let (sealer, opener) = session.into_parts();
    let (rd, wr) = stream.into_halves();
    let read = read_loop(rd, opener, from, ctx);
    let write = async {
        match outbound {
            Some(rx) => write_loop(wr, sealer, rx, ctx).await,
            None => std::future::pending().await,
        }
    };
    let end = tokio::select! {
        end = read => end,
        end = write => end,
        () = wait_shutdown(shutdown) => LinkEnd::Shutdown,
    };
    bump(&ctx.counters.links_closed);
    end
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut rd: R,
    mut opener: FrameOpener,
    from: PeerIdentity,
    ctx: &LinkCtx<'_>,
) -> LinkEnd {
    let c = ctx.counters;
    loop {
        let n = match rd.read(opener.unfilled()).await {
            Ok(n) => n,
            Err(e) => {
                if opener.buffered() > 0 {
                    bump(&c.dropped_truncated);
                }
                return LinkEnd::Io(e.kind());
            }
        };
        if n == 0 {
            return match opener.finish() {
                Ok(()) => LinkEnd::PeerClosed,
                Err(_) => {
                    bump(&c.dropped_truncated);
                    LinkEnd::Truncated
                }
            };
        }
        match opener.advance(n) {
            Ok(None) => {}
            // Stamped here, at the read, not where the consumer dequeues it: time spent in the
            // inbound queue is part of the packet's stay at the node.
            Ok(Some(packet)) => match ctx.inbound.try_send(Inbound { from, received_at: Instant::now(), packet }) {
                Ok(()) => bump(&c.frames_in),
                Err(mpsc::error::TrySendError::Full(_)) => bump(&c.dropped_inbound_full),
                Err(mpsc::error::TrySendError::Closed(_)) => return LinkEnd::InboundClosed,
            },
            Err(e) => {
                bump(&c.dropped_decrypt);
                return LinkEnd::Protocol(e);
            }
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut sealer: FrameSealer,
    rx: &mut mpsc::Receiver<Vec<u8>>,
    ctx: &LinkCtx<'_>,
) -> LinkEnd {
    let c = ctx.counters;
    let max_batch = (MAX_BATCH_BYTES / sealer.record_len()).max(1);
    let mut buf = Vec::with_capacity(max_batch * sealer.record_len());
    loop {
        let Some(first) = rx.recv().await else { return LinkEnd::QueueClosed };
        buf.clear();
        let mut count = 0u64;
        let mut next = Some(first);
        while let Some(packet) = next {
            match sealer.seal_into(&packet, &mut buf) {
                Ok(()) => count += 1,
                // Lengths are checked when queued; this is defensive.
                Err(LinkError::WrongLength { .. }) => bump(&c.dropped_bad_length),
                Err(e) => return LinkEnd::Protocol(e),
            }
            next = if (count as usize) < max_batch { rx.try_recv().ok() } else { None };
        }
        // The flush is a no-op on TCP; a WebSocket sends its last message there.
        let write = async {
            wr.write_all(&buf).await?;
            wr.flush().await
        };
        match tokio::time::timeout(ctx.write_timeout, write).await {
            Ok(Ok(())) => add(&c.frames_out, count),
            Ok(Err(e)) => {
                add(&c.dropped_link_down, count);
                return LinkEnd::Io(e.kind());
            }
            Err(_) => {
                add(&c.dropped_link_down, count);
                return LinkEnd::WriteTimeout;
            }
        }
    }
}
