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
//! - **workers** (`workers` OS threads, off the async reactor): Sphinx
//!   processing ([`Relay::process`]), then [`Relay::record`] of the replay tag.
//! - **mixer** (an OS thread, for sub-millisecond timing): `nox-mixing`'s
//!   scheduler; the time since the link layer read the frame
//!   ([`Inbound::received_at`], stamped at the read) counts toward the delay
//!   (seed 003).
//! - **egress**: a channel the caller drains (links, exit services, clients).

use std::{
    net::IpAddr,
    ops::Range,
    sync::{Arc, Mutex, RwLock, atomic::Ordering, mpsc as std_mpsc},
    thread::JoinHandle,
    time::Instant,
};

use nox_mixing::{MixingConfig, MixingScheduler};
use nox_relay::{Admitted, DropReason, Relay, RelayOutput};
use nox_sphinx::{NodeId, SurbId};
use rand_core::SeedableRng;
use tokio::sync::mpsc;

use crate::{IngestAdmission, NodeMetrics, ReplayStore};

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
    pub fn spawn(
        relay: Arc<RwLock<Relay>>,
        journal: Option<Arc<ReplayStore>>,
        origin_allowed: Arc<dyn Fn(&Origin) -> bool + Send + Sync>,
        admission: Arc<IngestAdmission>,
        config: PipelineConfig,
        metrics: Arc<NodeMetrics>,
    ) -> std::io::Result<PipelineHandles> {
        let (inbound_tx, inbound_rx) = mpsc::channel::<Inbound>(config.inbound_queue.max(1));
        let (job_tx, job_rx) = std_mpsc::sync_channel::<Job>(config.worker_queue.max(1));
        let (mix_tx, mix_rx) = std_mpsc::sync_channel::<Mixable>(config.mixer_queue.max(1));
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
        let mixer = std::thread::Builder::new()
            .name("nox-mixer".into())
            .spawn(move || mixer(&mix_rx, &egress_tx, mixing, &metrics))?;
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
                match jobs.try_send(Job { admitted, inbound: frame }) {
                    Ok(()) => {
                        metrics.worker_queue_depth.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(std_mpsc::TrySendError::Full(_)) => metrics.count_drop(DropReason::QueueFull),
                    Err(std_mpsc::TrySendError::Disconnected(_)) => return,
                }
            }
            Err(reason) => metrics.count_drop(reason),
        }
    }
}

fn worker(
    jobs: &Mutex<std_mpsc::Receiver<Job>>,
    mixer: &std_mpsc::SyncSender<Mixable>,
    relay: &RwLock<Relay>,
    journal: Option<&ReplayStore>,
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
        let processed = relay.read().map_err(|_| DropReason::Malformed).and_then(|r| r.process(&admitted, &mut packet));
        let recorded = processed.and_then(|output| {
            let mut relay = relay.write().map_err(|_| DropReason::Malformed)?;
            relay.record(&admitted)?;
            drop(relay);
            // The tag must be on record before the packet can leave.
            if let Some(journal) = journal {
                journal.append(admitted.epoch, &admitted.tag.0).map_err(|_| DropReason::JournalError)?;
            }
            Ok(output)
        });
        match recorded {
            Ok(output) => {
                metrics.processed.fetch_add(1, Ordering::Relaxed);
                let item = Mixable { output, packet, received_at: inbound.received_at };
                if let Err(error) = mixer.try_send(item) {
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

/// The mixer runs on its own OS thread: `recv_timeout` wakes it within tens
/// of microseconds of a deadline, where the async runtime's timer wheel has a
/// 1 ms granularity — a whole mean delay at μ = 1 ms.
fn mixer(
    input: &std_mpsc::Receiver<Mixable>,
    egress: &mpsc::Sender<Egress>,
    config: MixingConfig,
    metrics: &NodeMetrics,
) {
    let mut scheduler: MixingScheduler<Mixable> = MixingScheduler::new(config);
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
    let mut open = true;
    while open || !scheduler.is_empty() {
        let received = match (open, scheduler.next_deadline()) {
            (true, Some(deadline)) => input.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            (true, None) => input.recv().map_err(|_| std_mpsc::RecvTimeoutError::Disconnected),
            (false, Some(deadline)) => {
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                Err(std_mpsc::RecvTimeoutError::Timeout)
            }
            (false, None) => break,
        };
        match received {
            Ok(item) => {
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
            Err(std_mpsc::RecvTimeoutError::Disconnected) => open = false,
            Err(std_mpsc::RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        let mut released = false;
        while let Some(item) = scheduler.pop_expired(now) {
            released = true;
            metrics.released.fetch_add(1, Ordering::Relaxed);
            if egress.try_send(egress_of(item)).is_err() {
                metrics.count_drop(DropReason::QueueFull);
            }
        }
        if released && let Ok(mut snapshot) = metrics.mixing.lock() {
            *snapshot = Some(scheduler.metrics());
        }
        metrics.mixer_held.store(scheduler.len() as u64, Ordering::Relaxed);
    }
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
