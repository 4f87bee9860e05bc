//! Graduated bans (paper §4.9): each offence bans for twice as long as the last (1, 2, 4 …
//! minutes, capped); each quiet period after a ban ends forgives one level.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::bounded::BoundedLru;
use crate::peer::PeerKey;

/// Configuration of a [`BanList`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BanConfig {
    /// Ban for a first offence.
    pub base_duration: Duration,
    /// Longest ban.
    pub max_duration: Duration,
    /// Each full quiet period after a ban ends lowers the peer's level by one.
    pub forgive_after: Duration,
    /// Peers remembered at once; beyond it the least recent offender is forgotten.
    pub max_entries: usize,
}

impl Default for BanConfig {
    /// 1 minute, doubling up to 24 hours, one level forgiven per quiet hour, 65,536 entries.
    fn default() -> Self {
        Self {
            base_duration: Duration::from_secs(60),
            max_duration: Duration::from_secs(24 * 3600),
            forgive_after: Duration::from_secs(3600),
            max_entries: 65_536,
        }
    }
}

/// A peer's ban state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BanRecord {
    /// Offence level: the last ban lasted `base × 2^(level−1)` (capped).
    pub level: u32,
    /// End of the current (or last) ban.
    pub banned_until: Instant,
}

/// Bans keyed by peer, bounded to `max_entries`.
#[derive(Debug, Clone)]
pub struct BanList {
    config: BanConfig,
    entries: BoundedLru<PeerKey, BanRecord>,
}

impl BanList {
    /// An empty ban list.
    pub fn new(config: BanConfig) -> Self {
        Self { config, entries: BoundedLru::new(config.max_entries) }
    }

    fn duration_for(&self, level: u32) -> Duration {
        let doublings = level.saturating_sub(1).min(63);
        let factor = 1u64 << doublings;
        let nanos = self.config.base_duration.as_nanos().saturating_mul(u128::from(factor));
        let capped = nanos.min(self.config.max_duration.as_nanos());
        Duration::from_nanos(u64::try_from(capped).unwrap_or(u64::MAX))
    }

    /// Records an offence by `ip` at `now` and bans it: one level above its (forgiven) level.
    /// Offences during an active ban escalate too; call this for misbehaviour, not for the
    /// refusals a ban itself causes.
    pub fn record_offence(&mut self, ip: IpAddr, now: Instant) -> BanRecord {
        let key = PeerKey::of(ip);
        let level =
            self.entries.peek(&key).map_or(0, |record| effective_level(&self.config, record, now)).saturating_add(1);
        let banned_until = now.checked_add(self.duration_for(level)).unwrap_or(now);
        let record = BanRecord { level, banned_until };
        let (slot, _evicted) = self.entries.get_or_insert_with(key, || record);
        *slot = record;
        record
    }

    /// Whether `ip` is banned at `now`.
    pub fn is_banned(&self, ip: IpAddr, now: Instant) -> bool {
        self.ban_remaining(ip, now).is_some()
    }

    /// Time left on `ip`'s ban, if banned.
    pub fn ban_remaining(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let record = self.entries.peek(&PeerKey::of(ip))?;
        (now < record.banned_until).then(|| record.banned_until - now)
    }

    /// `ip`'s level after forgiveness at `now` (0: clean).
    pub fn level(&self, ip: IpAddr, now: Instant) -> u32 {
        self.entries.peek(&PeerKey::of(ip)).map_or(0, |record| effective_level(&self.config, record, now))
    }

    /// Drops fully forgiven entries. Optional: the map is bounded anyway.
    pub fn prune(&mut self, now: Instant) {
        let config = self.config;
        self.entries.retain(|_, record| effective_level(&config, record, now) > 0);
    }

    /// Number of remembered peers (never above `max_entries`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no peer is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A record's level after forgiving one level per full quiet period since its ban ended.
fn effective_level(config: &BanConfig, record: &BanRecord, now: Instant) -> u32 {
    if now <= record.banned_until || config.forgive_after.is_zero() {
        return record.level;
    }
    let quiet = now.duration_since(record.banned_until).as_nanos();
    let forgiven = quiet / config.forgive_after.as_nanos();
    record.level.saturating_sub(u32::try_from(forgiven).unwrap_or(u32::MAX))
}
