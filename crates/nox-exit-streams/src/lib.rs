//! The exit's stream service (docs/spec/streams.md): TCP connections for
//! anonymous clients (SOCKS5 `CONNECT` at their end), relayed as `nox-stream`
//! streams over forward requests and SURB replies.
//!
//! - **Dispatch** ([`StreamService::on_message`], called by the node for every
//!   `Kind::Stream` request, in arrival order, without blocking): decode the
//!   stream message; a malformed one is answered `BadRequest` on one SURB; a
//!   message for a stream the exit does not know is answered `RESET 0x10` on
//!   one of its SURBs unless it is an `OPEN` (or itself a `RESET`), and no
//!   state is kept; an `OPEN` for a new id starts a session. An exit with
//!   streams disabled answers every `OPEN` with `RESET 0x01` (general failure,
//!   what a SOCKS5 client shows for "not offered"); one with `max_streams`
//!   sessions answers `RESET 0x14`. Ids of streams that ended recently are
//!   remembered (at most [`ENDED_REMEMBERED`], for [`ENDED_TTL`]): a late copy
//!   of their `OPEN` is answered `RESET 0x10`, never connected again (it
//!   would replay the client's first bytes to the server).
//! - **Session** (one task per stream, fed by a bounded channel of
//!   [`SESSION_QUEUE`] messages; an overflow drops the message, which the
//!   client resends): connects through [`nox_exit::ExitServices::connect`]
//!   (destination policy, `max_streams` permit held for the session's life),
//!   answers `OPENED` or `RESET` with the SOCKS5 reason, then relays bytes
//!   between the TCP connection and a [`nox_stream::Endpoint`]. TCP is read
//!   only while the endpoint's send buffer has room and the TCP socket is
//!   written from the endpoint only as fast as it drains, so both buffers are
//!   backpressure. The client's SURBs join the stream's pool ([`SurbPool`],
//!   1024 at most); one is kept in reserve for control frames and data goes
//!   out in messages of at most 8 data shards plus the parity the exit's reply
//!   policy plans ([`ReplyPlanner`]). Every message back carries `POOL`.
//! - **Bounds** (`[exit.services.streams]`): idle time with no data either
//!   way → `RESET 0x13`; lifetime or bytes each way → `RESET 0x12`; a peer
//!   silent for 5 timeouts → `RESET 0x13`; a protocol violation → `RESET
//!   0x11`; the server failing the connection → `RESET 0x15`. A client's
//!   `RESET` closes the TCP connection abortively.
//! - **Metrics** ([`StreamMetrics`]): aggregate counters only, no per-stream
//!   timing or address is logged. [`StreamMetrics::render`] gives Prometheus
//!   text, which the exit's adapter (`nox::exit_glue`) appends to the node's
//!   `/metrics`.
//!
//! What is pure and what does I/O: the crate's README.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod pool;
mod session;

use std::{
    collections::{HashMap, HashSet, VecDeque},
    fmt::Write as _,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use nox_exit::ExitServices;
use nox_message::{MessageError, Response, Status};
use nox_node::ReplySender;
use nox_stream::{EndpointConfig, ResetCode, StreamId, StreamMessage};
use tokio::sync::mpsc::{self, error::TrySendError};

pub use pool::{MAX_DATA_SHARDS, MAX_POOL, RESERVE, ReplyPlanner, SurbPool};
use session::Incoming;

/// Messages queued for one session before more are dropped.
pub const SESSION_QUEUE: usize = 256;
/// Ended streams whose ids are remembered.
pub const ENDED_REMEMBERED: usize = 16_384;
/// How long an ended stream's id is remembered.
pub const ENDED_TTL: Duration = Duration::from_secs(600);

/// Where a session's messages back go: the node's [`ReplySender`], or a test's
/// collector. Generic over the SURB type so that sessions are testable without
/// Sphinx keys.
pub trait Replies: Send + Sync + 'static {
    /// A single-use reply block.
    type Surb: Send + 'static;

    /// Shard capacity and reply policy, to plan messages back.
    fn planner(&self) -> ReplyPlanner;

    /// Sends the encoded response, taking from the front of `surbs` the SURBs
    /// its FEC shards use (as [`ReplySender::send`]) and leaving the rest.
    fn send(&self, surbs: &mut Vec<Self::Surb>, encoded: &[u8]) -> Result<usize, MessageError>;
}

impl Replies for ReplySender {
    type Surb = nox_sphinx::Surb;

    fn planner(&self) -> ReplyPlanner {
        let policy = self.policy();
        ReplyPlanner {
            shard_capacity: nox_fec::shard_capacity(self.geometry().payload_capacity()).unwrap_or(0),
            loss: policy.loss_estimate,
            target: policy.target,
        }
    }

    fn send(&self, surbs: &mut Vec<Self::Surb>, encoded: &[u8]) -> Result<usize, MessageError> {
        ReplySender::send(self, surbs, encoded)
    }
}

/// Every reset code, in the order of the counters indexed by code.
const CODES: [ResetCode; 12] = [
    ResetCode::General,
    ResetCode::Forbidden,
    ResetCode::NetworkUnreachable,
    ResetCode::HostUnreachable,
    ResetCode::Refused,
    ResetCode::Timeout,
    ResetCode::UnknownStream,
    ResetCode::Protocol,
    ResetCode::Limit,
    ResetCode::Idle,
    ResetCode::Busy,
    ResetCode::Aborted,
];

fn code_index(code: ResetCode) -> usize {
    CODES.iter().position(|c| *c == code).unwrap_or(0)
}

fn code_label(code: ResetCode) -> &'static str {
    match code {
        ResetCode::General => "general",
        ResetCode::Forbidden => "forbidden",
        ResetCode::NetworkUnreachable => "network_unreachable",
        ResetCode::HostUnreachable => "host_unreachable",
        ResetCode::Refused => "refused",
        ResetCode::Timeout => "timeout",
        ResetCode::UnknownStream => "unknown_stream",
        ResetCode::Protocol => "protocol",
        ResetCode::Limit => "limit",
        ResetCode::Idle => "idle",
        ResetCode::Busy => "busy",
        ResetCode::Aborted => "aborted",
    }
}

/// Stream service counters (aggregates only).
#[derive(Debug, Default)]
pub struct StreamMetrics {
    /// Stream messages handed to the service.
    pub messages: AtomicU64,
    /// Messages that did not decode (answered `BadRequest`).
    pub malformed: AtomicU64,
    /// Messages for a stream the exit does not know.
    pub unknown: AtomicU64,
    /// Messages dropped because their session's queue was full.
    pub dropped: AtomicU64,
    /// Streams connected (`OPENED` owed).
    pub opened: AtomicU64,
    /// `OPEN`s refused, by reset code (streams disabled count as `general`).
    pub refused: [AtomicU64; 12],
    /// Streams that closed normally (both FINs acknowledged).
    pub closed: AtomicU64,
    /// Streams the exit reset after opening them, by reset code.
    pub resets_sent: [AtomicU64; 12],
    /// Streams the client reset.
    pub resets_received: AtomicU64,
    /// Bytes from clients written to servers.
    pub bytes_up: AtomicU64,
    /// Bytes from servers read for clients.
    pub bytes_down: AtomicU64,
    /// Messages sent back.
    pub replies: AtomicU64,
    /// Messages back that could not be built or planned (their SURBs are dropped).
    pub reply_errors: AtomicU64,
    /// SURBs dropped because a stream's pool was full.
    pub surbs_dropped: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl StreamMetrics {
    /// Refusals with `code`.
    pub fn refused(&self, code: ResetCode) -> u64 {
        self.refused[code_index(code)].load(Ordering::Relaxed)
    }

    /// Resets sent with `code` (after the stream opened).
    pub fn resets_sent(&self, code: ResetCode) -> u64 {
        self.resets_sent[code_index(code)].load(Ordering::Relaxed)
    }

    /// Prometheus text for these counters.
    pub fn render(&self) -> String {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let counters = [
            ("nox_exit_streams_messages_total", "Stream messages handled.", load(&self.messages)),
            ("nox_exit_streams_malformed_total", "Stream messages that did not decode.", load(&self.malformed)),
            ("nox_exit_streams_unknown_total", "Stream messages for unknown streams.", load(&self.unknown)),
            ("nox_exit_streams_dropped_total", "Stream messages dropped (session queue full).", load(&self.dropped)),
            ("nox_exit_streams_opened_total", "Streams connected.", load(&self.opened)),
            ("nox_exit_streams_closed_total", "Streams closed normally.", load(&self.closed)),
            ("nox_exit_streams_resets_received_total", "Streams reset by the client.", load(&self.resets_received)),
            ("nox_exit_streams_bytes_up_total", "Bytes relayed from clients to servers.", load(&self.bytes_up)),
            ("nox_exit_streams_bytes_down_total", "Bytes relayed from servers to clients.", load(&self.bytes_down)),
            ("nox_exit_streams_replies_total", "Stream messages sent back.", load(&self.replies)),
            ("nox_exit_streams_reply_errors_total", "Stream messages back not sent.", load(&self.reply_errors)),
            ("nox_exit_streams_surbs_dropped_total", "SURBs dropped from full pools.", load(&self.surbs_dropped)),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        }
        for (name, help, values) in [
            ("nox_exit_streams_refused_total", "OPENs refused, by reset code.", &self.refused),
            ("nox_exit_streams_resets_sent_total", "Open streams reset by the exit, by code.", &self.resets_sent),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (code, value) in CODES.iter().zip(values) {
                let _ = writeln!(out, "{name}{{code=\"{}\"}} {}", code_label(*code), load(value));
            }
        }
        out
    }
}

/// The live sessions and the recently ended ids.
struct Table<S> {
    live: HashMap<StreamId, mpsc::Sender<Incoming<S>>>,
    ended: HashSet<StreamId>,
    ended_order: VecDeque<(Instant, StreamId)>,
}

impl<S> Table<S> {
    fn forget_old(&mut self, now: Instant) {
        while let Some((at, id)) = self.ended_order.front().copied() {
            if self.ended_order.len() <= ENDED_REMEMBERED && now.saturating_duration_since(at) < ENDED_TTL {
                break;
            }
            self.ended_order.pop_front();
            self.ended.remove(&id);
        }
    }

    fn end(&mut self, id: StreamId, now: Instant) {
        self.live.remove(&id);
        if self.ended.insert(id) {
            self.ended_order.push_back((now, id));
        }
        self.forget_old(now);
    }
}

struct Shared<S> {
    services: Arc<ExitServices>,
    /// The exit endpoint of every session (retransmission timeouts, windows).
    endpoint: EndpointConfig,
    table: Mutex<Table<S>>,
    metrics: Arc<StreamMetrics>,
}

/// The exit's stream service: dispatches stream messages to per-stream
/// sessions (see the module documentation).
pub struct StreamService<R: Replies> {
    shared: Arc<Shared<R::Surb>>,
}

impl<R: Replies> StreamService<R> {
    /// A service opening connections through `services` (its
    /// `streams` settings and destination policy), with the default
    /// [`EndpointConfig`] for its end of every stream.
    pub fn new(services: Arc<ExitServices>) -> Self {
        Self::with_endpoint(services, EndpointConfig::default())
    }

    /// As [`StreamService::new`], with `endpoint` for the exit's end of every
    /// stream (retransmission timeouts, windows, acknowledgement delay). The
    /// node uses [`StreamService::new`]; tests shorten the timeouts so that a
    /// lost reply costs milliseconds, not seconds.
    pub fn with_endpoint(services: Arc<ExitServices>, endpoint: EndpointConfig) -> Self {
        let table = Table { live: HashMap::new(), ended: HashSet::new(), ended_order: VecDeque::new() };
        Self { shared: Arc::new(Shared { services, endpoint, table: Mutex::new(table), metrics: Arc::default() }) }
    }

    /// The counters.
    pub fn metrics(&self) -> &StreamMetrics {
        &self.shared.metrics
    }

    /// Sessions running now (connecting or relaying).
    pub fn live_streams(&self) -> usize {
        self.shared.table.lock().map_or(0, |table| table.live.len())
    }

    /// Takes one stream message (`body`) and its request's SURBs; answers
    /// through `replies`. Never blocks; needs a Tokio runtime to start a
    /// session (without one an `OPEN` is refused `RESET 0x01`).
    pub fn on_message(&self, mut surbs: Vec<R::Surb>, body: Vec<u8>, replies: R) {
        let metrics = &self.shared.metrics;
        bump(&metrics.messages);
        let message = match StreamMessage::decode(&body) {
            Ok(message) => message,
            Err(error) => {
                bump(&metrics.malformed);
                let response = Response::error(Status::BadRequest, &format!("stream message: {error}"));
                answer_on_one(&replies, &mut surbs, &response.encode(), metrics);
                return;
            }
        };
        let id = message.id;
        let Ok(mut table) = self.shared.table.lock() else { return };
        let mut incoming = Incoming { message, surbs };
        if let Some(sender) = table.live.get(&id) {
            match sender.try_send(incoming) {
                Ok(()) => return,
                Err(TrySendError::Full(_)) => {
                    bump(&metrics.dropped);
                    return;
                }
                // The session ended and is being removed: the stream is unknown now.
                Err(TrySendError::Closed(back)) => {
                    table.end(id, Instant::now());
                    incoming = back;
                }
            }
        }
        let Incoming { message, mut surbs } = incoming;
        let target = match &message.open {
            Some(target) if !table.ended.contains(&id) => target.clone(),
            _ => {
                drop(table);
                bump(&metrics.unknown);
                // No answer is owed to a RESET.
                if message.reset.is_none() {
                    answer_reset(&replies, &mut surbs, id, ResetCode::UnknownStream, metrics);
                }
                return;
            }
        };
        let streams = &self.shared.services.config().streams;
        let runtime = tokio::runtime::Handle::try_current();
        let refusal = if !streams.enabled || runtime.is_err() {
            Some(ResetCode::General)
        } else if table.live.len() >= streams.max_streams {
            Some(ResetCode::Busy)
        } else {
            None
        };
        if let Some(code) = refusal {
            drop(table);
            bump(&metrics.refused[code_index(code)]);
            answer_reset(&replies, &mut surbs, id, code, metrics);
            return;
        }
        let (sender, receiver) = mpsc::channel(SESSION_QUEUE);
        table.live.insert(id, sender);
        drop(table);
        let shared = self.shared.clone();
        let first = Incoming { message, surbs };
        let task = async move {
            let end = session::run(
                id,
                target,
                first,
                receiver,
                replies,
                shared.services.clone(),
                shared.metrics.clone(),
                shared.endpoint,
            )
            .await;
            if let Ok(mut table) = shared.table.lock() {
                table.end(id, Instant::now());
            }
            end.count(&shared.metrics);
        };
        if let Ok(runtime) = runtime {
            runtime.spawn(task);
        }
    }
}

/// Sends `encoded` on the first SURB, if there is one.
fn answer_on_one<R: Replies>(replies: &R, surbs: &mut Vec<R::Surb>, encoded: &[u8], metrics: &StreamMetrics) {
    if surbs.is_empty() {
        return;
    }
    surbs.truncate(1);
    match replies.send(surbs, encoded) {
        Ok(_) => bump(&metrics.replies),
        Err(_) => bump(&metrics.reply_errors),
    }
}

/// Answers `RESET code` for stream `id` on one SURB, keeping no state.
fn answer_reset<R: Replies>(
    replies: &R,
    surbs: &mut Vec<R::Surb>,
    id: StreamId,
    code: ResetCode,
    metrics: &StreamMetrics,
) {
    let mut message = StreamMessage::new(id);
    message.reset = Some(code);
    answer_on_one(replies, surbs, &Response::ok(message.encode()).encode(), metrics);
}

#[cfg(test)]
mod tests;
