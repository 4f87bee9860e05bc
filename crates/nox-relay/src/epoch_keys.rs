//! The node's Sphinx secret keys, one per key epoch.

use std::collections::BTreeMap;

use nox_sphinx::SecretKey;

/// Secret keys by epoch. A retired key is dropped, which zeroizes it
/// (`SecretKey` zeroizes on drop); erasing its file is the keystore's job.
#[derive(Debug, Default)]
pub struct EpochKeys {
    keys: BTreeMap<u32, SecretKey>,
}

impl EpochKeys {
    /// No keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces the key for `epoch`.
    pub fn insert(&mut self, epoch: u32, key: SecretKey) {
        self.keys.insert(epoch, key);
    }

    /// The key for `epoch`, if held.
    pub fn get(&self, epoch: u32) -> Option<&SecretKey> {
        self.keys.get(&epoch)
    }

    /// Drops (and so zeroizes) the key of `epoch`, if held.
    pub fn retire(&mut self, epoch: u32) -> bool {
        self.keys.remove(&epoch).is_some()
    }

    /// Drops (and so zeroizes) every key of an epoch before `epoch`;
    /// returns how many were dropped.
    pub fn retire_before(&mut self, epoch: u32) -> usize {
        let kept = self.keys.split_off(&epoch);
        let dropped = self.keys.len();
        self.keys = kept;
        dropped
    }

    /// Epochs with a key, oldest first.
    pub fn epochs(&self) -> impl Iterator<Item = u32> + '_ {
        self.keys.keys().copied()
    }
}
