//! The key-epoch schedule: which epoch a time falls in, which epochs a node accepts, which it
//! publishes ahead and when an epoch's secret key must be erased.
//!
//! All times are unix seconds passed in by the caller; nothing here reads a clock.

use core::ops::RangeInclusive;
use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::ScheduleError;

/// Default epoch length: one hour.
pub const DEFAULT_EPOCH_LENGTH: Duration = Duration::from_secs(3600);
/// Default overlap: five minutes during which the previous epoch's key still works.
pub const DEFAULT_OVERLAP: Duration = Duration::from_secs(300);
/// Default number of future epochs whose public keys a node lists.
pub const DEFAULT_PUBLISH_AHEAD: u32 = 1;
/// Largest accepted `publish_ahead`.
pub const MAX_PUBLISH_AHEAD: u32 = 8;

/// A fixed epoch schedule shared by the whole network (it is part of the topology document).
///
/// Epoch `e` covers unix seconds `[genesis + e·length, genesis + (e+1)·length)`. Times before
/// genesis are in epoch 0; epochs saturate at `u32::MAX`. Lengths are whole seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EpochSchedule {
    genesis_unix: u64,
    epoch_length: u64,
    overlap: u64,
    publish_ahead: u32,
}

impl EpochSchedule {
    /// A validated schedule: `epoch_length` is a positive whole number of seconds, `overlap` a
    /// whole number of seconds shorter than `epoch_length`, `publish_ahead ≤ MAX_PUBLISH_AHEAD`.
    pub fn new(
        genesis_unix: u64,
        epoch_length: Duration,
        overlap: Duration,
        publish_ahead: u32,
    ) -> Result<Self, ScheduleError> {
        if epoch_length.subsec_nanos() != 0 || epoch_length.as_secs() == 0 {
            return Err(ScheduleError::EpochLength);
        }
        if overlap.subsec_nanos() != 0 || overlap >= epoch_length {
            return Err(ScheduleError::Overlap);
        }
        if publish_ahead > MAX_PUBLISH_AHEAD {
            return Err(ScheduleError::PublishAhead(publish_ahead));
        }
        Ok(Self { genesis_unix, epoch_length: epoch_length.as_secs(), overlap: overlap.as_secs(), publish_ahead })
    }

    /// One-hour epochs, five-minute overlap, one epoch published ahead.
    pub fn with_defaults(genesis_unix: u64) -> Self {
        Self { genesis_unix, epoch_length: 3600, overlap: 300, publish_ahead: DEFAULT_PUBLISH_AHEAD }
    }

    /// Unix second at which epoch 0 starts.
    pub fn genesis_unix(&self) -> u64 {
        self.genesis_unix
    }

    /// Length of one epoch.
    pub fn epoch_length(&self) -> Duration {
        Duration::from_secs(self.epoch_length)
    }

    /// How long after an epoch ends its key is still accepted.
    pub fn overlap(&self) -> Duration {
        Duration::from_secs(self.overlap)
    }

    /// How many epochs after the current one a node publishes keys for.
    pub fn publish_ahead(&self) -> u32 {
        self.publish_ahead
    }

    /// The epoch containing unix second `t` (0 before genesis).
    pub fn epoch_at(&self, t: u64) -> u32 {
        let elapsed = t.saturating_sub(self.genesis_unix);
        u32::try_from(elapsed / self.epoch_length).unwrap_or(u32::MAX)
    }

    /// [`EpochSchedule::epoch_at`] for a `SystemTime` (times before 1970 are in epoch 0).
    pub fn epoch_at_time(&self, t: SystemTime) -> u32 {
        self.epoch_at(unix_seconds(t))
    }

    /// First unix second of epoch `e` (saturating).
    pub fn epoch_start(&self, e: u32) -> u64 {
        self.genesis_unix.saturating_add(u64::from(e).saturating_mul(self.epoch_length))
    }

    /// First unix second after epoch `e` (exclusive end; saturating).
    pub fn epoch_end(&self, e: u32) -> u64 {
        self.epoch_start(e).saturating_add(self.epoch_length)
    }

    /// Epochs whose keys a node accepts at `t`: the current epoch, then the previous one during
    /// the first `overlap` seconds of the current epoch (packets built just before the boundary
    /// are still in flight).
    pub fn accepting_epochs(&self, t: u64) -> impl Iterator<Item = u32> + use<> {
        let current = self.epoch_at(t);
        let previous = current.checked_sub(1).filter(|p| t < self.erase_at(*p));
        core::iter::once(current).chain(previous)
    }

    /// Whether a packet built for `epoch` is accepted at `t`.
    pub fn accepts(&self, epoch: u32, t: u64) -> bool {
        self.accepting_epochs(t).any(|e| e == epoch)
    }

    /// Epochs whose public keys a node lists in its descriptor at `t`: every accepting epoch
    /// (so the previous one during the overlap, which clients still build for, see
    /// [`EpochSchedule::client_epoch`]) up to the next `publish_ahead` (saturating).
    pub fn published_epochs(&self, t: u64) -> RangeInclusive<u32> {
        let current = self.epoch_at(t);
        let oldest = self.accepting_epochs(t).min().unwrap_or(current);
        oldest..=current.saturating_add(self.publish_ahead)
    }

    /// Unix second from which epoch `e`'s secret key must be erased: its end plus the overlap.
    pub fn erase_at(&self, e: u32) -> u64 {
        self.epoch_end(e).saturating_add(self.overlap)
    }

    /// Whether epoch `e`'s secret key must be gone at `t` (`t ≥ erase_at(e)`).
    pub fn is_expired(&self, e: u32, t: u64) -> bool {
        t >= self.erase_at(e)
    }

    /// The epoch a client should build packets for at `t`: the epoch of `t − overlap/2`.
    ///
    /// A client switches to the new epoch's keys half an overlap after the boundary. Nodes accept
    /// the old epoch until a full overlap after it, and the new epoch from the boundary on, so
    /// a client clock off by up to `overlap/2` in either direction still builds packets that
    /// every hop accepts, as long as the packet crosses the network within the remaining
    /// `overlap/2 − skew`. Both keys are in every topology published since the previous epoch.
    pub fn client_epoch(&self, t: u64) -> u32 {
        self.epoch_at(t.saturating_sub(self.overlap / 2))
    }
}

/// Whole unix seconds of a `SystemTime` (0 before 1970).
pub fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
