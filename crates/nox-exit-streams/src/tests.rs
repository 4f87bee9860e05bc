//! The stream service without a node: a collector stands in for the SURB
//! replies (SURBs are numbers), a test drives a client [`Endpoint`], and the
//! destinations are loopback TCP servers allowed by the exit's policy.

use std::net::SocketAddr;
use std::time::Duration;

use nox_exit::{AllowEntry, ExitConfig, ExitServices};
use nox_fec::{PlanningError, plan_reply};
use nox_message::{MessageError, Response, Status};
use nox_stream::{Endpoint, EndpointConfig, ResetCode, StreamId, StreamMessage, SurbBatch, Target};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc as tmpsc;
use tokio::time::Instant;

use super::*;

/// A reply as the collector saw it: the encoded response and the SURBs it spent.
#[derive(Debug)]
struct Sent {
    encoded: Vec<u8>,
    surbs: Vec<u32>,
}

/// Replies that go to the test: spends SURBs exactly as
/// `nox_message::reply_packets_from` does (same planning, same errors).
#[derive(Clone)]
struct Collector {
    payload_capacity: usize,
    loss: f64,
    target: f64,
    out: tmpsc::UnboundedSender<Sent>,
    /// Loses every n-th reply after the first (0: none), SURBs spent all the same.
    lose_every: usize,
    replies: Arc<std::sync::atomic::AtomicUsize>,
}

impl Replies for Collector {
    type Surb = u32;

    fn planner(&self) -> ReplyPlanner {
        ReplyPlanner {
            shard_capacity: nox_fec::shard_capacity(self.payload_capacity).unwrap_or(0),
            loss: self.loss,
            target: self.target,
        }
    }

    fn send(&self, surbs: &mut Vec<u32>, encoded: &[u8]) -> Result<usize, MessageError> {
        let capacity = nox_fec::shard_capacity(self.payload_capacity).unwrap_or(1);
        let needed = encoded.len().div_ceil(capacity).max(1);
        if needed > surbs.len() {
            return Err(MessageError::NotEnoughSurbs { needed, have: surbs.len() });
        }
        let total = match plan_reply(encoded.len(), self.payload_capacity, surbs.len(), self.loss, self.target) {
            Ok(plan) => plan.layout.total_shards(),
            Err(PlanningError::TargetUnreachable { best, .. }) => best.total_shards(),
            Err(error) => panic!("planning: {error}"),
        };
        let spent: Vec<u32> = surbs.drain(..total).collect();
        let n = self.replies.fetch_add(1, Ordering::Relaxed);
        if self.lose_every > 0 && n > 0 && n.is_multiple_of(self.lose_every) {
            return Ok(total);
        }
        let _ = self.out.send(Sent { encoded: encoded.to_vec(), surbs: spent });
        Ok(total)
    }
}

fn collector() -> (Collector, tmpsc::UnboundedReceiver<Sent>) {
    let (out, rx) = tmpsc::unbounded_channel();
    let payload_capacity = nox_sphinx::Geometry::default().payload_capacity();
    let replies = Arc::default();
    (Collector { payload_capacity, loss: 0.05, target: 0.999, out, lose_every: 0, replies }, rx)
}

fn service(config: ExitConfig) -> StreamService<Collector> {
    StreamService::new(Arc::new(ExitServices::new(config).unwrap()))
}

fn allowing(addr: SocketAddr) -> ExitConfig {
    let mut config = ExitConfig::default();
    config.http.allow = vec![AllowEntry::socket(addr)];
    config
}

fn stream_of(sent: &Sent) -> StreamMessage {
    let response = Response::decode(&sent.encoded).unwrap();
    assert_eq!(response.status, Status::Ok, "{response:?}");
    StreamMessage::decode(&response.body).unwrap()
}

fn open_message(id: StreamId, addr: SocketAddr, surbs: u16) -> StreamMessage {
    let mut message = StreamMessage::new(id);
    message.open = Some(Target { host: addr.ip().to_string(), port: addr.port() });
    message.surbs = Some(SurbBatch { seq: 1, count: surbs });
    message.ack = Some(Endpoint::new(EndpointConfig::default()).ack_now());
    message
}

/// A loopback server echoing every byte, closing after the client's FIN.
async fn echo_server() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    nox_testnet::servers::tcp_echo_server_on(listener).unwrap()
}

async fn next_reply(rx: &mut tmpsc::UnboundedReceiver<Sent>) -> Sent {
    tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("a reply within 10 s").unwrap()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---- dispatch without a session ----

#[test]
fn a_malformed_message_is_answered_bad_request_on_one_surb() {
    let (replies, mut rx) = collector();
    let service = service(ExitConfig::default());
    service.on_message(vec![1, 2, 3], vec![0x02, 0xff], replies.clone());
    let sent = rx.try_recv().unwrap();
    assert_eq!(sent.surbs, vec![1]);
    assert_eq!(Response::decode(&sent.encoded).unwrap().status, Status::BadRequest);
    // Without a SURB: counted, not answered.
    service.on_message(vec![], vec![0x01], replies);
    assert!(rx.try_recv().is_err());
    assert_eq!(service.metrics().malformed.load(Ordering::Relaxed), 2);
    assert_eq!(service.live_streams(), 0);
}

#[test]
fn a_message_for_an_unknown_stream_is_answered_reset_unknown_and_leaves_no_state() {
    let (replies, mut rx) = collector();
    let service = service(ExitConfig::default());
    let id = StreamId([5; 16]);
    let mut message = StreamMessage::new(id);
    message.ack = Some(Endpoint::new(EndpointConfig::default()).ack_now());
    service.on_message(vec![10, 11], message.encode(), replies.clone());
    let sent = rx.try_recv().unwrap();
    assert_eq!(sent.surbs, vec![10]);
    let answer = stream_of(&sent);
    assert_eq!((answer.id, answer.reset), (id, Some(ResetCode::UnknownStream)));
    assert_eq!(service.live_streams(), 0);
    // A RESET for an unknown stream is owed no answer.
    let mut reset = StreamMessage::new(id);
    reset.reset = Some(ResetCode::Aborted);
    service.on_message(vec![12], reset.encode(), replies);
    assert!(rx.try_recv().is_err());
    assert_eq!(service.metrics().unknown.load(Ordering::Relaxed), 2);
}

#[test]
fn an_exit_without_streams_refuses_every_open_with_a_general_failure() {
    let (replies, mut rx) = collector();
    let mut config = ExitConfig::default();
    config.streams.enabled = false;
    let service = service(config);
    let id = StreamId([6; 16]);
    service.on_message(vec![1, 2], open_message(id, "93.184.216.34:443".parse().unwrap(), 2).encode(), replies);
    let answer = stream_of(&rx.try_recv().unwrap());
    assert_eq!(answer.reset, Some(ResetCode::General));
    assert_eq!(service.live_streams(), 0);
    assert_eq!(service.metrics().refused(ResetCode::General), 1);
}

#[test]
fn without_a_runtime_an_open_is_refused_not_a_panic() {
    let (replies, mut rx) = collector();
    let service = service(ExitConfig::default());
    let id = StreamId([7; 16]);
    service.on_message(vec![1], open_message(id, "93.184.216.34:443".parse().unwrap(), 1).encode(), replies);
    assert_eq!(stream_of(&rx.try_recv().unwrap()).reset, Some(ResetCode::General));
    assert_eq!(service.live_streams(), 0);
}

#[test]
fn metrics_render_as_prometheus_text() {
    let metrics = StreamMetrics::default();
    bump(&metrics.refused[code_index(ResetCode::Forbidden)]);
    let text = metrics.render();
    assert!(text.contains("nox_exit_streams_refused_total{code=\"forbidden\"} 1\n"), "{text}");
    assert!(text.contains("nox_exit_streams_opened_total 0\n"));
}

#[test]
fn connect_failures_map_to_their_reset_codes() {
    use nox_exit::ConnectError;
    let cases = [
        (ConnectError::Forbidden("x".into()), ResetCode::Forbidden),
        (ConnectError::Refused("x".into()), ResetCode::Refused),
        (ConnectError::HostUnreachable("x".into()), ResetCode::HostUnreachable),
        (ConnectError::NetworkUnreachable("x".into()), ResetCode::NetworkUnreachable),
        (ConnectError::Timeout(5), ResetCode::Timeout),
        (ConnectError::BadRequest("x".into()), ResetCode::General),
        (ConnectError::Busy(3), ResetCode::Busy),
        (ConnectError::Unsupported("x".into()), ResetCode::General),
    ];
    for (error, code) in cases {
        assert_eq!(session::refusal_code(&error), code, "{error:?}");
    }
}

// ---- whole sessions over loopback TCP ----

/// The client end of one stream, talking to the service directly.
struct Client {
    id: StreamId,
    endpoint: Endpoint,
    service: Arc<StreamService<Collector>>,
    replies: Collector,
    rx: tmpsc::UnboundedReceiver<Sent>,
    next_surb: u32,
    seq: u32,
    /// SURBs given minus SURBs the collector saw spent: at least what the exit holds.
    held: usize,
    /// The pool estimate of docs/spec/streams.md §4: the last `POOL.held`
    /// plus the batches sent after its `seen_seq`.
    exit_held: usize,
    batches: Vec<(u32, u16)>,
    spent: Vec<u32>,
    start: Instant,
    opened: bool,
    resets: Vec<ResetCode>,
    /// When the last reply and the last message were taken and sent (ms):
    /// as the real client (`nox-client`), a stream quiet both ways for
    /// [`KEEPALIVE_MS`] sends a keepalive with a SURB. Without it, replies
    /// lost with their `POOL` leave the client's estimate stale and high, no
    /// top-up goes, and the exit, down to its reserve, cannot resend data:
    /// the stream stalls until the exit's idle timeout (120 s).
    last_heard: u64,
    last_sent: u64,
}

/// The test client's keepalive interval (the real client's is a config value).
const KEEPALIVE_MS: u64 = 200;
/// SURBs a keepalive carries: enough for one data message back with its
/// parity, so that an exit down to its reserve can resend (one SURB would
/// only join the reserve, and the exit would stay silent).
const KEEPALIVE_SURBS: u16 = 8;

/// Endpoints with retransmission timeouts 10× shorter than the default
/// (first 300 ms, within [50 ms, 1.6 s]) and more expiries before giving up
/// (12: the same ~1 minute of silence at most): a lost reply costs
/// milliseconds of a test, not seconds, and a loaded machine's stalls only
/// cause spurious (harmless) resends. Windows and ack delay are the default's.
fn quick_endpoint() -> EndpointConfig {
    EndpointConfig {
        initial_rto_ms: 300,
        min_rto_ms: 50,
        max_rto_ms: 1_600,
        max_backoffs: 12,
        ..EndpointConfig::default()
    }
}

impl Client {
    fn new(service: Arc<StreamService<Collector>>, id: StreamId) -> Self {
        let (replies, rx) = collector();
        Self {
            id,
            endpoint: Endpoint::new(EndpointConfig::default()),
            service,
            replies,
            rx,
            next_surb: 0,
            seq: 0,
            held: 0,
            exit_held: 0,
            batches: Vec::new(),
            spent: Vec::new(),
            start: Instant::now(),
            opened: false,
            resets: Vec::new(),
            last_heard: 0,
            last_sent: 0,
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Sends `message` with a batch of `n` SURBs.
    fn send(&mut self, mut message: StreamMessage, n: u16) {
        let surbs: Vec<u32> = (self.next_surb..self.next_surb + u32::from(n)).collect();
        self.next_surb += u32::from(n);
        if n > 0 {
            self.seq += 1;
            message.surbs = Some(SurbBatch { seq: self.seq, count: n });
            self.batches.push((self.seq, n));
        }
        self.held += usize::from(n);
        self.last_sent = self.now_ms();
        self.service.on_message(surbs, message.encode(), self.replies.clone());
    }

    fn open(&mut self, addr: SocketAddr, n: u16) {
        let mut message = open_message(self.id, addr, n);
        message.surbs = None;
        message.ack = Some(self.endpoint.ack_now());
        self.send(message, n);
    }

    /// Takes one reply: checks the SURB accounting and feeds the endpoint.
    fn take(&mut self, sent: Sent) -> StreamMessage {
        assert!(sent.surbs.first() > self.spent.last(), "SURBs spent oldest first, never twice");
        self.held -= sent.surbs.len();
        self.spent.extend(&sent.surbs);
        let message = stream_of(&sent);
        assert_eq!(message.id, self.id);
        // The exit may not have taken the client's latest messages yet: at most
        // what the client gave, less what the collector saw spent.
        let Some(pool) = message.pool else {
            panic!("every message back carries POOL: {message:?}, client {:?}", self.endpoint.recv_half().ack())
        };
        assert!(usize::from(pool.held) <= self.held, "POOL.held {} > {}", pool.held, self.held);
        assert!(pool.seen_seq <= self.seq);
        self.exit_held = usize::from(pool.held);
        self.batches.retain(|(seq, _)| *seq > pool.seen_seq);
        if message.data.is_some() {
            assert!(usize::from(pool.held) >= RESERVE, "data never spends the reserve");
        }
        self.opened |= message.opened;
        if let Some(code) = message.reset {
            self.resets.push(code);
        }
        let now = self.now_ms();
        self.last_heard = now;
        self.endpoint.on_message(&message, now).unwrap();
        message
    }

    /// The next reply, taken.
    async fn next(&mut self) -> StreamMessage {
        let sent = next_reply(&mut self.rx).await;
        self.take(sent)
    }

    /// Takes the replies that arrive within `wait`; returns how many carried data.
    async fn pump_replies(&mut self, wait: Duration) -> usize {
        let mut data = 0;
        if let Ok(Some(sent)) = tokio::time::timeout(wait, self.rx.recv()).await {
            data += usize::from(self.take(sent).data.is_some());
            while let Ok(sent) = self.rx.try_recv() {
                data += usize::from(self.take(sent).data.is_some());
            }
        }
        data
    }

    fn estimate(&self) -> usize {
        self.exit_held + self.batches.iter().map(|(_, n)| usize::from(*n)).sum::<usize>()
    }

    /// Sends what the endpoint has, topping the exit's pool up.
    fn pump_sends(&mut self) {
        let now = self.now_ms();
        self.endpoint.on_timer(now);
        // At most 64 messages at once: well within the session's queue.
        for _ in 0..64 {
            let Some(out) = self.endpoint.poll(1_000, now) else { break };
            let mut message = StreamMessage::new(self.id);
            out.apply(&mut message);
            let top_up = if self.estimate() < 64 { 32 } else { 0 };
            self.send(message, top_up);
        }
        if self.estimate() < 16 {
            let mut message = StreamMessage::new(self.id);
            message.ack = Some(self.endpoint.ack_now());
            self.send(message, 64);
        }
        let quiet = now >= self.last_heard + KEEPALIVE_MS && now >= self.last_sent + KEEPALIVE_MS;
        if self.opened && quiet && !self.endpoint.closed() {
            let mut message = StreamMessage::new(self.id);
            message.ack = Some(self.endpoint.ack_now());
            self.send(message, KEEPALIVE_SURBS);
        }
    }
}

/// Echoes `len` bytes through a stream whose replies lose every
/// `lose_every`-th one, with `endpoint` at both ends, and closes it; returns
/// the service.
async fn echo_through_a_stream(
    len: u32,
    payload_capacity: usize,
    lose_every: usize,
    endpoint: EndpointConfig,
    within: Duration,
) -> Arc<StreamService<Collector>> {
    let server = echo_server().await;
    let services = Arc::new(ExitServices::new(allowing(server)).unwrap());
    let service = Arc::new(StreamService::with_endpoint(services, endpoint));
    let mut client = Client::new(service.clone(), StreamId([1; 16]));
    client.endpoint = Endpoint::new(endpoint);
    client.replies.lose_every = lose_every;
    client.replies.payload_capacity = payload_capacity;
    client.open(server, 4);
    let first = client.next().await;
    assert!(first.opened, "{first:?}");
    assert!(first.data.is_none());
    assert_eq!(service.live_streams(), 1);

    let upload: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
    let mut written = 0;
    let mut echoed = Vec::new();
    let mut data_replies = 0;
    let deadline = Instant::now() + within;
    while !(client.endpoint.closed() && service.live_streams() == 0) {
        assert!(Instant::now() < deadline, "stuck: {} of {} echoed; {:?}", echoed.len(), upload.len(), client.endpoint);
        written += client.endpoint.write(&upload[written..]);
        if written == upload.len() && echoed.len() == upload.len() {
            client.endpoint.finish();
        }
        client.pump_sends();
        data_replies += client.pump_replies(Duration::from_millis(20)).await;
        let now = client.now_ms();
        echoed.extend(client.endpoint.read(usize::MAX, now));
    }
    assert_eq!(echoed, upload);
    assert!(client.resets.is_empty(), "{:?}", client.resets);
    assert!(data_replies > 1, "the download took several messages back");
    let metrics = service.metrics();
    wait_until("the session counted its end", || metrics.closed.load(Ordering::Relaxed) == 1).await;
    assert_eq!(metrics.opened.load(Ordering::Relaxed), 1);
    assert_eq!(metrics.bytes_up.load(Ordering::Relaxed), upload.len() as u64);
    assert_eq!(metrics.bytes_down.load(Ordering::Relaxed), upload.len() as u64);
    assert_eq!(metrics.reply_errors.load(Ordering::Relaxed), 0);
    // The id is remembered: a late copy of its OPEN is not connected again.
    client.replies.lose_every = 0;
    client.open(server, 1);
    assert_eq!(stream_of(&next_reply(&mut client.rx).await).reset, Some(ResetCode::UnknownStream));
    assert_eq!(service.live_streams(), 0);
    service
}

#[tokio::test]
async fn a_stream_opens_carries_bytes_both_ways_and_closes() {
    let packet = nox_sphinx::Geometry::default().payload_capacity();
    echo_through_a_stream(300_000, packet, 0, EndpointConfig::default(), Duration::from_secs(30)).await;
    // Small packets: messages back span several data shards plus parity.
    echo_through_a_stream(100_000, 2_000, 0, EndpointConfig::default(), Duration::from_secs(30)).await;
}

/// Lost replies (what FEC did not save) are resent by the exit on its
/// retransmission timeout, lost acknowledgements make the client resend.
/// Short timeouts at both ends (the default's first is 3 s): the same
/// protocol, a loss costs milliseconds.
#[tokio::test]
async fn lost_replies_are_resent_and_the_stream_still_closes() {
    let service = echo_through_a_stream(60_000, 2_000, 3, quick_endpoint(), Duration::from_secs(30)).await;
    assert!(service.metrics().replies.load(Ordering::Relaxed) > 6);
}

#[tokio::test]
async fn a_destination_the_policy_refuses_is_reset_forbidden() {
    let server = echo_server().await;
    let service = Arc::new(service(ExitConfig::default()));
    let mut client = Client::new(service.clone(), StreamId([2; 16]));
    client.open(server, 3);
    let answer = client.next().await;
    assert_eq!(answer.reset, Some(ResetCode::Forbidden));
    assert!(!answer.opened);
    wait_until("the refused session ended", || service.live_streams() == 0).await;
    assert_eq!(service.metrics().refused(ResetCode::Forbidden), 1);
    // Its id is unknown now, with or without OPEN.
    let mut probe = StreamMessage::new(client.id);
    probe.ack = Some(client.endpoint.ack_now());
    client.send(probe, 1);
    assert_eq!(stream_of(&next_reply(&mut client.rx).await).reset, Some(ResetCode::UnknownStream));
}

#[tokio::test]
async fn a_refused_connection_is_reset_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed = listener.local_addr().unwrap();
    drop(listener);
    let service = Arc::new(service(allowing(closed)));
    let mut client = Client::new(service.clone(), StreamId([3; 16]));
    client.open(closed, 1);
    let answer = client.next().await;
    assert_eq!(answer.reset, Some(ResetCode::Refused));
    assert_eq!(answer.pool.map(|p| p.held), Some(0));
}

#[tokio::test]
async fn a_client_reset_closes_the_connection_abortively() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap();
    let service = Arc::new(service(allowing(server)));
    let mut client = Client::new(service.clone(), StreamId([4; 16]));
    client.open(server, 4);
    let (mut accepted, _) = listener.accept().await.unwrap();
    assert!(client.next().await.opened);
    let mut reset = StreamMessage::new(client.id);
    reset.reset = Some(ResetCode::Aborted);
    client.send(reset, 0);
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), accepted.read(&mut buf)).await.unwrap();
    assert!(read.is_err(), "a TCP reset, not a FIN: {read:?}");
    wait_until("the session ended", || service.live_streams() == 0).await;
    assert_eq!(service.metrics().resets_received.load(Ordering::Relaxed), 1);
    assert!(client.rx.try_recv().is_err(), "no answer to a RESET");
}

#[tokio::test]
async fn a_silent_stream_is_reset_idle() {
    let server = echo_server().await;
    let mut config = allowing(server);
    config.streams.idle_timeout = Duration::from_millis(300);
    let service = Arc::new(service(config));
    let mut client = Client::new(service.clone(), StreamId([8; 16]));
    client.open(server, 8);
    assert!(client.next().await.opened);
    let answer = client.next().await;
    assert_eq!(answer.reset, Some(ResetCode::Idle));
    wait_until("the session ended", || service.live_streams() == 0).await;
    assert_eq!(service.metrics().resets_sent(ResetCode::Idle), 1);
}

#[tokio::test]
async fn more_bytes_than_allowed_reset_the_stream_with_limit() {
    let server = echo_server().await;
    let mut config = allowing(server);
    config.streams.max_stream_bytes = 1_000;
    let service = Arc::new(service(config));
    let mut client = Client::new(service.clone(), StreamId([9; 16]));
    client.open(server, 8);
    assert!(client.next().await.opened);
    client.endpoint.write(&[7u8; 1_500]);
    client.pump_sends();
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.resets.is_empty() {
        assert!(Instant::now() < deadline, "no reset");
        client.pump_replies(Duration::from_millis(20)).await;
        client.pump_sends();
    }
    assert_eq!(client.resets, vec![ResetCode::Limit]);
    wait_until("the session ended", || service.live_streams() == 0).await;
}

#[tokio::test]
async fn a_full_exit_answers_busy_and_a_lost_opened_is_said_again() {
    let server = echo_server().await;
    let mut config = allowing(server);
    config.streams.max_streams = 1;
    let service = Arc::new(service(config));
    let mut first = Client::new(service.clone(), StreamId([10; 16]));
    first.open(server, 8);
    // The OPENED is "lost": the client resends its OPEN and hears OPENED again.
    let lost = next_reply(&mut first.rx).await;
    assert!(stream_of(&lost).opened);
    first.held -= lost.surbs.len();
    first.spent.extend(&lost.surbs);
    first.open(server, 4);
    let again = first.next().await;
    assert!(again.opened, "{again:?}");
    assert_eq!(service.live_streams(), 1);

    let mut second = Client::new(service.clone(), StreamId([11; 16]));
    second.open(server, 2);
    assert_eq!(stream_of(&next_reply(&mut second.rx).await).reset, Some(ResetCode::Busy));
    assert_eq!(service.metrics().refused(ResetCode::Busy), 1);
    assert_eq!(service.live_streams(), 1);
}
