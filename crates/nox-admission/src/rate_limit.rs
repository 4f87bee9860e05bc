//! Tiered per-peer token buckets (paper §4.9): trusted 200 pps, unknown 100 pps, penalized
//! 25 pps; demotion on repeated violations, re-promotion after a quiet period.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::bounded::BoundedLru;
use crate::peer::PeerKey;

/// A peer's rate tier. Ordered: `Penalized < Unknown < Trusted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Demoted after violations.
    Penalized,
    /// The default for a peer not in the trusted set.
    Unknown,
    /// Peers the node was told to trust (e.g. mix nodes of the topology).
    Trusted,
}

impl Tier {
    fn demoted(self) -> Tier {
        match self {
            Tier::Trusted => Tier::Unknown,
            Tier::Unknown | Tier::Penalized => Tier::Penalized,
        }
    }

    fn promoted(self) -> Tier {
        match self {
            Tier::Penalized => Tier::Unknown,
            Tier::Unknown | Tier::Trusted => Tier::Trusted,
        }
    }
}

/// Configuration of a [`RateLimiter`].
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitConfig {
    /// Sustained packets per second of a trusted peer.
    pub trusted_pps: f64,
    /// Sustained packets per second of an unknown peer.
    pub unknown_pps: f64,
    /// Sustained packets per second of a penalized peer.
    pub penalized_pps: f64,
    /// Bucket depth in time: a peer may burst `rate × burst` packets.
    pub burst: Duration,
    /// Refused packets within `violation_window` that demote a peer one tier (or, at the
    /// lowest tier, mark it a persistent offender).
    pub violations_to_demote: u32,
    /// Window over which violations are counted.
    pub violation_window: Duration,
    /// Time without any violation after which a demoted peer regains one tier.
    pub promote_after: Duration,
    /// Peers tracked at once; beyond it the least recently seen peer's state is forgotten.
    pub max_peers: usize,
    /// Size limit of the trusted set.
    pub max_trusted: usize,
}

impl Default for RateLimitConfig {
    /// The paper's tiers; bursts of one second; 50 refused packets in 10 s demote; one minute
    /// of good behaviour re-promotes; 65,536 peers tracked (≈ 6 MB).
    fn default() -> Self {
        Self {
            trusted_pps: 200.0,
            unknown_pps: 100.0,
            penalized_pps: 25.0,
            burst: Duration::from_secs(1),
            violations_to_demote: 50,
            violation_window: Duration::from_secs(10),
            promote_after: Duration::from_secs(60),
            max_peers: 65_536,
            max_trusted: 4_096,
        }
    }
}

impl RateLimitConfig {
    fn rate(&self, tier: Tier) -> f64 {
        match tier {
            Tier::Trusted => self.trusted_pps,
            Tier::Unknown => self.unknown_pps,
            Tier::Penalized => self.penalized_pps,
        }
        .max(0.0)
    }

    fn depth(&self, tier: Tier) -> f64 {
        (self.rate(tier) * self.burst.as_secs_f64()).max(1.0)
    }
}

/// What [`RateLimiter::check`] decided for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateOutcome {
    /// Within the peer's rate.
    Admitted,
    /// Over the rate: drop the packet.
    Refused,
    /// Over the rate, and enough violations to demote the peer to the given tier.
    RefusedAndDemoted(Tier),
    /// Over the rate while already penalized, `violations_to_demote` times again: the caller
    /// should record an offence in the ban list.
    RefusedPersistentOffender,
}

#[derive(Debug, Clone)]
struct PeerState {
    tier: Tier,
    tokens: f64,
    refilled_at: Instant,
    violations: u32,
    window_start: Instant,
    /// Last violation or tier change: promotion counts from here.
    calm_since: Instant,
}

/// Per-peer token buckets in tiers, bounded to `max_peers` tracked peers.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    config: RateLimitConfig,
    trusted: BTreeSet<PeerKey>,
    peers: BoundedLru<PeerKey, PeerState>,
}

impl RateLimiter {
    /// An empty limiter.
    pub fn new(config: RateLimitConfig) -> Self {
        let peers = BoundedLru::new(config.max_peers);
        Self { config, trusted: BTreeSet::new(), peers }
    }

    /// Marks `ip` as trusted (its base tier). Returns false if the trusted set is full.
    pub fn set_trusted(&mut self, ip: IpAddr) -> bool {
        let key = PeerKey::of(ip);
        if !self.trusted.contains(&key) && self.trusted.len() >= self.config.max_trusted {
            return false;
        }
        self.trusted.insert(key);
        true
    }

    /// Removes `ip` from the trusted set; its tier drops to at most `Unknown`.
    pub fn remove_trusted(&mut self, ip: IpAddr) {
        self.trusted.remove(&PeerKey::of(ip));
    }

    fn base_tier(&self, key: &PeerKey) -> Tier {
        if self.trusted.contains(key) { Tier::Trusted } else { Tier::Unknown }
    }

    /// The tier `ip` would be treated in now (without touching its state).
    pub fn tier(&self, ip: IpAddr) -> Tier {
        let key = PeerKey::of(ip);
        let base = self.base_tier(&key);
        self.peers.peek(&key).map_or(base, |state| state.tier.min(base))
    }

    /// Number of peers with tracked state (never above `max_peers`).
    pub fn tracked_peers(&self) -> usize {
        self.peers.len()
    }

    /// Accounts one packet from `ip` at `now`.
    pub fn check(&mut self, ip: IpAddr, now: Instant) -> RateOutcome {
        let key = PeerKey::of(ip);
        let base = self.base_tier(&key);
        let config = &self.config;
        let (state, _evicted) = self.peers.get_or_insert_with(key, || PeerState {
            tier: base,
            tokens: config.depth(base),
            refilled_at: now,
            violations: 0,
            window_start: now,
            calm_since: now,
        });
        state.tier = state.tier.min(base);
        if state.tier < base && now.saturating_duration_since(state.calm_since) >= config.promote_after {
            state.tier = state.tier.promoted();
            state.calm_since = now;
        }
        let elapsed = now.saturating_duration_since(state.refilled_at).as_secs_f64();
        state.tokens = (state.tokens + elapsed * config.rate(state.tier)).min(config.depth(state.tier));
        state.refilled_at = state.refilled_at.max(now);
        if state.tokens >= 1.0 {
            state.tokens -= 1.0;
            return RateOutcome::Admitted;
        }
        if now.saturating_duration_since(state.window_start) > config.violation_window {
            state.window_start = now;
            state.violations = 0;
        }
        state.violations += 1;
        state.calm_since = now;
        if state.violations < config.violations_to_demote.max(1) {
            return RateOutcome::Refused;
        }
        state.violations = 0;
        state.window_start = now;
        if state.tier == Tier::Penalized {
            return RateOutcome::RefusedPersistentOffender;
        }
        state.tier = state.tier.demoted();
        state.tokens = state.tokens.min(config.depth(state.tier));
        RateOutcome::RefusedAndDemoted(state.tier)
    }
}
