//! The per-packet relay logic, pure: ingest checks, Sphinx processing and
//! replay recording, in the order the pipeline runs them
//! (docs/spec/sphinx.md §5.4).
//!
//! 1. [`Relay::admit`] (ingest, cheap): length and geometry, key epoch held,
//!    replay tag not seen, proof of work. No public-key work happens for a
//!    packet that fails here.
//! 2. [`Relay::verify`] (worker, ~50 µs): the public-key work and the header
//!    MAC, nothing else. A packet whose MAC verified comes back as
//!    [`Verified`]: it cannot be processed further until its tag is recorded.
//! 3. [`Relay::record`] consumes the [`Verified`] step and records the tag
//!    (a tag recorded meanwhile by a concurrent copy makes this one a
//!    replay). Only now, after the MAC verified, so junk cannot fill the
//!    filter — but before the routing block and the body are looked at, so a
//!    packet refused there (a previous hop flipped a body bit) is still
//!    recorded and a copy of it is dropped at admission, before any
//!    public-key work.
//! 4. [`Recorded::finish`]: routing block, body, re-blinding. The caller
//!    makes the tag durable (the node's journal) whatever this returns.
//!
//! The typestate is the rule: [`Verified`] and [`Recorded`] are built only
//! here, [`Recorded`] only from a [`Verified`] by [`Relay::record`], and only
//! [`Recorded::finish`] reads past the MAC.

use nox_replay::{BloomParameters, EpochReplayCaches, ReplayCache};
use nox_sphinx::{Geometry, HeaderView, MacVerified, Processed, ReplayTag, SecretKey, verify_header};

use crate::{DropReason, EpochKeys};

/// A packet that passed ingest: its key epoch and replay tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admitted {
    /// The key epoch the packet was built for.
    pub epoch: u32,
    /// Its replay tag at this hop.
    pub tag: ReplayTag,
}

/// A packet whose header MAC verified at this hop ([`Relay::verify`]); its
/// tag must now be recorded ([`Relay::record`]), whatever happens after.
/// Borrows the packet buffer, so the bytes that were verified are the bytes
/// that are processed.
#[derive(Debug)]
#[must_use = "the tag of a packet whose MAC verified must be recorded with Relay::record"]
pub struct Verified<'p> {
    admitted: Admitted,
    header: MacVerified<'p>,
}

impl Verified<'_> {
    /// The packet's epoch and tag.
    pub fn admitted(&self) -> Admitted {
        self.admitted
    }
}

/// A MAC-verified packet whose tag is recorded in the relay's replay cache:
/// the caller makes the tag durable (journal) and may then
/// [`finish`](Recorded::finish) it.
#[derive(Debug)]
#[must_use = "a recorded packet is journalled and then finished"]
pub struct Recorded<'p> {
    admitted: Admitted,
    header: MacVerified<'p>,
}

impl Recorded<'_> {
    /// The packet's epoch and the tag just recorded (to journal).
    pub fn admitted(&self) -> Admitted {
        self.admitted
    }

    /// The rest of Sphinx processing, in place (docs/spec/sphinx.md §5.4
    /// checks 9–10): routing block, body, re-blinding. Needs no relay state,
    /// so no lock. A drop here leaves the tag recorded.
    pub fn finish(self) -> Result<RelayOutput, DropReason> {
        let processed = self.header.finish()?;
        let delay = |d: nox_sphinx::Delay| match d.requested() {
            Some(given) => nox_mixing::Delay::Given(given),
            None => nox_mixing::Delay::Sample,
        };
        Ok(match processed {
            Processed::Forward { next_hop, delay: d } => RelayOutput::Forward { next_hop, delay: delay(d) },
            Processed::Deliver { delay: d, payload } => RelayOutput::Deliver { delay: delay(d), payload },
            Processed::Reply { delay: d, recipient, surb_id, body } => {
                RelayOutput::Reply { delay: delay(d), recipient, surb_id, body }
            }
        })
    }
}

/// What to do with a processed packet (the buffer was rewritten in place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelayOutput {
    /// Mix, then send the buffer to the next hop.
    Forward {
        /// Next hop.
        next_hop: nox_sphinx::NodeId,
        /// Mixing delay: the builder's request or the node's own draw.
        delay: nox_mixing::Delay,
    },
    /// Exit: hand `buffer[payload]` to the exit services.
    Deliver {
        /// Mixing delay before delivery.
        delay: nox_mixing::Delay,
        /// The payload's byte range in the buffer.
        payload: core::ops::Range<usize>,
    },
    /// End of a SURB path: hand the body to the client `recipient`.
    Reply {
        /// Mixing delay before delivery.
        delay: nox_mixing::Delay,
        /// The client.
        recipient: nox_sphinx::NodeId,
        /// Lets the client find its keys.
        surb_id: nox_sphinx::SurbId,
        /// The body's byte range in the buffer.
        body: core::ops::Range<usize>,
    },
}

/// Keys, replay caches and geometry of one node.
#[derive(Debug)]
pub struct Relay {
    geometry: Geometry,
    keys: EpochKeys,
    replay: EpochReplayCaches,
    /// Epochs whose replay state was lost: their packets are refused until they retire.
    refused: std::collections::BTreeSet<u32>,
}

impl Relay {
    /// A relay for `geometry` holding no keys yet.
    pub fn new(geometry: Geometry) -> Self {
        Self { geometry, keys: EpochKeys::new(), replay: EpochReplayCaches::new(4), refused: Default::default() }
    }

    /// The geometry this relay accepts.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Starts accepting packets for `epoch` with `key`, with a fresh replay
    /// cache whose lifetime is the key's.
    pub fn open_epoch(&mut self, epoch: u32, key: SecretKey, bloom: BloomParameters) {
        self.keys.insert(epoch, key);
        if self.replay.get(epoch).is_err() {
            // Cannot fail: the epoch was just checked to be absent; if the
            // cache map is at its bound the oldest epoch must be retired first.
            let _ = self.replay.open(ReplayCache::new(epoch, bloom));
        }
    }

    /// Starts accepting packets for `epoch` with `key` and an existing replay
    /// cache (restored from disk), replacing any cache held for that epoch.
    pub fn open_epoch_with(&mut self, epoch: u32, key: SecretKey, cache: ReplayCache) {
        self.keys.insert(epoch, key);
        self.replay.retire(epoch);
        let _ = self.replay.open(cache);
    }

    /// Stops accepting epochs before `epoch`: drops (zeroizes) their keys and
    /// their replay caches together.
    pub fn retire_before(&mut self, epoch: u32) {
        self.keys.retire_before(epoch);
        self.replay.retire_before(epoch);
        self.refused = self.refused.split_off(&epoch);
    }

    /// Refuses `epoch` until it retires, because its replay state was lost:
    /// drops its key and cache if open, and its packets are dropped at
    /// admission as [`DropReason::ReplayStateLost`] instead of being processed
    /// with a cache that may have forgotten tags.
    pub fn refuse_epoch(&mut self, epoch: u32) {
        self.keys.retire(epoch);
        self.replay.retire(epoch);
        self.refused.insert(epoch);
    }

    /// Epochs currently refused, oldest first.
    pub fn refused_epochs(&self) -> impl Iterator<Item = u32> + '_ {
        self.refused.iter().copied()
    }

    /// Whether `epoch` is refused ([`Relay::refuse_epoch`]).
    pub fn is_refused(&self, epoch: u32) -> bool {
        self.refused.contains(&epoch)
    }

    /// Epochs currently accepted.
    pub fn epochs(&self) -> impl Iterator<Item = u32> + '_ {
        self.keys.epochs()
    }

    /// Ingest checks (no public-key work).
    pub fn admit(&self, packet: &[u8], difficulty: u8) -> Result<Admitted, DropReason> {
        let view = HeaderView::parse(&self.geometry, packet)?;
        let epoch = view.key_epoch();
        if self.keys.get(epoch).is_none() {
            if self.refused.contains(&epoch) {
                return Err(DropReason::ReplayStateLost);
            }
            return Err(DropReason::UnknownEpoch);
        }
        let tag = view.replay_tag();
        match self.replay.check(epoch, &tag.0) {
            Ok(false) => {}
            Ok(true) => return Err(DropReason::Replay),
            Err(_) => return Err(DropReason::UnknownEpoch),
        }
        view.check_work(&tag, difficulty)?;
        Ok(Admitted { epoch, tag })
    }

    /// The public-key work and the header MAC of an admitted packet
    /// (docs/spec/sphinx.md §5.4 checks 6–7), without reading the routing
    /// block or the body. The buffer is not modified.
    pub fn verify<'p>(&self, admitted: &Admitted, packet: &'p mut [u8]) -> Result<Verified<'p>, DropReason> {
        let key = self.keys.get(admitted.epoch).ok_or(DropReason::UnknownEpoch)?;
        let header = verify_header(&self.geometry, key, packet)?;
        Ok(Verified { admitted: *admitted, header })
    }

    /// Records the tag of a packet whose MAC verified (§5.4 check 8); a
    /// replay if another copy was recorded first, which is then not processed
    /// further.
    pub fn record<'p>(&mut self, verified: Verified<'p>) -> Result<Recorded<'p>, DropReason> {
        let Verified { admitted, header } = verified;
        match self.replay.insert(admitted.epoch, &admitted.tag.0) {
            Ok(outcome) if outcome.is_replay() => Err(DropReason::Replay),
            Ok(_) => Ok(Recorded { admitted, header }),
            Err(_) => Err(DropReason::UnknownEpoch),
        }
    }

    /// The replay cache of `epoch`, for persistence and metrics.
    pub fn replay_cache(&self, epoch: u32) -> Option<&ReplayCache> {
        self.replay.get(epoch).ok()
    }
}
