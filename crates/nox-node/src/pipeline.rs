//! The relay pipeline (paper §4.8): ingest → Sphinx workers → mixer → egress,
//! connected by typed bounded channels. Each packet has exactly one owner at
//! a time (moved, never copied to several consumers). When a stage's queue
//! is full the packet is dropped deliberately and counted; no stage blocks
//! another and memory stays bounded.
//!
//! - **ingest** (tokio task): the peer's rate tier and the difficulty its
//!   packets must meet ([`IngestAdmission`]), layer check, then
//!   [`Relay::admit`] — length, geometry, epoch, early replay check, proof of
//!   work. No public-key work.
//! - **workers** (`workers` OS threads, off the async reactor): public-key
//!   work and header MAC ([`Relay::verify`]); as soon as the MAC verified,
//!   [`Relay::record`] of the replay tag and its journal record; only then
//!   routing block and body ([`nox_relay::Recorded::finish`]). A packet
//!   dropped there keeps its tag recorded and journalled (sphinx.md §5.4).
//! - **mixer** (an OS thread, for sub-millisecond timing): `nox-mixing`'s
//!   scheduler; the time since the link layer read the frame
//!   ([`Inbound::received_at`], stamped at the read) counts toward the delay
//!   (seed 003). **Durability gate**: a packet whose delay is over
//!   leaves only once its replay tag is durable ([`TagJournal`], group
//!   commit); until then it waits, and if the journal fails it is dropped.
//! - **egress**: a channel the caller drains (links, exit services, clients).

use std::{
    net::IpAddr,
    ops::Range,
    sync::{
        Arc, Mutex, RwLock, Weak,
        atomic::{AtomicBool, Ordering},
        mpsc as std_mpsc,
    },
    thread::JoinHandle,
    time::Instant,
};

use nox_mixing::{MixingConfig, MixingScheduler};
use nox_relay::{Admitted, DropReason, Relay, RelayOutput};
use nox_sphinx::{NodeId, SurbId};
use rand_core::SeedableRng;
use tokio::sync::mpsc;

use crate::{IngestAdmission, NodeMetrics, TagJournal};

/// Who handed us a frame, as authenticated by the link layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// An anonymous client (client-to-entry link).
    Client,
    /// A node of the topology.
    Node(NodeId),
}

/// A frame from a link: exactly one packet.
#[derive(Debug)]
pub struct Inbound {
    /// The authenticated sender.
    pub origin: Origin,
    /// When the link layer's read returned it (not when it was dequeued):
    /// the mixing delay counts from here.
    pub received_at: Instant,
    /// The packet bytes.
    pub packet: Vec<u8>,
    /// Client links: the connection's remote address, the key of the
    /// client's rate limit (`None`: an in-memory link; such clients share
    /// one bucket). Never logged.
    pub client_ip: Option<IpAddr>,
}

/// What the pipeline hands to the outside after mixing.
#[derive(Debug)]
pub enum Egress {
    /// Send `packet` to node `to`.
    Forward {
        /// Next hop.
        to: NodeId,
        /// The processed packet.
        packet: Vec<u8>,
        /// When the packet arrived from the link.
        received_at: Instant,
    },
    /// Exit: `packet[payload]` is a request for the exit services.
    Deliver {
        /// The buffer.
        packet: Vec<u8>,
        /// The payload's range in it.
        payload: Range<usize>,
        /// When the packet arrived from the link.
        received_at: Instant,
    },
    /// End of a SURB path: `packet[body]` goes to client `recipient`.
    Reply {
        /// The client.
        recipient: NodeId,
        /// The SURB the reply answers.
        surb_id: SurbId,
        /// The buffer.
        packet: Vec<u8>,
        /// The body's range in it.
        body: Range<usize>,
    },
}

/// Queue sizes and worker count.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    /// Sphinx worker threads (default: the number of cores).
    pub workers: usize,
    /// Frames waiting for ingest.
    pub inbound_queue: usize,
    /// Admitted packets waiting for a worker.
    pub worker_queue: usize,
    /// Processed packets waiting for the mixer.
    pub mixer_queue: usize,
    /// Released packets waiting for egress.
    pub egress_queue: usize,
    /// The mixing scheduler (mean delay, capacity, over-delay policy).
    pub mixing: MixingConfig,
}

/// A checked packet travelling from ingest to a worker.
struct Job {
    admitted: Admitted,
    inbound: Inbound,
}

/// A processed packet travelling from a worker to the mixer.
struct Mixable {
    output: RelayOutput,
    packet: Vec<u8>,
    received_at: Instant,
    /// Journal sequence number of its replay tag (0: no journal).
    seq: u64,
}

/// What reaches the mixer thread.
enum MixerInput {
    /// A processed packet.
    Packet(Mixable),
    /// The durable watermark moved (or the journal failed): re-check the
    /// packets waiting for it.
    Durable,
}

/// The running pipeline's ends and threads.
pub struct PipelineHandles {
    /// Feed frames here (`try_send`: a full queue is the link's drop to count).
    pub inbound: mpsc::Sender<Inbound>,
    /// Drain released packets here.
    pub egress: mpsc::Receiver<Egress>,
    /// Resolves when every stage has finished (after `inbound` is dropped and
    /// the mixer has released what it held).
    pub finished: tokio::task::JoinHandle<()>,
}

/// Starts the pipeline stages.
pub struct Pipeline;

impl Pipeline {
    /// Spawns the stages on the current tokio runtime and `config.workers`
    /// OS threads. `origin_allowed` enforces the layer rule; `admission`
    /// charges each frame to its peer's rate tier and gives the proof of work
    /// it must carry (client difficulty updated by [`crate::AdaptivePow`]).
    /// With a `journal`, every packet waits until its replay tag is durable
    /// before it reaches egress; without one (benchmarks, tests) tags live in
    /// memory only.
    pub fn spawn(
        relay: Arc<RwLock<Relay>>,
        journal: Option<Arc<TagJournal>>,
        origin_allowed: Arc<dyn Fn(&Origin) -> bool + Send + Sync>,
        admission: Arc<IngestAdmission>,
        config: PipelineConfig,
        metrics: Arc<NodeMetrics>,
    ) -> std::io::Result<PipelineHandles> {
        let (inbound_tx, inbound_rx) = mpsc::channel::<Inbound>(config.inbound_queue.max(1));
        let (job_tx, job_rx) = std_mpsc::sync_channel::<Job>(config.worker_queue.max(1));
        let (mix_tx, mix_rx) = std_mpsc::sync_channel::<MixerInput>(config.mixer_queue.max(1));
        // The workers own the sender; the journal's waker only borrows it, so
        // the mixer still sees the channel close when the workers are done.
        let mix_tx = Arc::new(mix_tx);
        let mixer_waiting = Arc::new(AtomicBool::new(false));
        if let Some(journal) = &journal {
            let (sender, waiting) = (Arc::downgrade(&mix_tx), mixer_waiting.clone());
            journal.set_waker(move || wake_mixer(&sender, &waiting));
        }
        let (egress_tx, egress_rx) = mpsc::channel::<Egress>(config.egress_queue.max(1));

        let ingest =
            tokio::spawn(ingest(inbound_rx, job_tx, relay.clone(), origin_allowed, admission, metrics.clone()));
        let job_rx = Arc::new(Mutex::new(job_rx));
        let workers = (0..config.workers.max(1))
            .map(|index| {
                let (job_rx, mix_tx, relay, metrics) = (job_rx.clone(), mix_tx.clone(), relay.clone(), metrics.clone());
                let journal = journal.clone();
                std::thread::Builder::new()
                    .name(format!("nox-worker-{index}"))
                    .spawn(move || worker(&job_rx, &mix_tx, &relay, journal.as_deref(), &metrics))
            })
            .collect::<std::io::Result<Vec<JoinHandle<()>>>>()?;
        drop(mix_tx);
        let mixing = config.mixing;
        let gate = DurabilityGate { journal, waiting: mixer_waiting, held: Vec::new() };
        let mixer = std::thread::Builder::new()
            .name("nox-mixer".into())
            .spawn(move || mixer(&mix_rx, &egress_tx, mixing, gate, &metrics))?;
        let finished = tokio::spawn(async move {
            let _ = ingest.await;
            let _ = tokio::task::spawn_blocking(move || {
                for worker in workers {
                    let _ = worker.join();
                }
                let _ = mixer.join();
            })
            .await;
        });
        Ok(PipelineHandles { inbound: inbound_tx, egress: egress_rx, finished })
    }
}

async fn ingest(
    mut inbound: mpsc::Receiver<Inbound>,
    jobs: std_mpsc::SyncSender<Job>,
    relay: Arc<RwLock<Relay>>,
    origin_allowed: Arc<dyn Fn(&Origin) -> bool + Send + Sync>,
    admission: Arc<IngestAdmission>,
    metrics: Arc<NodeMetrics>,
) {
    while let Some(frame) = inbound.recv().await {
        metrics.received.fetch_add(1, Ordering::Relaxed);
        // Charged to the peer first: a flooder's frames cost a token check.
        let required = match admission.check(&frame.origin, frame.client_ip, Instant::now()) {
            Ok(required) => required,
            Err(reason) => {
                metrics.count_drop(reason);
                continue;
            }
        };
        if !origin_allowed(&frame.origin) {
            metrics.wrong_layer.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let admitted = match relay.read() {
            Ok(relay) => relay.admit(&frame.packet, required),
            Err(_) => return, // a worker panicked while holding the lock: stop
        };
        match admitted {
            Ok(admitted) => {
                metrics.admitted.fetch_add(1, Ordering::Relaxed);
                // Count the job before it is queued: a worker may take it (and
                // decrement) before `try_send` returns, which with an increment
                // after the send wrapped the unsigned gauge below zero.
                metrics.worker_queue_depth.fetch_add(1, Ordering::Relaxed);
                match jobs.try_send(Job { admitted, inbound: frame }) {
                    Ok(()) => {}
                    Err(std_mpsc::TrySendError::Full(_)) => {
                        metrics.worker_queue_depth.fetch_sub(1, Ordering::Relaxed);
                        metrics.count_drop(DropReason::QueueFull);
                    }
                    Err(std_mpsc::TrySendError::Disconnected(_)) => {
                        metrics.worker_queue_depth.fetch_sub(1, Ordering::Relaxed);
                        return;
                    }
                }
            }
            Err(reason) => metrics.count_drop(reason),
        }
    }
}

fn worker(
    jobs: &Mutex<std_mpsc::Receiver<Job>>,
    mixer: &std_mpsc::SyncSender<MixerInput>,
    relay: &RwLock<Relay>,
    journal: Option<&TagJournal>,
    metrics: &NodeMetrics,
) {
    loop {
        let job = match jobs.lock() {
            Ok(receiver) => match receiver.recv() {
                Ok(job) => job,
                Err(_) => return, // ingest finished
            },
            Err(_) => return,
        };
        metrics.worker_queue_depth.fetch_sub(1, Ordering::Relaxed);
        let Job { admitted, inbound } = job;
        let mut packet = inbound.packet;
        match work(relay, journal, &admitted, &mut packet) {
            Ok((output, seq)) => {
                metrics.processed.fetch_add(1, Ordering::Relaxed);
                let item = Mixable { output, packet, received_at: inbound.received_at, seq };
                if let Err(error) = mixer.try_send(MixerInput::Packet(item)) {
                    match error {
                        std_mpsc::TrySendError::Full(_) => metrics.count_drop(DropReason::QueueFull),
                        std_mpsc::TrySendError::Disconnected(_) => return,
                    }
                }
            }
            Err(reason) => metrics.count_drop(reason),
        }
    }
}

/// One packet's worker stage: public-key work and MAC ([`Relay::verify`]),
/// then — for every packet whose MAC verified, before its routing block or
/// body is read — the tag recorded in the replay cache ([`Relay::record`])
/// and queued for the journal, then the rest of Sphinx processing
/// ([`nox_relay::Recorded::finish`]). A packet dropped by `finish` keeps its
/// tag recorded and journalled: a copy of it is refused at ingest, before any
/// public-key work, also after a restart. The packet and its journal
/// sequence number go to the mixer, which holds it until that is durable.
fn work(
    relay: &RwLock<Relay>,
    journal: Option<&TagJournal>,
    admitted: &Admitted,
    packet: &mut [u8],
) -> Result<(RelayOutput, u64), DropReason> {
    let verified = relay.read().map_err(|_| DropReason::Malformed)?.verify(admitted, packet)?;
    let recorded = relay.write().map_err(|_| DropReason::Malformed)?.record(verified)?;
    // Queue the tag for the next group commit before finishing, so a drop
    // below still leaves it journalled.
    let seq = match journal {
        Some(journal) => journal.record(admitted.epoch, &admitted.tag.0).map_err(|_| DropReason::JournalError)?,
        None => 0,
    };
    Ok((recorded.finish()?, seq))
}

/// Wakes the mixer after a sync if it holds packets waiting for one. A full
/// channel needs no wake-up: the mixer is busy receiving and re-checks after
/// every message.
fn wake_mixer(sender: &Weak<std_mpsc::SyncSender<MixerInput>>, waiting: &AtomicBool) {
    if waiting.load(Ordering::SeqCst)
        && let Some(sender) = sender.upgrade()
    {
        let _ = sender.try_send(MixerInput::Durable);
    }
}

/// The egress gate: packets whose mixing delay is over but whose replay tag
/// is not yet durable.
struct DurabilityGate {
    journal: Option<Arc<TagJournal>>,
    /// Set while `held` is not empty, so the sync thread wakes the mixer.
    waiting: Arc<AtomicBool>,
    /// Waiting packets and when their delay ended.
    held: Vec<(Mixable, Instant)>,
}

impl DurabilityGate {
    /// Whether `item` may leave now; if not, the gate keeps it.
    fn admit(&mut self, item: Mixable, now: Instant) -> Option<Mixable> {
        match &self.journal {
            Some(journal) if !journal.is_durable(item.seq) => {
                self.held.push((item, now));
                self.waiting.store(true, Ordering::SeqCst);
                None
            }
            _ => Some(item),
        }
    }

    /// Hands every held packet that is now durable to `release` (in the
    /// order their delays ended); drops them all if the journal failed.
    fn release(&mut self, now: Instant, metrics: &NodeMetrics, mut release: impl FnMut(Mixable)) {
        let Some(journal) = &self.journal else { return };
        if self.held.is_empty() {
            return;
        }
        if journal.has_failed() {
            for _ in self.held.drain(..) {
                metrics.count_drop(DropReason::JournalError);
            }
            self.waiting.store(false, Ordering::SeqCst);
            return;
        }
        let durable = journal.durable_seq();
        let mut index = 0;
        while index < self.held.len() {
            if self.held[index].0.seq <= durable {
                let (item, since) = self.held.remove(index);
                let waited = u64::try_from(now.saturating_duration_since(since).as_micros()).unwrap_or(u64::MAX);
                metrics.replay_gate_waits.fetch_add(1, Ordering::Relaxed);
                metrics.replay_gate_wait_micros.fetch_add(waited, Ordering::Relaxed);
                release(item);
            } else {
                index += 1;
            }
        }
        self.waiting.store(!self.held.is_empty(), Ordering::SeqCst);
        // A sync may have completed between reading `durable` and clearing
        // the flag; the next loop iteration re-checks, bounded by POLL.
    }

    fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Drops what is still held (shutdown with a journal that can no longer sync).
    fn abandon(&mut self, metrics: &NodeMetrics) {
        for _ in self.held.drain(..) {
            metrics.count_drop(DropReason::JournalError);
        }
    }
}

/// How often the mixer re-checks the durable watermark while it holds
/// waiting packets, in case a wake-up raced with it.
const POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// The mixer runs on its own OS thread: `recv_timeout` wakes it within tens
/// of microseconds of a deadline, where the async runtime's timer wheel has a
/// 1 ms granularity — a whole mean delay at μ = 1 ms.
fn mixer(
    input: &std_mpsc::Receiver<MixerInput>,
    egress: &mpsc::Sender<Egress>,
    config: MixingConfig,
    mut gate: DurabilityGate,
    metrics: &NodeMetrics,
) {
    let mut scheduler: MixingScheduler<Mixable> = MixingScheduler::new(config);
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
    let mut open = true;
    let emit = |item: Mixable| {
        metrics.released.fetch_add(1, Ordering::Relaxed);
        if egress.try_send(egress_of(item)).is_err() {
            metrics.count_drop(DropReason::QueueFull);
        }
    };
    while open || !scheduler.is_empty() || !gate.is_empty() {
        let poll = (!gate.is_empty()).then(|| Instant::now() + POLL);
        let wake_at = match (scheduler.next_deadline(), poll) {
            (Some(deadline), Some(poll)) => Some(deadline.min(poll)),
            (deadline, poll) => deadline.or(poll),
        };
        let received = match (open, wake_at) {
            (true, Some(at)) => input.recv_timeout(at.saturating_duration_since(Instant::now())),
            (true, None) => input.recv().map_err(|_| std_mpsc::RecvTimeoutError::Disconnected),
            (false, Some(at)) => {
                std::thread::sleep(at.saturating_duration_since(Instant::now()));
                Err(std_mpsc::RecvTimeoutError::Timeout)
            }
            (false, None) => break,
        };
        match received {
            Ok(MixerInput::Packet(item)) => {
                let delay = match &item.output {
                    RelayOutput::Forward { delay, .. }
                    | RelayOutput::Deliver { delay, .. }
                    | RelayOutput::Reply { delay, .. } => *delay,
                };
                let received_at = item.received_at;
                if let Err(refused) = scheduler.insert(item, delay, received_at, Instant::now(), &mut rng) {
                    metrics.count_drop(match refused.reason {
                        nox_mixing::RefusalReason::Full => DropReason::QueueFull,
                        nox_mixing::RefusalReason::DelayTooLong => DropReason::DelayTooLong,
                    });
                }
            }
            Ok(MixerInput::Durable) | Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            Err(std_mpsc::RecvTimeoutError::Disconnected) => open = false,
        }
        let now = Instant::now();
        let mut released = false;
        gate.release(now, metrics, |item| {
            released = true;
            emit(item);
        });
        while let Some(item) = scheduler.pop_expired(now) {
            released = true;
            // The egress gate: not before the tag is durable.
            if let Some(item) = gate.admit(item, now) {
                emit(item);
            }
        }
        if released && let Ok(mut snapshot) = metrics.mixing.lock() {
            *snapshot = Some(scheduler.metrics());
        }
        metrics.mixer_held.store((scheduler.len() + gate.held.len()) as u64, Ordering::Relaxed);
    }
    gate.abandon(metrics);
}

fn egress_of(item: Mixable) -> Egress {
    match item.output {
        RelayOutput::Forward { next_hop, .. } => {
            Egress::Forward { to: next_hop, packet: item.packet, received_at: item.received_at }
        }
        RelayOutput::Deliver { payload, .. } => {
            Egress::Deliver { packet: item.packet, payload, received_at: item.received_at }
        }
        RelayOutput::Reply { recipient, surb_id, body, .. } => {
            Egress::Reply { recipient, surb_id, packet: item.packet, body }
        }
    }
}
