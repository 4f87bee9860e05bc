//! One key epoch's replay cache.

use crate::error::JournalError;
use crate::filter::BitArray;
use crate::journal::{self, JournalRecovery, ParsedJournal};
use crate::params::BloomParameters;

/// A per-(packet, hop) replay tag as computed by the Sphinx layer: 32 uniformly random bytes.
pub type ReplayTag = [u8; 32];

/// Result of [`ReplayCache::insert`].
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertOutcome {
    /// The tag was not present (at least one of its bits was clear) and is now recorded.
    Inserted,
    /// Every bit was already set: a replay, or (with probability ≈ the FP rate) a false positive.
    AlreadyPresent,
}

impl InsertOutcome {
    /// Whether the caller must drop the packet as a replay.
    pub fn is_replay(self) -> bool {
        self == InsertOutcome::AlreadyPresent
    }
}

/// The replay cache of one node-key epoch: a Bloom filter that is never rotated within the
/// epoch, so it forgets nothing while the key that could decrypt a replay still exists.
#[derive(Clone, PartialEq)]
pub struct ReplayCache {
    epoch: u32,
    params: BloomParameters,
    pub(crate) bits: BitArray,
    /// Number of `insert` calls that returned `Inserted` (including journal replays).
    pub(crate) inserted: u64,
}

impl std::fmt::Debug for ReplayCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayCache")
            .field("epoch", &self.epoch)
            .field("params", &self.params)
            .field("set_bits", &self.bits.set_bits())
            .field("inserted", &self.inserted)
            .finish()
    }
}

impl ReplayCache {
    /// An empty cache for `epoch`. The bit array is allocated zeroed, so its pages become
    /// resident only as tags are inserted.
    pub fn new(epoch: u32, params: BloomParameters) -> Self {
        Self { epoch, bits: BitArray::zeroed(&params), params, inserted: 0 }
    }

    pub(crate) fn from_parts(epoch: u32, params: BloomParameters, bits: BitArray, inserted: u64) -> Self {
        Self { epoch, params, bits, inserted }
    }

    /// The key epoch this cache belongs to.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The filter's shape.
    pub fn parameters(&self) -> &BloomParameters {
        &self.params
    }

    /// Read-only membership test, for the early check at ingest (before the MAC is verified).
    /// No false negatives: a tag ever inserted always returns `true`.
    pub fn check(&self, tag: &ReplayTag) -> bool {
        self.bits.contains(tag, &self.params)
    }

    /// Records `tag` and reports whether it was already present, in one step: two workers that
    /// race on the same packet both call this on `&mut self` in turn, and exactly one of them
    /// sees [`InsertOutcome::Inserted`]. Call only after the packet's MAC verified, so that
    /// forged packets cannot fill the filter.
    pub fn insert(&mut self, tag: &ReplayTag) -> InsertOutcome {
        if self.bits.insert(tag, &self.params) == 0 {
            InsertOutcome::AlreadyPresent
        } else {
            self.inserted += 1;
            InsertOutcome::Inserted
        }
    }

    /// Number of tags recorded as new.
    pub fn inserted(&self) -> u64 {
        self.inserted
    }

    /// Number of set bits.
    pub fn set_bits(&self) -> u64 {
        self.bits.set_bits()
    }

    /// Fraction of set bits, in `[0, 1]`.
    pub fn fill_ratio(&self) -> f64 {
        self.bits.set_bits() as f64 / self.params.bits() as f64
    }

    /// The false-positive rate right now, from the actual fill: `fill^k`.
    pub fn estimated_false_positive_rate(&self) -> f64 {
        self.fill_ratio().powi(self.params.hashes() as i32)
    }

    /// Distinct tags estimated from the fill (Swamidass & Baldi): `−(m/k)·ln(1 − fill)`.
    pub fn estimated_items(&self) -> f64 {
        let m = self.params.bits() as f64;
        let k = f64::from(self.params.hashes());
        -(m / k) * (1.0 - self.fill_ratio()).ln()
    }

    /// Whether the filter holds at least its design load: the estimated false-positive rate has
    /// reached the design target. From here on, every further tag raises the rate of honest
    /// packets refused as replays; the node may refuse new packets for this epoch instead.
    pub fn is_saturated(&self) -> bool {
        self.estimated_false_positive_rate() >= self.params.design_false_positive_rate()
    }

    /// The journal header for this cache's epoch (write it first into a fresh journal file).
    pub fn journal_header(&self) -> [u8; journal::HEADER_LEN] {
        journal::encode_header(self.epoch)
    }

    /// The journal record for `tag` in this cache's epoch (append after a successful insert).
    pub fn journal_record(&self, tag: &ReplayTag) -> [u8; journal::RECORD_LEN] {
        journal::encode_record(self.epoch, tag)
    }

    /// Parses `bytes` as this epoch's journal and inserts every valid record. Replaying is
    /// idempotent: records already in the filter change nothing, so replaying a journal that
    /// was partly or fully folded into the snapshot is harmless.
    pub fn apply_journal(&mut self, bytes: &[u8]) -> Result<JournalRecovery, JournalError> {
        let parsed = ParsedJournal::parse(bytes)?;
        self.apply_parsed_journal(&parsed)
    }

    /// Like [`ReplayCache::apply_journal`] for an already parsed journal.
    pub fn apply_parsed_journal(&mut self, parsed: &ParsedJournal<'_>) -> Result<JournalRecovery, JournalError> {
        if parsed.epoch() != self.epoch {
            return Err(JournalError::EpochMismatch { journal: parsed.epoch(), cache: self.epoch });
        }
        let mut newly_inserted = 0;
        for tag in parsed.tags() {
            if self.insert(&tag) == InsertOutcome::Inserted {
                newly_inserted += 1;
            }
        }
        Ok(JournalRecovery {
            records: parsed.record_count(),
            newly_inserted,
            valid_len: parsed.valid_len(),
            discarded_bytes: parsed.discarded_bytes(),
        })
    }
}
