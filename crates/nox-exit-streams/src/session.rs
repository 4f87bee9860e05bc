//! One stream at the exit: connect, then relay between the TCP connection
//! and a [`nox_stream::Endpoint`], spending the stream's SURB pool.

use std::sync::{Arc, atomic::Ordering};

use nox_exit::{ConnectError, Connected, ExitServices, StreamsConfig};
use nox_message::{RESPONSE_HEADER_LEN, Response};
use nox_stream::{Endpoint, EndpointConfig, Pool, ResetCode, StreamId, StreamMessage, Target};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{
        TcpStream,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
    sync::mpsc,
    time::{Instant, sleep_until},
};

use super::{MAX_POOL, RESERVE, Replies, ReplyPlanner, StreamMetrics, SurbPool, bump, code_index};

/// Bytes read from the TCP connection at once.
const TCP_READ_CHUNK: usize = 64 << 10;
/// Bytes taken from the TCP connection before a flush, when more are ready:
/// fuller messages back spend fewer SURBs on parity per byte.
const TCP_COALESCE: usize = 512 << 10;
/// Bytes taken from the endpoint for the TCP connection at once.
const TCP_WRITE_CHUNK: usize = 64 << 10;

/// A stream message and the SURBs of the request that carried it.
pub(super) struct Incoming<S> {
    pub(super) message: StreamMessage,
    pub(super) surbs: Vec<S>,
}

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// Both directions finished and acknowledged.
    Closed,
    /// The connection could not be opened; `RESET` with the reason sent.
    Refused(ResetCode),
    /// The exit reset the open stream; `RESET` sent if a SURB was left.
    Reset(ResetCode),
    /// The client reset the stream.
    ClientReset,
    /// The service went away.
    Gone,
}

impl End {
    pub(super) fn count(self, metrics: &StreamMetrics) {
        match self {
            Self::Closed => bump(&metrics.closed),
            Self::Refused(code) => bump(&metrics.refused[code_index(code)]),
            Self::Reset(code) => bump(&metrics.resets_sent[code_index(code)]),
            Self::ClientReset => bump(&metrics.resets_received),
            Self::Gone => {}
        }
    }
}

/// The reset code answering a failed connect: the SOCKS5 reply code, except
/// a full exit (`RESET 0x14`, docs/spec/streams.md §6) and streams switched
/// off (general failure).
pub(super) fn refusal_code(error: &ConnectError) -> ResetCode {
    match error {
        ConnectError::Busy(_) => ResetCode::Busy,
        ConnectError::Unsupported(_) => ResetCode::General,
        other => ResetCode::try_from(other.socks_code()).unwrap_or(ResetCode::General),
    }
}

/// Runs one stream to its end with `endpoint` as the exit's end. `first` carries the `OPEN`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run<R: Replies>(
    id: StreamId,
    target: Target,
    first: Incoming<R::Surb>,
    mut receiver: mpsc::Receiver<Incoming<R::Surb>>,
    replies: R,
    services: Arc<ExitServices>,
    metrics: Arc<StreamMetrics>,
    endpoint: EndpointConfig,
) -> End {
    let limits = services.config().streams.clone();
    let now = Instant::now();
    let mut session = Session {
        id,
        planner: replies.planner(),
        replies,
        pool: SurbPool::new(MAX_POOL),
        endpoint: Endpoint::new(endpoint),
        connected: false,
        opened_owed: false,
        start: now,
        last_data: now,
        limits,
        bytes_up: 0,
        bytes_down: 0,
        metrics,
    };
    let end = session.serve(target, first, &mut receiver, services).await;
    if let End::Refused(code) | End::Reset(code) = end {
        session.send_reset(code);
    }
    end
}

struct Session<R: Replies> {
    id: StreamId,
    replies: R,
    planner: ReplyPlanner,
    pool: SurbPool<R::Surb>,
    endpoint: Endpoint,
    /// The TCP connection is up.
    connected: bool,
    /// `OPENED` goes in the next message back.
    opened_owed: bool,
    start: Instant,
    /// Last stream byte either way, for the idle bound.
    last_data: Instant,
    limits: StreamsConfig,
    bytes_up: u64,
    bytes_down: u64,
    metrics: Arc<StreamMetrics>,
}

impl<R: Replies> Session<R> {
    /// Milliseconds since the session started: the endpoint's clock.
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    async fn serve(
        &mut self,
        target: Target,
        first: Incoming<R::Surb>,
        receiver: &mut mpsc::Receiver<Incoming<R::Surb>>,
        services: Arc<ExitServices>,
    ) -> End {
        if let Some(end) = self.on_incoming(first) {
            return end;
        }
        let limit = self.limits.connect_timeout;
        let connect = tokio::time::timeout(limit, async move { services.connect(&target.host, target.port).await });
        tokio::pin!(connect);
        // Messages that arrive meanwhile (SURB top-ups, a resent OPEN, a RESET) are taken.
        let connected = loop {
            tokio::select! {
                result = &mut connect => break result,
                incoming = receiver.recv() => match incoming {
                    None => return End::Gone,
                    Some(incoming) => {
                        if let Some(end) = self.on_incoming(incoming) {
                            return end;
                        }
                    }
                },
            }
        };
        let Connected { stream, permit, .. } = match connected {
            Err(_elapsed) => return End::Refused(ResetCode::Timeout),
            Ok(Err(error)) => return End::Refused(refusal_code(&error)),
            Ok(Ok(connected)) => connected,
        };
        bump(&self.metrics.opened);
        self.connected = true;
        self.opened_owed = true;
        self.last_data = Instant::now();
        let end = self.relay(stream, receiver).await;
        drop(permit);
        end
    }

    /// Takes a message from the client; `Some` when it ends the stream.
    fn on_incoming(&mut self, incoming: Incoming<R::Surb>) -> Option<End> {
        let Incoming { message, surbs } = incoming;
        let dropped = self.pool.push(surbs, message.surbs.map(|batch| batch.seq));
        if dropped > 0 {
            self.metrics.surbs_dropped.fetch_add(dropped as u64, Ordering::Relaxed);
        }
        if message.reset.is_some() {
            return Some(End::ClientReset);
        }
        if message.data.is_some() {
            self.last_data = Instant::now();
        }
        // The client resends its OPEN until it hears from the exit: our
        // OPENED was lost, say it again (an OPEN while connecting waits).
        if message.open.is_some() && self.connected {
            self.opened_owed = true;
        }
        let now_ms = self.now_ms();
        if self.endpoint.on_message(&message, now_ms).is_err() {
            self.endpoint.reset(ResetCode::Protocol);
            return Some(End::Reset(ResetCode::Protocol));
        }
        None
    }

    /// Relays until the stream ends; a reset closes the TCP connection abortively.
    async fn relay(&mut self, stream: TcpStream, receiver: &mut mpsc::Receiver<Incoming<R::Surb>>) -> End {
        let (mut reader, mut writer) = stream.into_split();
        let end = self.pump(&mut reader, &mut writer, receiver).await;
        if end != End::Closed {
            abort(reader, writer);
        }
        end
    }

    async fn pump(
        &mut self,
        reader: &mut OwnedReadHalf,
        writer: &mut OwnedWriteHalf,
        receiver: &mut mpsc::Receiver<Incoming<R::Surb>>,
    ) -> End {
        let mut buf = vec![0u8; TCP_READ_CHUNK];
        let mut pending: Vec<u8> = Vec::new();
        let mut written = 0;
        let mut tcp_eof = false;
        let mut shut = false;
        let max_bytes = self.limits.max_stream_bytes;
        let lifetime_end = self.start + self.limits.max_lifetime;
        loop {
            // Client bytes for the server: only once the last ones are written,
            // so the receive window is the backpressure towards the client.
            if written == pending.len() && !shut {
                let now_ms = self.now_ms();
                pending = self.endpoint.read(TCP_WRITE_CHUNK, now_ms);
                written = 0;
                if !pending.is_empty() {
                    self.last_data = Instant::now();
                    self.bytes_up += pending.len() as u64;
                    self.metrics.bytes_up.fetch_add(pending.len() as u64, Ordering::Relaxed);
                    if self.bytes_up > max_bytes {
                        return End::Reset(ResetCode::Limit);
                    }
                } else if self.endpoint.recv_half().at_eof() {
                    // The client's FIN: the server sees end of file.
                    let _ = writer.shutdown().await;
                    shut = true;
                }
            }
            if let Some(code) = self.endpoint.reset_code() {
                return End::Reset(code);
            }
            self.flush();
            if shut && self.endpoint.closed() {
                return End::Closed;
            }
            let room = self.endpoint.send_half().room().min(buf.len());
            let can_read = !tcp_eof && room > 0;
            // An acknowledgement owed with no SURB to carry it waits for SURBs,
            // not for the clock: only the retransmission timer counts then.
            let wakeup =
                if self.pool.is_empty() { self.endpoint.send_half().timer() } else { self.endpoint.next_wakeup() };
            let timer_armed = wakeup.is_some();
            let timer_at = self.start + std::time::Duration::from_millis(wakeup.unwrap_or(0));
            let idle_at = self.last_data + self.limits.idle_timeout;
            tokio::select! {
                incoming = receiver.recv() => match incoming {
                    None => return End::Gone,
                    Some(incoming) => {
                        if let Some(end) = self.on_incoming(incoming) {
                            return end;
                        }
                    }
                },
                read = reader.read(&mut buf[..room]), if can_read => match read {
                    Ok(0) => {
                        tcp_eof = true;
                        self.endpoint.finish();
                    }
                    Ok(n) => {
                        self.endpoint.write(&buf[..n]);
                        // Take what else is ready now, within the send buffer's room.
                        let mut total = n;
                        while total < TCP_COALESCE && !tcp_eof {
                            let room = self.endpoint.send_half().room().min(buf.len());
                            if room == 0 {
                                break;
                            }
                            match reader.try_read(&mut buf[..room]) {
                                Ok(0) => {
                                    tcp_eof = true;
                                    self.endpoint.finish();
                                }
                                Ok(more) => {
                                    self.endpoint.write(&buf[..more]);
                                    total += more;
                                }
                                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                                Err(_) => return End::Reset(ResetCode::Aborted),
                            }
                        }
                        self.last_data = Instant::now();
                        self.bytes_down += total as u64;
                        self.metrics.bytes_down.fetch_add(total as u64, Ordering::Relaxed);
                        if self.bytes_down > max_bytes {
                            return End::Reset(ResetCode::Limit);
                        }
                    }
                    Err(_) => return End::Reset(ResetCode::Aborted),
                },
                wrote = writer.write(&pending[written..]), if written < pending.len() => match wrote {
                    Ok(0) | Err(_) => return End::Reset(ResetCode::Aborted),
                    Ok(n) => written += n,
                },
                () = sleep_until(timer_at), if timer_armed => {
                    let now_ms = self.now_ms();
                    self.endpoint.on_timer(now_ms);
                }
                () = sleep_until(idle_at) => return End::Reset(ResetCode::Idle),
                () = sleep_until(lifetime_end) => return End::Reset(ResetCode::Limit),
            }
        }
    }

    /// Sends what the endpoint has to send while SURBs last: data only with
    /// SURBs beyond the reserve, control frames with the reserve too.
    fn flush(&mut self) {
        loop {
            let held = self.pool.len();
            if held == 0 {
                return;
            }
            let (budget, max_data) = if held > RESERVE {
                let budget = held - RESERVE;
                (budget, self.planner.max_data(&self.template(), budget))
            } else {
                (held, 0)
            };
            let now_ms = self.now_ms();
            let mut message = StreamMessage::new(self.id);
            match self.endpoint.poll(max_data, now_ms) {
                Some(out) => out.apply(&mut message),
                None if self.opened_owed => message.ack = Some(self.endpoint.ack_now()),
                None => return,
            }
            message.opened = std::mem::take(&mut self.opened_owed);
            if !self.send(message, budget) {
                return;
            }
        }
    }

    /// The frames the next message may carry besides data, for its data room.
    fn template(&self) -> StreamMessage {
        let mut message = StreamMessage::new(self.id);
        message.opened = self.opened_owed;
        message.pool = Some(Pool { held: 0, seen_seq: 0 });
        message.ack = Some(self.endpoint.recv_half().ack());
        message.fin = self.endpoint.send_half().finished().then_some(0);
        message
    }

    /// Sends `RESET code` with whatever SURBs are left.
    fn send_reset(&mut self, code: ResetCode) {
        let mut message = StreamMessage::new(self.id);
        message.reset = Some(code);
        let budget = self.pool.len();
        self.send(message, budget);
    }

    /// Sends `message` (its `POOL` frame filled in) with at most `budget`
    /// SURBs from the pool. Returns whether it went.
    fn send(&mut self, mut message: StreamMessage, budget: usize) -> bool {
        message.pool = Some(Pool { held: 0, seen_seq: self.pool.seen_seq() });
        let len = RESPONSE_HEADER_LEN + message.encoded_len();
        let Some((data, parity)) = self.planner.shards(len, budget.min(self.pool.len())) else {
            bump(&self.metrics.reply_errors);
            return false;
        };
        let spent = data + parity;
        let held = self.pool.len().saturating_sub(spent);
        message.pool = Some(Pool { held: u16::try_from(held).unwrap_or(u16::MAX), seen_seq: self.pool.seen_seq() });
        let encoded = Response::ok(message.encode()).encode();
        let mut surbs = self.pool.take(spent);
        match self.replies.send(&mut surbs, &encoded) {
            Ok(_) => {
                bump(&self.metrics.replies);
                // The plan matches the sender's: nothing is left, unless it planned fewer.
                self.pool.put_back(surbs);
                true
            }
            Err(_) => {
                // The SURBs that failed are dropped: a bad one must not block the pool.
                bump(&self.metrics.reply_errors);
                false
            }
        }
    }
}

/// Closes the connection with a TCP reset (zero linger), not a FIN: the
/// server must not take a truncated stream for a complete one.
fn abort(reader: OwnedReadHalf, writer: OwnedWriteHalf) {
    if let Ok(stream) = reader.reunite(writer) {
        let _ = stream.set_zero_linger();
    }
}
