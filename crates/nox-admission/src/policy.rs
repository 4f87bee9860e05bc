//! The four admission rules wired together in the order the ingest stage applies them.

use std::net::IpAddr;
use std::time::Instant;

use crate::bans::{BanConfig, BanList, BanRecord};
use crate::connections::{ConnectionLimits, ConnectionRefused, ConnectionTracker};
use crate::difficulty::{AdaptiveDifficulty, DifficultyChange, DifficultyConfig, DifficultyConfigError};
use crate::rate_limit::{RateLimitConfig, RateLimiter, RateOutcome};

/// Configuration of an [`AdmissionPolicy`].
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionConfig {
    /// Adaptive PoW.
    pub difficulty: DifficultyConfig,
    /// Per-peer rate tiers.
    pub rate_limits: RateLimitConfig,
    /// Connection limits.
    pub connections: ConnectionLimits,
    /// Graduated bans.
    pub bans: BanConfig,
}

impl AdmissionConfig {
    /// Paper and report defaults for a node expecting `expected_rate_pps`.
    pub fn defaults(expected_rate_pps: f64) -> Self {
        Self {
            difficulty: DifficultyConfig::report_schedule(expected_rate_pps),
            rate_limits: RateLimitConfig::default(),
            connections: ConnectionLimits::default(),
            bans: BanConfig::default(),
        }
    }
}

/// The verdict for one received packet, before any cryptography.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketVerdict {
    /// Go on: check PoW at [`AdmissionPolicy::required_difficulty`], then the replay cache.
    Admit,
    /// The peer is banned: drop.
    Banned,
    /// Over the peer's rate: drop.
    RateLimited,
    /// Over the rate as a persistent offender: dropped, and the peer is now banned.
    RateLimitedAndBanned(BanRecord),
}

/// Bans, connection limits, rate tiers and adaptive PoW, with the ordering decided once.
#[derive(Debug, Clone)]
pub struct AdmissionPolicy {
    difficulty: AdaptiveDifficulty,
    rate_limiter: RateLimiter,
    connections: ConnectionTracker,
    bans: BanList,
}

impl AdmissionPolicy {
    /// A policy starting at `now`.
    pub fn new(config: AdmissionConfig, now: Instant) -> Result<Self, DifficultyConfigError> {
        Ok(Self {
            difficulty: AdaptiveDifficulty::new(config.difficulty, now)?,
            rate_limiter: RateLimiter::new(config.rate_limits),
            connections: ConnectionTracker::new(config.connections),
            bans: BanList::new(config.bans),
        })
    }

    /// A new connection from `ip`: refused if banned or over a connection limit.
    pub fn on_connect(&mut self, ip: IpAddr, now: Instant) -> Result<(), ConnectionRefused> {
        if self.bans.is_banned(ip, now) {
            return Err(ConnectionRefused::Banned);
        }
        self.connections.try_open(ip)
    }

    /// A connection from `ip` closed.
    pub fn on_disconnect(&mut self, ip: IpAddr) {
        self.connections.close(ip);
    }

    /// A packet from `ip`: ban check, then the peer's rate. Only admitted packets count toward
    /// the PoW load estimate, so one peer's flood (already rate limited) does not raise every
    /// client's difficulty; a distributed flood within per-peer rates does.
    pub fn on_packet(&mut self, ip: IpAddr, now: Instant) -> PacketVerdict {
        if self.bans.is_banned(ip, now) {
            return PacketVerdict::Banned;
        }
        match self.rate_limiter.check(ip, now) {
            RateOutcome::Admitted => {
                self.difficulty.record_arrivals(now, 1);
                PacketVerdict::Admit
            }
            RateOutcome::Refused | RateOutcome::RefusedAndDemoted(_) => PacketVerdict::RateLimited,
            RateOutcome::RefusedPersistentOffender => {
                PacketVerdict::RateLimitedAndBanned(self.bans.record_offence(ip, now))
            }
        }
    }

    /// Other misbehaviour by `ip` (malformed frames, failed authentication): bans it.
    pub fn on_offence(&mut self, ip: IpAddr, now: Instant) -> BanRecord {
        self.bans.record_offence(ip, now)
    }

    /// Re-evaluates the PoW difficulty (call about once per bucket width).
    pub fn update_difficulty(&mut self, now: Instant) -> DifficultyChange {
        self.difficulty.update(now)
    }

    /// The lowest PoW difficulty to accept at `now`.
    pub fn required_difficulty(&self, now: Instant) -> u8 {
        self.difficulty.minimum_accepted(now)
    }

    /// The difficulty component.
    pub fn difficulty(&self) -> &AdaptiveDifficulty {
        &self.difficulty
    }

    /// The rate limiter (e.g. to set trusted peers).
    pub fn rate_limiter_mut(&mut self) -> &mut RateLimiter {
        &mut self.rate_limiter
    }

    /// The rate limiter.
    pub fn rate_limiter(&self) -> &RateLimiter {
        &self.rate_limiter
    }

    /// The connection tracker.
    pub fn connections(&self) -> &ConnectionTracker {
        &self.connections
    }

    /// The ban list.
    pub fn bans(&self) -> &BanList {
        &self.bans
    }
}
