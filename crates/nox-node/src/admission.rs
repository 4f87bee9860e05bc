//! Admission at ingest (paper §4.9 (1) and (2); the report's adaptive PoW):
//! per-peer rate tiers and the proof of work each packet must carry.
//!
//! - **Rate tiers.** Every frame is charged to its link peer before any
//!   public-key work: topology nodes to the trusted tier (keyed by their
//!   `NodeId`), clients to the unknown tier (keyed by the address of their
//!   connection). `nox-admission`'s [`RateLimiter`] demotes persistent
//!   violators to the penalized tier; a client that keeps violating there is
//!   reported to the connection gate, which bans its address.
//! - **Difficulty.** Node packets must meet the difficulty the topology
//!   advertises (`node.pow_difficulty`). Client packets must meet the entry's
//!   current client difficulty, which [`AdaptivePow`] raises under load (with
//!   a grace period for packets already in flight) and lowers when the load
//!   drops; every change is announced to the connected clients.
//!
//! [`IngestAdmission`] is what the ingest task consults; [`AdaptivePow`] is
//! the pure updater, driven by injected `Instant`s; [`run_adaptive_pow`] is
//! its small periodic task.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicU8, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use nox_admission::{
    AdaptiveDifficulty, DifficultyChange, DifficultyConfig, DifficultyConfigError, DifficultyStep, RateLimitConfig,
    RateLimiter, RateOutcome,
};
use nox_link::transport::{ClientGreeting, ConnectionGate};
use nox_relay::DropReason;
use nox_sphinx::NodeId;
use tokio::sync::watch;

use crate::{AdmissionSection, NodeMetrics, Origin};

/// How often the entry re-evaluates the client difficulty.
pub const DIFFICULTY_UPDATE_PERIOD: Duration = Duration::from_millis(250);

/// An unusable `[admission]` setting.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdmissionError {
    /// A rate or burst that is not finite and positive.
    #[error("admission.{0} must be finite and positive")]
    Rate(&'static str),
    /// The adaptive difficulty schedule was refused.
    #[error("admission difficulty schedule: {0}")]
    Schedule(#[from] DifficultyConfigError),
}

impl AdmissionSection {
    /// Checks the rate settings.
    pub fn validate(&self) -> Result<(), AdmissionError> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        for (name, value) in [
            ("node_rate_pps", self.node_rate_pps),
            ("client_rate_pps", self.client_rate_pps),
            ("penalized_rate_pps", self.penalized_rate_pps),
            ("rate_burst_s", self.rate_burst_s),
            ("expected_client_rate", self.expected_client_rate),
        ] {
            if !positive(value) {
                return Err(AdmissionError::Rate(name));
            }
        }
        Ok(())
    }

    /// The token-bucket tiers: trusted = nodes, unknown = clients.
    pub fn rate_limits(&self) -> Result<RateLimitConfig, AdmissionError> {
        self.validate()?;
        let burst = Duration::try_from_secs_f64(self.rate_burst_s).map_err(|_| AdmissionError::Rate("rate_burst_s"))?;
        Ok(RateLimitConfig {
            trusted_pps: self.node_rate_pps,
            unknown_pps: self.client_rate_pps,
            penalized_pps: self.penalized_rate_pps,
            burst,
            ..RateLimitConfig::default()
        })
    }

    /// The adaptive schedule around `base` (the advertised difficulty): the
    /// report's steps, +4, +8 and +12 bits above 2×, 5× and 10× the expected
    /// client rate (12/16/20/24 when `base` is 12), with its windows.
    pub fn difficulty_schedule(&self, base: u8) -> DifficultyConfig {
        let mut config = DifficultyConfig::report_schedule(self.expected_client_rate);
        let step = |rate_multiple, bits: u8| DifficultyStep { rate_multiple, difficulty: base.saturating_add(bits) };
        config.base_difficulty = base;
        config.steps = vec![step(2.0, 4), step(5.0, 8), step(10.0, 12)];
        config.min_difficulty = base;
        config.max_difficulty = base.saturating_add(12);
        config
    }
}

/// The rate-limiter key of a topology node: its id's first 16 bytes as an
/// IPv6 address (the limiter keys IPv6 peers by their /64, so the first 8
/// bytes of the id tell nodes apart). Nodes have their own limiter, so these
/// keys never meet a client address.
fn node_key(id: &NodeId) -> IpAddr {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&id.0[..16]);
    IpAddr::V6(Ipv6Addr::from(bytes))
}

/// The bucket for a client frame that came without an address (in-memory
/// links in tests): all such frames share it.
const NO_ADDRESS: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

#[derive(Debug)]
struct RateTiers {
    nodes: RateLimiter,
    clients: RateLimiter,
}

/// What ingest consults for each frame: its peer's rate tier, then the
/// difficulty the packet must meet. Shared by the ingest task (one lock per
/// frame, uncontended) and the difficulty updater (atomics only).
pub struct IngestAdmission {
    node_difficulty: u8,
    /// The current client difficulty (announced to clients).
    client_required: AtomicU8,
    /// What client packets must meet now: lower than `client_required`
    /// during the grace period after a raise.
    client_accepted: AtomicU8,
    /// Client frames that passed their rate limit, since start.
    client_arrivals: AtomicU64,
    limits: Option<Mutex<RateTiers>>,
    offences: Option<Arc<dyn ConnectionGate>>,
}

impl std::fmt::Debug for IngestAdmission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IngestAdmission")
            .field("node_difficulty", &self.node_difficulty)
            .field("client_required", &self.client_required)
            .field("client_accepted", &self.client_accepted)
            .field("rate_limits", &self.limits.is_some())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl IngestAdmission {
    /// No rate limits; every packet must meet `difficulty` (until an
    /// [`AdaptivePow`] changes the client difficulty).
    pub fn fixed(difficulty: u8) -> Self {
        Self {
            node_difficulty: difficulty,
            client_required: AtomicU8::new(difficulty),
            client_accepted: AtomicU8::new(difficulty),
            client_arrivals: AtomicU64::new(0),
            limits: None,
            offences: None,
        }
    }

    /// Rate tiers from `section`; `nodes` (the topology) are trusted;
    /// `difficulty` is the advertised one, required of every packet until
    /// an [`AdaptivePow`] raises the client difficulty.
    pub fn new(
        section: &AdmissionSection,
        difficulty: u8,
        nodes: impl IntoIterator<Item = NodeId>,
    ) -> Result<Self, AdmissionError> {
        let limits = section.rate_limits()?;
        let mut tiers = RateTiers { nodes: RateLimiter::new(limits.clone()), clients: RateLimiter::new(limits) };
        for id in nodes {
            tiers.nodes.set_trusted(node_key(&id));
        }
        Ok(Self { limits: Some(Mutex::new(tiers)), ..Self::fixed(difficulty) })
    }

    /// Clients that keep exceeding the penalized rate are reported to
    /// `gate` as offenders (it bans their address for new connections).
    #[must_use]
    pub fn with_offences(mut self, gate: Arc<dyn ConnectionGate>) -> Self {
        self.offences = Some(gate);
        self
    }

    /// Charges one frame to its peer at `now`. `Ok(bits)`: the proof of
    /// work the packet must carry; `Err(RateLimited)`: drop it.
    pub fn check(&self, origin: &Origin, client_ip: Option<IpAddr>, now: Instant) -> Result<u8, DropReason> {
        if let Some(limits) = &self.limits {
            let mut tiers = lock(limits);
            let outcome = match origin {
                Origin::Node(id) => tiers.nodes.check(node_key(id), now),
                Origin::Client => tiers.clients.check(client_ip.unwrap_or(NO_ADDRESS), now),
            };
            drop(tiers);
            match outcome {
                RateOutcome::Admitted => {}
                RateOutcome::RefusedPersistentOffender => {
                    if let (Origin::Client, Some(ip), Some(gate)) = (origin, client_ip, &self.offences) {
                        gate.offence(ip);
                    }
                    return Err(DropReason::RateLimited);
                }
                RateOutcome::Refused | RateOutcome::RefusedAndDemoted(_) => return Err(DropReason::RateLimited),
            }
        }
        Ok(match origin {
            Origin::Node(_) => self.node_difficulty,
            Origin::Client => {
                self.client_arrivals.fetch_add(1, Ordering::Relaxed);
                self.client_accepted.load(Ordering::Relaxed)
            }
        })
    }

    /// The client difficulty currently announced.
    pub fn client_difficulty(&self) -> u8 {
        self.client_required.load(Ordering::Relaxed)
    }

    /// What client packets must meet now (below the announced difficulty
    /// only during a grace period).
    pub fn client_accepted(&self) -> u8 {
        self.client_accepted.load(Ordering::Relaxed)
    }

    /// The difficulty node packets must meet.
    pub fn node_difficulty(&self) -> u8 {
        self.node_difficulty
    }

    /// Client frames that passed their rate limit so far.
    pub fn client_arrivals(&self) -> u64 {
        self.client_arrivals.load(Ordering::Relaxed)
    }
}

/// The entry's client difficulty as a pure state machine: feeds the client
/// arrivals counted by [`IngestAdmission`] into `nox-admission`'s
/// [`AdaptiveDifficulty`] and publishes the result back.
#[derive(Debug)]
pub struct AdaptivePow {
    difficulty: AdaptiveDifficulty,
    counted: u64,
}

impl AdaptivePow {
    /// Starts at the schedule's base level at `now`.
    pub fn new(config: DifficultyConfig, now: Instant) -> Result<Self, AdmissionError> {
        Ok(Self { difficulty: AdaptiveDifficulty::new(config, now)?, counted: 0 })
    }

    /// Records the arrivals since the last tick, updates the level, and
    /// stores the announced and the accepted difficulty in `admission`.
    pub fn tick(&mut self, admission: &IngestAdmission, now: Instant) -> DifficultyChange {
        let total = admission.client_arrivals();
        self.difficulty.record_arrivals(now, total.saturating_sub(self.counted));
        self.counted = total;
        let change = self.difficulty.update(now);
        admission.client_required.store(self.difficulty.current(), Ordering::Relaxed);
        admission.client_accepted.store(self.difficulty.minimum_accepted(now), Ordering::Relaxed);
        change
    }

    /// Client arrivals per second over the raise window.
    pub fn arrival_rate(&mut self, now: Instant) -> f64 {
        self.difficulty.arrival_rate(now, Duration::from_secs(2))
    }
}

/// The greeting of a new client link: the current client difficulty.
pub fn difficulty_greeting(admission: Arc<IngestAdmission>, packet_len: usize) -> ClientGreeting {
    Arc::new(move || Some(nox_link::encode_difficulty(packet_len, admission.client_difficulty())))
}

/// Ticks `pow` every `period` until `shutdown`; on each change of the
/// announced difficulty calls `announce` with the new value (the entry
/// broadcasts a difficulty notice to its clients). Keeps the
/// `nox_pow_difficulty_bits` and `nox_pow_client_arrival_rate` gauges.
pub async fn run_adaptive_pow(
    mut pow: AdaptivePow,
    admission: Arc<IngestAdmission>,
    metrics: Arc<NodeMetrics>,
    period: Duration,
    announce: impl Fn(u8) + Send,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut ticker = tokio::time::interval(period.max(Duration::from_millis(1)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
        let now = Instant::now();
        let change = pow.tick(&admission, now);
        metrics.pow_difficulty.store(u64::from(admission.client_difficulty()), Ordering::Relaxed);
        metrics.pow_client_arrival_rate.store(pow.arrival_rate(now).round() as u64, Ordering::Relaxed);
        match change {
            DifficultyChange::Raised { from, to } => {
                tracing::info!(from, to, "client proof-of-work difficulty raised");
                announce(to);
            }
            DifficultyChange::Lowered { from, to } => {
                tracing::info!(from, to, "client proof-of-work difficulty lowered");
                announce(to);
            }
            DifficultyChange::Unchanged(_) => {}
        }
    }
}

/// At an entry node with `adaptive_pow`: starts [`run_adaptive_pow`] with
/// the schedule around `advertised`, broadcasting each change to the
/// clients of `listener`. `None` elsewhere (the difficulty stays fixed).
#[allow(clippy::too_many_arguments)]
pub(crate) fn spawn_entry_pow(
    entry: bool,
    section: &AdmissionSection,
    advertised: u8,
    admission: Arc<IngestAdmission>,
    listener: Arc<nox_link::transport::Listener>,
    metrics: Arc<NodeMetrics>,
    packet_len: usize,
    shutdown: watch::Receiver<bool>,
) -> Result<Option<tokio::task::JoinHandle<()>>, AdmissionError> {
    if !(entry && section.adaptive_pow) {
        return Ok(None);
    }
    let pow = AdaptivePow::new(section.difficulty_schedule(advertised), Instant::now())?;
    let announce = move |bits| {
        listener.broadcast_to_clients(&nox_link::encode_difficulty(packet_len, bits));
    };
    let task = run_adaptive_pow(pow, admission, metrics, DIFFICULTY_UPDATE_PERIOD, announce, shutdown);
    Ok(Some(tokio::spawn(task)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section() -> AdmissionSection {
        AdmissionSection {
            node_rate_pps: 1_000.0,
            client_rate_pps: 100.0,
            penalized_rate_pps: 10.0,
            expected_client_rate: 100.0,
            ..AdmissionSection::default()
        }
    }

    #[test]
    fn tiers_by_origin_with_injected_time() {
        let node = NodeId([7; 32]);
        let admission = IngestAdmission::new(&section(), 3, [node]).unwrap();
        let now = Instant::now();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let client = (0..300).filter(|_| admission.check(&Origin::Client, Some(ip), now).is_ok()).count();
        let nodes = (0..300).filter(|_| admission.check(&Origin::Node(node), None, now).is_ok()).count();
        assert_eq!(client, 100, "a client gets its tier's burst");
        assert_eq!(nodes, 300, "a node at the same rate is within its tier");
        // Another client address has its own bucket.
        assert_eq!(admission.check(&Origin::Client, Some("192.0.2.2".parse().unwrap()), now), Ok(3));
        assert_eq!(admission.check(&Origin::Node(node), None, now), Ok(3));
        // Demoted after 50 refusals: a second later it refills at the penalized rate only.
        let later = now + Duration::from_secs(1);
        let refilled = (0..300).filter(|_| admission.check(&Origin::Client, Some(ip), later).is_ok()).count();
        assert!(refilled <= 10, "penalized: {refilled}");
        assert_eq!(admission.client_arrivals(), 100 + 1 + refilled as u64);
    }

    #[test]
    fn persistent_offenders_are_reported_to_the_gate() {
        let gate = Arc::new(crate::AdmissionGate::new(&AdmissionSection::default(), []));
        let admission = IngestAdmission::new(&section(), 0, []).unwrap().with_offences(gate.clone());
        let ip: IpAddr = "198.51.100.9".parse().unwrap();
        assert!(gate.admit(ip));
        gate.closed(ip, nox_link::transport::GateStage::Accepted);
        let now = Instant::now();
        for _ in 0..2_000 {
            let _ = admission.check(&Origin::Client, Some(ip), now);
        }
        assert!(!gate.admit(ip), "a persistent offender is banned");
    }

    #[test]
    fn schedule_is_relative_to_the_advertised_difficulty() {
        let schedule = section().difficulty_schedule(12);
        let steps: Vec<u8> = schedule.steps.iter().map(|s| s.difficulty).collect();
        assert_eq!((schedule.base_difficulty, steps), (12, vec![16, 20, 24]));
        let top = section().difficulty_schedule(250);
        assert_eq!(top.max_difficulty, 255);
        let bad = AdmissionSection { client_rate_pps: f64::NAN, ..section() };
        assert_eq!(IngestAdmission::new(&bad, 0, []).err(), Some(AdmissionError::Rate("client_rate_pps")));
    }

    #[test]
    fn adaptive_pow_raises_with_grace_and_lowers() {
        let start = Instant::now();
        let admission = IngestAdmission::new(&AdmissionSection { client_rate_pps: 1e9, ..section() }, 2, []).unwrap();
        let mut pow = AdaptivePow::new(section().difficulty_schedule(2), start).unwrap();
        // 15× the expected 100 pps for two seconds, fed in 250 ms ticks.
        let mut now = start;
        for _ in 0..8 {
            for _ in 0..375 {
                admission.check(&Origin::Client, None, now).unwrap();
            }
            now += Duration::from_millis(250);
            pow.tick(&admission, now);
        }
        assert_eq!(admission.client_difficulty(), 14);
        assert_eq!(
            admission.check(&Origin::Node(NodeId([1; 32])), None, now),
            Ok(2),
            "nodes keep the advertised value"
        );
        now += Duration::from_secs(3);
        pow.tick(&admission, now);
        assert_eq!(admission.client_accepted(), 14, "grace is over");
        // Quiet: one step down per 30 s hold.
        for _ in 0..4 * 100 {
            now += Duration::from_millis(250);
            pow.tick(&admission, now);
        }
        assert_eq!((admission.client_difficulty(), admission.client_accepted()), (2, 2));
    }
}
