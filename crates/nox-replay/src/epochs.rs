//! Replay caches keyed by node-key epoch: a cache lives exactly as long as its epoch key.

use std::collections::BTreeMap;

use crate::cache::{InsertOutcome, ReplayCache, ReplayTag};
use crate::error::EpochError;

/// The live replay caches of a node, one per key epoch it still holds a secret key for.
///
/// There is no time-based rotation inside an epoch: forgetting tags while the key that can
/// decrypt a replay still exists would let the replay through. "Rotation" happens at epoch
/// granularity: open the next epoch's cache when its key is installed, retire (drop) a cache
/// when its key is erased. Retiring frees the cache's memory.
#[derive(Debug, Clone)]
pub struct EpochReplayCaches {
    caches: BTreeMap<u32, ReplayCache>,
    max_open: usize,
}

impl EpochReplayCaches {
    /// An empty set that will hold at most `max_open` caches at once (2 covers the current
    /// epoch plus the overlap with the previous or next one).
    pub fn new(max_open: usize) -> Self {
        Self { caches: BTreeMap::new(), max_open }
    }

    /// Adds the cache for its epoch (fresh, or loaded from a snapshot plus journal).
    pub fn open(&mut self, cache: ReplayCache) -> Result<(), EpochError> {
        let epoch = cache.epoch();
        if self.caches.contains_key(&epoch) {
            return Err(EpochError::AlreadyOpen(epoch));
        }
        if self.caches.len() >= self.max_open {
            return Err(EpochError::TooManyEpochs(self.max_open));
        }
        self.caches.insert(epoch, cache);
        Ok(())
    }

    /// Drops the cache of `epoch` when its key is retired; returns it if it was open (the node
    /// may take a final snapshot, or simply let it drop and delete its files).
    pub fn retire(&mut self, epoch: u32) -> Option<ReplayCache> {
        self.caches.remove(&epoch)
    }

    /// Retires every epoch strictly before `epoch`; returns how many were dropped.
    pub fn retire_before(&mut self, epoch: u32) -> usize {
        let kept = self.caches.split_off(&epoch);
        let dropped = self.caches.len();
        self.caches = kept;
        dropped
    }

    /// Early, read-only check at ingest.
    pub fn check(&self, epoch: u32, tag: &ReplayTag) -> Result<bool, EpochError> {
        Ok(self.get(epoch)?.check(tag))
    }

    /// Check-and-record after the MAC verified.
    pub fn insert(&mut self, epoch: u32, tag: &ReplayTag) -> Result<InsertOutcome, EpochError> {
        Ok(self.get_mut(epoch)?.insert(tag))
    }

    /// The cache of `epoch`.
    pub fn get(&self, epoch: u32) -> Result<&ReplayCache, EpochError> {
        self.caches.get(&epoch).ok_or(EpochError::UnknownEpoch(epoch))
    }

    /// The cache of `epoch`, mutably (e.g. to apply a journal).
    pub fn get_mut(&mut self, epoch: u32) -> Result<&mut ReplayCache, EpochError> {
        self.caches.get_mut(&epoch).ok_or(EpochError::UnknownEpoch(epoch))
    }

    /// Open epochs in ascending order.
    pub fn epochs(&self) -> impl Iterator<Item = u32> + '_ {
        self.caches.keys().copied()
    }

    /// Number of open caches.
    pub fn len(&self) -> usize {
        self.caches.len()
    }

    /// Whether no cache is open.
    pub fn is_empty(&self) -> bool {
        self.caches.is_empty()
    }
}
