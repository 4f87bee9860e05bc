//! One accepted connection, from its first byte to its close: the `wss://` TLS handshake and
//! the WebSocket upgrade, the link handshake as responder, the client's reply mailbox, then the
//! link itself; every refusal counted and reported to the gate as the stage reached.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, mpsc, watch};
use tracing::debug;

use crate::error::LinkError;
use crate::handshake::{Remote, Responder, Session};
use crate::mailbox::MAILBOX_RECORD_LEN;
use crate::transport::counters::{LinkCounters, bump};
use crate::transport::link::{LinkCtx, LinkStream, run_link};
use crate::transport::ws::{WsIo, WsListenerConfig, ws_config};
use crate::transport::{ClientId, PeerIdentity, lock, wait_shutdown};

use super::{GateStage, ListenerConfig, Shared};

/// One `wss://` connection: the TLS handshake (bounded by the upgrade timeout), then
/// [`serve_ws`] on the TLS stream. A failed TLS handshake costs one short task: nothing was
/// allocated for the link yet.
pub(super) async fn serve_wss(
    stream: TcpStream,
    tls: tokio_rustls::TlsAcceptor,
    peer: IpAddr,
    ws: WsListenerConfig,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
) -> GateStage {
    let started = tokio::time::Instant::now();
    let by = (started + shared.config.handshake_timeout).min(started + ws.upgrade_timeout);
    let failures: fn(&LinkCounters) -> &AtomicU64 = |c| &c.ws_tls_failures;
    match before_link(tls.accept(stream), by, "TLS handshake", failures, peer, &shared, &mut shutdown).await {
        Some(stream) => serve_ws(stream, started, peer, ws, shared, shutdown, permit).await,
        None => GateStage::Accepted,
    }
}

/// A step before the link handshake (the `wss://` TLS handshake, the WebSocket upgrade),
/// bounded by `by` and by shutdown. A failure or a timeout is counted in `failures` (a timeout
/// also in `handshake_timeouts`) and is an offence. `None` (failed, timed out or shut down): the
/// connection ends at [`GateStage::Accepted`].
async fn before_link<T, E: std::fmt::Display>(
    step: impl Future<Output = Result<T, E>>,
    by: tokio::time::Instant,
    what: &'static str,
    failures: fn(&LinkCounters) -> &AtomicU64,
    peer: IpAddr,
    shared: &Shared,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<T> {
    let outcome = tokio::select! {
        r = tokio::time::timeout_at(by, step) => r,
        () = wait_shutdown(shutdown) => return None,
    };
    let timed_out = match outcome {
        Ok(Ok(done)) => return Some(done),
        Ok(Err(e)) => {
            debug!(error = %e, "{what} failed");
            false
        }
        Err(_) => true,
    };
    let c = &shared.counters;
    bump(failures(c));
    if timed_out {
        bump(&c.handshake_timeouts);
    }
    shared.config.gate.offence(peer);
    None
}

/// One WebSocket connection (`accepted_at`: when its TCP connection was accepted, the start
/// of the handshake deadline): the HTTP upgrade (any path, any `Origin`: a
/// page on any site may connect; the link's own handshake authenticates the
/// entry), then the client link over [`WsIo`]. A failed or slow upgrade and
/// a WebSocket protocol violation (text message, malformed frame, oversized
/// message) are offences.
pub(super) async fn serve_ws<S: AsyncRead + AsyncWrite + Unpin + Send>(
    stream: S,
    accepted_at: tokio::time::Instant,
    peer: IpAddr,
    ws: WsListenerConfig,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
) -> GateStage {
    let c = &shared.counters;
    let deadline = accepted_at + shared.config.handshake_timeout;
    let upgrade_by = deadline.min(tokio::time::Instant::now() + ws.upgrade_timeout);
    let config = ws_config(&shared.config.link);
    let upgrade = tokio_tungstenite::accept_async_with_config(stream, Some(config));
    let failures: fn(&LinkCounters) -> &AtomicU64 = |c| &c.ws_upgrade_failures;
    let Some(socket) =
        before_link(upgrade, upgrade_by, "WebSocket upgrade", failures, peer, &shared, &mut shutdown).await
    else {
        return GateStage::Accepted;
    };
    bump(&c.ws_connections);
    let io = WsIo::new(socket, &shared.config.link);
    let violation = io.violation();
    let served = serve(io, peer, deadline, true, shared.clone(), shutdown, permit).await;
    if violation.load(std::sync::atomic::Ordering::Relaxed) {
        bump(&c.ws_protocol_errors);
        if !served.offence {
            shared.config.gate.offence(peer);
        }
    }
    served.stage
}

enum Refused {
    Closed,
    Io,
    Link(LinkError),
    Unauthorized,
}

/// How a connection ended, for the gate.
pub(super) struct Served {
    /// The last stage the gate approved.
    pub(super) stage: GateStage,
    /// Whether the gate was already told of an offence.
    offence: bool,
}

impl From<GateStage> for Served {
    fn from(stage: GateStage) -> Self {
        Self { stage, offence: false }
    }
}

/// One connection, whatever its transport, from accept (or upgrade) to
/// close. `deadline` bounds the handshake and, on a client link, its mailbox
/// record; `clients_only` refuses node handshakes (WebSocket).
pub(super) async fn serve<S: LinkStream + AsyncRead + AsyncWrite + Unpin + Send>(
    mut stream: S,
    peer: IpAddr,
    deadline: tokio::time::Instant,
    clients_only: bool,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) -> Served {
    let c = &shared.counters;
    let cfg = &shared.config;
    let outcome = tokio::select! {
        r = tokio::time::timeout_at(deadline, respond(&mut stream, cfg, clients_only)) => r,
        () = wait_shutdown(&mut shutdown) => return GateStage::Accepted.into(),
    };
    let mut session = match outcome {
        Ok(Ok(session)) => session,
        Ok(Err(reason)) => return refused(&shared, peer, Some(reason)),
        Err(_) => return refused(&shared, peer, None),
    };
    // A client link is established only once its mailbox record has
    // authenticated under the hybrid keys; until then nothing it sends is
    // read as a packet, and a client that does not send it is refused when
    // the same deadline passes (`MailboxRecordMissing`).
    if !session.is_established() {
        let outcome = tokio::select! {
            r = tokio::time::timeout_at(deadline, receive_mailbox(&mut stream, &mut session)) => r,
            () = wait_shutdown(&mut shutdown) => return GateStage::Accepted.into(),
        };
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => return refused(&shared, peer, Some(reason)),
            Err(_) => {
                if let Err(e) = session.check_established() {
                    debug!(error = %e, "inbound client link timed out before its mailbox record");
                }
                return refused(&shared, peer, None);
            }
        }
    }
    bump(&c.handshakes_ok);
    // The gate learns what the handshake proved: only here can a node be told
    // apart from a client sharing its address.
    let (node, stage) = match session.remote() {
        Remote::Node(key) => (Some(*key), GateStage::Node),
        Remote::Client => (None, GateStage::Client),
    };
    if !cfg.gate.authenticated(peer, node.as_ref()) {
        bump(&c.rejected_by_gate);
        return GateStage::Accepted.into();
    }
    let ctx = LinkCtx { counters: c, inbound: &shared.inbound, write_timeout: cfg.write_timeout };
    let end = match *session.remote() {
        Remote::Node(key) => run_link(stream, session, PeerIdentity::Node(key), None, &ctx, &mut shutdown).await,
        Remote::Client => {
            let id = ClientId(shared.next_client.fetch_add(1, Ordering::Relaxed));
            let (tx, mut rx) = mpsc::channel(cfg.client_queue.max(1));
            // The greeting is queued before the link joins the broadcast
            // table, so it is the first record; asked again after joining,
            // a value that changed in between (and whose broadcast missed
            // this link) is queued too, so the client ends on the latest.
            let first = greet(&shared, &tx, None);
            lock(&shared.clients).insert(id, tx.clone());
            greet(&shared, &tx, first.as_deref());
            drop(tx);
            let mailbox = session.mailbox();
            if let Some(mailbox) = mailbox {
                lock(&shared.mailboxes).insert(mailbox, id);
            }
            let end =
                run_link(stream, session, PeerIdentity::Client(id, peer), Some(&mut rx), &ctx, &mut shutdown).await;
            if let Some(mailbox) = mailbox {
                let mut table = lock(&shared.mailboxes);
                if table.get(&mailbox) == Some(&id) {
                    table.remove(&mailbox);
                }
            }
            lock(&shared.clients).remove(&id);
            end
        }
    };
    debug!(?end, "inbound link closed");
    stage.into()
}

/// Counts a connection whose handshake did not complete (`None`: it timed
/// out) and reports it to the gate.
fn refused(shared: &Shared, peer: IpAddr, reason: Option<Refused>) -> Served {
    let c = &shared.counters;
    match reason {
        Some(Refused::Unauthorized) => {
            debug!("inbound link refused: node key not in topology");
            bump(&c.rejected_unauthenticated);
        }
        Some(reason) => {
            if let Refused::Link(e) = &reason {
                debug!(error = %e, "inbound handshake failed");
            }
            bump(&c.handshakes_failed);
        }
        None => {
            bump(&c.handshakes_failed);
            bump(&c.handshake_timeouts);
        }
    }
    shared.config.gate.offence(peer);
    Served { stage: GateStage::Accepted, offence: true }
}

/// Queues the greeting record on a new client link unless it equals
/// `unless`; returns the record queued.
fn greet(shared: &Shared, tx: &mpsc::Sender<Vec<u8>>, unless: Option<&[u8]>) -> Option<Vec<u8>> {
    let record = shared.config.client_greeting.as_ref().and_then(|greeting| greeting())?;
    if unless == Some(record.as_slice()) {
        return None;
    }
    if record.len() != shared.config.link.packet_len() {
        bump(&shared.counters.dropped_bad_length);
        return None;
    }
    tx.try_send(record.clone()).ok().map(|()| record)
}

async fn respond<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    cfg: &ListenerConfig,
    clients_only: bool,
) -> Result<Session, Refused> {
    let mut responder = Responder::new(&cfg.link, &cfg.keypair, cfg.accept);
    // Enough for a whole first flight (39 + 1,280 bytes) in one read.
    let mut buf = [0u8; 2048];
    let hello = loop {
        let want = responder.wanted().clamp(1, buf.len());
        let n = stream.read(&mut buf[..want]).await.map_err(|_| Refused::Io)?;
        if n == 0 {
            return Err(Refused::Closed);
        }
        if let (_, Some(hello)) = responder.feed(&buf[..n]).map_err(Refused::Link)? {
            break hello;
        }
    };
    if let Remote::Node(key) = hello.remote() {
        if clients_only {
            return Err(Refused::Link(LinkError::KindNotAccepted(crate::config::LinkKind::Node)));
        }
        if !cfg.peers.allows(key) {
            return Err(Refused::Unauthorized);
        }
    }
    let (reply, session) = hello.accept().map_err(Refused::Link)?;
    stream.write_all(&reply).await.map_err(|_| Refused::Io)?;
    stream.flush().await.map_err(|_| Refused::Io)?;
    Ok(session)
}

/// Reads a client's mailbox record, exactly its bytes (the records that
/// follow stay in the socket for the link).
async fn receive_mailbox<S: AsyncRead + Unpin>(stream: &mut S, session: &mut Session) -> Result<(), Refused> {
    let mut buf = [0u8; MAILBOX_RECORD_LEN];
    while session.mailbox_wanted() > 0 {
        let want = session.mailbox_wanted().min(buf.len());
        let n = stream.read(&mut buf[..want]).await.map_err(|_| Refused::Io)?;
        if n == 0 {
            // The stream ended first: `MailboxRecordMissing`.
            return session.check_established().map_err(Refused::Link);
        }
        session.feed_mailbox_record(&buf[..n]).map_err(Refused::Link)?;
    }
    session.check_established().map_err(Refused::Link)
}
