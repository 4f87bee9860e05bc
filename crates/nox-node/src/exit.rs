//! The exit and reply-gateway ends of the node (paper §4.5).
//!
//! - **Exit** (last layer, `Deliver`): each payload is a `nox-fec` fragment
//!   of a request (`docs/spec/messages.md`). Fragments are reassembled; a
//!   complete request goes to the [`ExitHandler`] (the exit services live in
//!   their own crate, wired in by the `nox` binary); the response travels
//!   back only through the request's SURBs, split into FEC shards. A request
//!   with too few SURBs for its response gets a short `NotEnoughSurbs` error
//!   in one SURB; one with no SURB cannot be answered and is counted.
//! - **Reply gateway** (last layer, `DeliverReply`): the reply body goes down
//!   the client link that registered the SURB's recipient as its mailbox
//!   (`docs/spec/link.md` §2.4), rewritten in place as a reply frame.

use std::{
    fmt::Write as _,
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use nox_link::{LinkPublicKey, Mailbox, transport::OutboundLinks};
use nox_message::{Request, RequestAssembler, RequestBody, Response, Status};

/// Finds the link key of a topology node (the first hop of a SURB).
pub type LinkKeyLookup = Arc<dyn Fn(&NodeId) -> Option<LinkPublicKey> + Send + Sync>;

/// What a completed message asks of the exit.
enum Work {
    /// A valid request: perform it, answer on its SURBs.
    Perform(Request),
    /// A message whose SURBs parse but whose request does not: answer the error.
    Refuse(Vec<Surb>, Response),
}
use nox_sphinx::{Geometry, NodeId, Surb};
use rand_core::SeedableRng;

/// How the exit plans and sends replies (from `[exit]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplyPolicy {
    /// Loss rate the reply parity is planned for (Theorem 1).
    pub loss_estimate: f64,
    /// Delivery probability the parity aims at, within the SURB budget.
    pub target: f64,
    /// Fraction of reply packets dropped on purpose (measurement only).
    pub inject_loss: f64,
}

impl Default for ReplyPolicy {
    fn default() -> Self {
        Self { loss_estimate: 0.05, target: 0.999, inject_loss: 0.0 }
    }
}

/// Performs requests. Implementations must answer every request (errors
/// become error responses) and never panic.
pub trait ExitHandler: Send + Sync + 'static {
    /// Performs `body`; the encoded response must fit `max_reply_len` bytes
    /// (larger answers become `TooLarge` errors).
    fn handle(&self, body: RequestBody, max_reply_len: usize) -> Pin<Box<dyn Future<Output = Response> + Send>>;

    /// Takes a stream message (`Kind::Stream`, docs/spec/streams.md) and its SURBs, which join
    /// the stream's pool: the handler answers through `replies` whenever it has something to
    /// send, spending pooled SURBs. Called in arrival order, on the node's delivery path: it
    /// must not block. The default offers no streams: one `Unsupported` response.
    fn stream(&self, mut surbs: Vec<Surb>, body: Vec<u8>, replies: ReplySender) {
        let _ = body;
        let response = Response::error(Status::Unsupported, "this exit offers no streams");
        let _ = replies.send(&mut surbs, &response.encode());
    }

    /// Extra Prometheus text for the node's `/metrics` (aggregates only,
    /// never per-request or per-stream data). Default: none.
    fn render_metrics(&self) -> String {
        String::new()
    }
}

/// Sends replies through SURBs: what the exit end and a stream service use
/// to answer. Cheap to clone.
#[derive(Clone)]
pub struct ReplySender {
    path: Arc<ReplyPath>,
}

struct ReplyPath {
    geometry: Geometry,
    outbound: OutboundLinks,
    link_key_of: LinkKeyLookup,
    metrics: Arc<ExitMetrics>,
    policy: ReplyPolicy,
}

impl ReplySender {
    /// The geometry replies are built for.
    pub fn geometry(&self) -> &Geometry {
        &self.path.geometry
    }

    /// The reply policy replies are planned with (loss estimate and target),
    /// for a stream service sizing its messages to the SURBs it holds.
    pub fn policy(&self) -> ReplyPolicy {
        self.path.policy
    }

    /// Sends the encoded response `encoded`, taking from the front of `surbs`
    /// the SURBs it needs (its FEC shards: d data and the parity the exit's
    /// reply policy plans) and leaving the rest. Returns the packets sent.
    pub fn send(&self, surbs: &mut Vec<Surb>, encoded: &[u8]) -> Result<usize, nox_message::MessageError> {
        let path = &self.path;
        let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
        let packets = nox_message::reply_packets_from(
            &path.geometry,
            encoded,
            surbs,
            path.policy.loss_estimate,
            path.policy.target,
            &mut rng,
        )?;
        let mut sent = 0;
        for (first_hop, packet) in packets {
            if path.policy.inject_loss > 0.0 && unit_interval(&mut rng) < path.policy.inject_loss {
                path.metrics.reply_packets_injected_loss.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let ok = (path.link_key_of)(&first_hop).is_some_and(|key| path.outbound.send(&key, packet).is_ok());
            let counter = if ok { &path.metrics.reply_packets } else { &path.metrics.reply_packets_dropped };
            counter.fetch_add(1, Ordering::Relaxed);
            sent += usize::from(ok);
        }
        Ok(sent)
    }
}

/// Echo only: what an exit without configured services answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoOnly;

impl ExitHandler for EchoOnly {
    fn handle(&self, body: RequestBody, max_reply_len: usize) -> Pin<Box<dyn Future<Output = Response> + Send>> {
        let response = match body {
            RequestBody::Echo(data) if data.len() + 2 <= max_reply_len => Response::ok(data),
            RequestBody::Echo(_) => Response::error(Status::TooLarge, "echo larger than the SURBs can carry"),
            _ => Response::error(Status::Unsupported, "this exit offers only the echo service"),
        };
        Box::pin(async move { response })
    }
}

/// Exit and gateway counters (aggregates only).
#[derive(Debug, Default)]
pub struct ExitMetrics {
    /// Request fragments accepted.
    pub fragments: AtomicU64,
    /// Fragments refused (malformed, over a bound, inconsistent).
    pub fragments_refused: AtomicU64,
    /// Complete requests decoded.
    pub requests: AtomicU64,
    /// Complete messages that did not decode as a request.
    pub requests_malformed: AtomicU64,
    /// Requests that carried no SURB (no answer possible).
    pub requests_without_surbs: AtomicU64,
    /// Requests answered with `NotEnoughSurbs`.
    pub not_enough_surbs: AtomicU64,
    /// Responses by status (index = status byte).
    pub responses: [AtomicU64; 9],
    /// Reply packets sent into the mixnet.
    pub reply_packets: AtomicU64,
    /// Reply packets that could not be queued (unknown first hop, full queue).
    pub reply_packets_dropped: AtomicU64,
    /// Reply packets dropped on purpose (`inject_reply_loss`).
    pub reply_packets_injected_loss: AtomicU64,
    /// Reply frames handed to a client link (gateway).
    pub gateway_delivered: AtomicU64,
    /// Replies for a mailbox with no connected client (gateway).
    pub gateway_no_mailbox: AtomicU64,
    /// Stream messages handed to the stream service.
    pub stream_messages: AtomicU64,
}

impl ExitMetrics {
    /// Prometheus text for these counters.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let counters = [
            ("nox_exit_fragments_total", "Request fragments accepted.", load(&self.fragments)),
            ("nox_exit_fragments_refused_total", "Request fragments refused.", load(&self.fragments_refused)),
            ("nox_exit_requests_total", "Complete requests decoded.", load(&self.requests)),
            ("nox_exit_requests_malformed_total", "Messages that were not requests.", load(&self.requests_malformed)),
            (
                "nox_exit_requests_without_surbs_total",
                "Requests with no SURB to answer on.",
                load(&self.requests_without_surbs),
            ),
            ("nox_exit_reply_packets_total", "Reply packets sent.", load(&self.reply_packets)),
            (
                "nox_exit_reply_packets_dropped_total",
                "Reply packets that could not be queued.",
                load(&self.reply_packets_dropped),
            ),
            (
                "nox_exit_reply_packets_injected_loss_total",
                "Reply packets dropped on purpose (measurement knob).",
                load(&self.reply_packets_injected_loss),
            ),
            ("nox_gateway_replies_total", "Replies handed to client links.", load(&self.gateway_delivered)),
            ("nox_exit_stream_messages_total", "Stream messages received.", load(&self.stream_messages)),
            (
                "nox_gateway_no_mailbox_total",
                "Replies for a mailbox with no connected client.",
                load(&self.gateway_no_mailbox),
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        }
        let _ = writeln!(
            out,
            "# HELP nox_exit_responses_total Responses by status.\n# TYPE nox_exit_responses_total counter"
        );
        for (index, count) in self.responses.iter().enumerate() {
            let label = u8::try_from(index).ok().and_then(|b| Status::try_from(b).ok()).map_or("unknown", status_label);
            let _ = writeln!(out, "nox_exit_responses_total{{status=\"{label}\"}} {}", load(count));
        }
        out
    }
}

fn status_label(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::BadRequest => "bad_request",
        Status::Forbidden => "forbidden",
        Status::Timeout => "timeout",
        Status::TooLarge => "too_large",
        Status::Upstream => "upstream",
        Status::Busy => "busy",
        Status::Unsupported => "unsupported",
        Status::NotEnoughSurbs => "not_enough_surbs",
    }
}

/// The exit end: request reassembly, the handler, replies through SURBs.
pub struct ExitFront {
    geometry: Geometry,
    assembler: Mutex<RequestAssembler>,
    handler: Arc<dyn ExitHandler>,
    replies: ReplySender,
    metrics: Arc<ExitMetrics>,
    epoch: Instant,
}

impl ExitFront {
    /// An exit answering with `handler`, sending replies on `outbound`.
    pub fn new(
        geometry: Geometry,
        handler: Arc<dyn ExitHandler>,
        outbound: OutboundLinks,
        link_key_of: LinkKeyLookup,
        metrics: Arc<ExitMetrics>,
        policy: ReplyPolicy,
    ) -> Self {
        // REQUEST_LIMITS are valid constants; the fallback is unreachable
        // but keeps this constructor infallible without a panic path.
        let assembler = RequestAssembler::new(nox_message::REQUEST_LIMITS)
            .or_else(|_| RequestAssembler::new(nox_message::ReassemblyLimits::default()))
            .expect("default reassembly limits are valid");
        let path = ReplyPath { geometry, outbound, link_key_of, metrics: metrics.clone(), policy };
        Self {
            geometry,
            assembler: Mutex::new(assembler),
            handler,
            replies: ReplySender { path: Arc::new(path) },
            metrics,
            epoch: Instant::now(),
        }
    }

    /// Takes one delivered payload (a request fragment). A completed request
    /// is performed on a spawned task; this returns at once. A complete
    /// message that is not a valid request is answered with the error on
    /// its SURBs when those can be read.
    pub fn deliver(self: &Arc<Self>, payload: &[u8]) {
        let now_ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let accepted = match self.assembler.lock() {
            Ok(mut assembler) => {
                assembler.expire(now_ms);
                assembler.accept_raw(payload, now_ms)
            }
            Err(_) => return,
        };
        let message = match accepted {
            Ok(Some(message)) => message,
            Ok(None) => {
                self.metrics.fragments.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(_) => {
                self.metrics.fragments_refused.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        self.metrics.fragments.fetch_add(1, Ordering::Relaxed);
        let work = match Request::decode(&self.geometry, &message) {
            Ok(Request { surbs, body: RequestBody::Stream(body) }) => {
                self.metrics.stream_messages.fetch_add(1, Ordering::Relaxed);
                self.handler.stream(surbs, body, self.replies.clone());
                return;
            }
            Ok(request) => {
                self.metrics.requests.fetch_add(1, Ordering::Relaxed);
                Work::Perform(request)
            }
            Err(error) => {
                self.metrics.requests_malformed.fetch_add(1, Ordering::Relaxed);
                match Request::decode_surbs(&self.geometry, &message) {
                    Ok(surbs) => Work::Refuse(surbs, Response::error(error.status(), &error.to_string())),
                    Err(_) => return,
                }
            }
        };
        let me = self.clone();
        tokio::spawn(async move {
            match work {
                Work::Perform(Request { surbs, body }) => {
                    let max_reply_len = nox_message::max_reply_len(&me.geometry, surbs.len());
                    let response =
                        if surbs.is_empty() { None } else { Some(me.handler.handle(body, max_reply_len).await) };
                    me.answer(surbs, response).await;
                }
                Work::Refuse(surbs, response) => me.answer(surbs, Some(response)).await,
            }
        });
    }

    async fn answer(&self, surbs: Vec<Surb>, response: Option<Response>) {
        let Some(mut response) = response.filter(|_| !surbs.is_empty()) else {
            self.metrics.requests_without_surbs.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let max_reply_len = nox_message::max_reply_len(&self.geometry, surbs.len());
        let mut encoded = response.encode();
        if encoded.len() > max_reply_len {
            self.metrics.not_enough_surbs.fetch_add(1, Ordering::Relaxed);
            let message = format!(
                "the response has {} bytes; {} SURBs carry at most {max_reply_len}",
                encoded.len(),
                surbs.len()
            );
            response = Response::error(Status::NotEnoughSurbs, &message);
            encoded = response.encode();
        }
        if let Some(count) = self.metrics.responses.get(response.status as usize) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        let mut surbs = surbs;
        if let Err(error) = self.replies.send(&mut surbs, &encoded) {
            tracing::debug!(%error, "reply could not be built");
            self.metrics.reply_packets_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A uniform draw in [0, 1).
fn unit_interval(rng: &mut impl rand_core::RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Turns a processed reply packet into a reply frame and hands it to the
/// client link that registered `recipient` as its mailbox. Returns whether
/// a link took it.
pub fn deliver_to_mailbox(
    listener: &nox_link::transport::Listener,
    geometry: &Geometry,
    recipient: &NodeId,
    surb_id: &nox_sphinx::SurbId,
    mut packet: Vec<u8>,
    metrics: &ExitMetrics,
) -> bool {
    if nox_link::encode_reply_in_place(&mut packet, geometry.header_len(), &surb_id.0).is_err() {
        return false;
    }
    let delivered = listener.send_to_mailbox(&Mailbox(recipient.0), packet).is_ok();
    let counter = if delivered { &metrics.gateway_delivered } else { &metrics.gateway_no_mailbox };
    counter.fetch_add(1, Ordering::Relaxed);
    delivered
}
