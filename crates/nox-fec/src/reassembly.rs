//! Bounded reassembly of messages from fragments arriving in any order.
//!
//! Time is a `u64` count of milliseconds on the caller's monotonic clock (any
//! epoch): the reassembler never reads a clock. Memory is accounted before it
//! is allocated, so the caps hold whatever fragments arrive.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::mem::size_of;

use crate::codec;
use crate::error::{LimitsError, ReassemblyError};
use crate::layout::{Layout, MAX_TOTAL_SHARDS};
use crate::wire::{Fragment, MessageId};

/// Accounted bytes for one pending message besides its shard slots: the entry
/// in the pending map and in the deadline index, with allocator slack.
pub const PENDING_MESSAGE_OVERHEAD: usize = 256;

type StoredShard = (u8, Vec<u8>);

/// The bounds of a [`Reassembler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReassemblyLimits {
    /// Largest message length a header may announce.
    pub max_message_len: usize,
    /// Cap on accounted bytes of all pending messages (shards and overhead).
    pub max_buffered_bytes: usize,
    /// Cap on concurrent incomplete messages.
    pub max_pending_messages: usize,
    /// An incomplete message is dropped this long after its first fragment.
    pub pending_ttl_ms: u64,
    /// How many completed ids are remembered to drop their late fragments.
    pub max_remembered_completed: usize,
    /// How long a completed id is remembered.
    pub completed_ttl_ms: u64,
}

impl Default for ReassemblyLimits {
    /// 4 MiB messages, 64 MiB buffered, 1024 pending messages kept 60 s,
    /// 4096 completed ids remembered for 120 s.
    fn default() -> Self {
        Self {
            max_message_len: 4 << 20,
            max_buffered_bytes: 64 << 20,
            max_pending_messages: 1024,
            pending_ttl_ms: 60_000,
            max_remembered_completed: 4096,
            completed_ttl_ms: 120_000,
        }
    }
}

impl ReassemblyLimits {
    fn validate(&self) -> Result<(), LimitsError> {
        let positive = [
            ("max_message_len", self.max_message_len as u64),
            ("max_buffered_bytes", self.max_buffered_bytes as u64),
            ("max_pending_messages", self.max_pending_messages as u64),
            ("pending_ttl_ms", self.pending_ttl_ms),
        ];
        match positive.iter().find(|(_, value)| *value == 0) {
            Some((name, _)) => Err(LimitsError::Zero(name)),
            None => Ok(()),
        }
    }
}

/// What happened to an accepted fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Accepted {
    /// Stored; the message needs more shards.
    Pending {
        /// The message.
        message_id: MessageId,
        /// Distinct shards held.
        received: usize,
        /// Shards needed (d).
        needed: usize,
    },
    /// The fragment completed the message.
    Complete {
        /// The message.
        message_id: MessageId,
        /// The original bytes.
        message: Vec<u8>,
    },
    /// An identical copy of a stored shard; ignored.
    Duplicate {
        /// The message.
        message_id: MessageId,
    },
    /// The message was already completed; the fragment is dropped.
    AlreadyComplete {
        /// The message.
        message_id: MessageId,
    },
}

struct PendingMessage {
    layout: Layout,
    deadline_ms: u64,
    received: [u64; 4],
    shards: Vec<StoredShard>,
    accounted: usize,
}

impl PendingMessage {
    fn has(&self, index: u8) -> bool {
        let (word, bit) = (usize::from(index / 64), index % 64);
        self.received.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    fn mark(&mut self, index: u8) {
        let (word, bit) = (usize::from(index / 64), index % 64);
        if let Some(w) = self.received.get_mut(word) {
            *w |= 1 << bit;
        }
    }

    fn stored(&self, index: u8) -> Option<&[u8]> {
        self.shards.iter().find(|(i, _)| *i == index).map(|(_, shard)| shard.as_slice())
    }
}

/// Collects fragments into messages within hard bounds on memory, concurrent
/// messages and time. See the crate documentation for the policy.
///
/// Its `Debug` output shows counts only, never message bytes.
pub struct Reassembler {
    limits: ReassemblyLimits,
    pending: BTreeMap<MessageId, PendingMessage>,
    deadlines: BTreeSet<(u64, MessageId)>,
    completed: BTreeMap<MessageId, u64>,
    completed_order: VecDeque<(u64, MessageId)>,
    buffered_bytes: usize,
}

impl std::fmt::Debug for Reassembler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reassembler")
            .field("limits", &self.limits)
            .field("pending_messages", &self.pending.len())
            .field("buffered_bytes", &self.buffered_bytes)
            .field("remembered_completed", &self.completed.len())
            .finish()
    }
}

impl Reassembler {
    /// A reassembler with these limits.
    pub fn new(limits: ReassemblyLimits) -> Result<Self, LimitsError> {
        limits.validate()?;
        Ok(Self {
            limits,
            pending: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            completed: BTreeMap::new(),
            completed_order: VecDeque::new(),
            buffered_bytes: 0,
        })
    }

    /// The configured limits.
    pub fn limits(&self) -> &ReassemblyLimits {
        &self.limits
    }

    /// Accounted bytes held by pending messages; never above
    /// `limits().max_buffered_bytes`.
    pub fn buffered_bytes(&self) -> usize {
        self.buffered_bytes
    }

    /// Incomplete messages held.
    pub fn pending_messages(&self) -> usize {
        self.pending.len()
    }

    /// Completed ids remembered.
    pub fn remembered_completed(&self) -> usize {
        self.completed.len()
    }

    /// The earliest time at which [`Reassembler::expire`] has work to do.
    pub fn next_deadline(&self) -> Option<u64> {
        let pending = self.deadlines.first().map(|(at, _)| *at);
        let completed = self.completed_order.front().map(|(at, _)| *at);
        match (pending, completed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Drops incomplete messages whose deadline is at or before `now_ms` and
    /// forgets completed ids whose memory ran out. Returns the number of
    /// incomplete messages dropped.
    pub fn expire(&mut self, now_ms: u64) -> usize {
        let mut dropped = 0;
        while let Some(&(deadline, message_id)) = self.deadlines.first() {
            if deadline > now_ms {
                break;
            }
            self.remove_pending(&message_id);
            dropped += 1;
        }
        while let Some(&(until, message_id)) = self.completed_order.front() {
            if until > now_ms {
                break;
            }
            self.completed_order.pop_front();
            self.completed.remove(&message_id);
        }
        dropped
    }

    /// Drops the incomplete message `message_id`, if held. Returns whether it was.
    pub fn cancel(&mut self, message_id: &MessageId) -> bool {
        self.remove_pending(message_id).is_some()
    }

    /// Parses `bytes` as a fragment and accepts it at time `now_ms`.
    pub fn accept(&mut self, bytes: &[u8], now_ms: u64) -> Result<Accepted, ReassemblyError> {
        let fragment = Fragment::parse(bytes)?;
        self.accept_fragment(&fragment, now_ms)
    }

    /// Accepts a parsed fragment at time `now_ms`. Expired state is dropped
    /// first. A refused fragment leaves every message unchanged.
    pub fn accept_fragment(&mut self, fragment: &Fragment<'_>, now_ms: u64) -> Result<Accepted, ReassemblyError> {
        self.expire(now_ms);
        let message_id = fragment.message_id();
        if self.completed.contains_key(&message_id) {
            return Ok(Accepted::AlreadyComplete { message_id });
        }
        let index = fragment.header().shard_index;
        let shard = fragment.shard();
        let Some(held) = self.pending.get_mut(&message_id) else {
            return self.start_message(fragment, now_ms);
        };
        if let Some(field) = first_difference(&held.layout, fragment.layout()) {
            return Err(ReassemblyError::Inconsistent { message_id, field });
        }
        if held.has(index) {
            return match held.stored(index) {
                Some(stored) if stored != shard => Err(ReassemblyError::ConflictingDuplicate { message_id, index }),
                _ => Ok(Accepted::Duplicate { message_id }),
            };
        }
        let needed = held.layout.data_shards();
        if held.shards.len() + 1 < needed {
            self.buffered_bytes = reserved_total(self.buffered_bytes, shard.len(), self.limits.max_buffered_bytes)?;
            held.shards.push((index, shard.to_vec()));
            held.mark(index);
            held.accounted += shard.len();
            return Ok(Accepted::Pending { message_id, received: held.shards.len(), needed });
        }
        // The d-th distinct shard: decode from it and the d - 1 stored ones,
        // then drop the pending state whatever the outcome.
        let stored = held.shards.iter().map(|(i, stored)| (usize::from(*i), stored.as_slice()));
        let last = std::iter::once((fragment.shard_index(), shard));
        let decoded = codec::decode(&held.layout, stored.chain(last));
        self.remove_pending(&message_id);
        let message = decoded?;
        self.remember_completed(message_id, now_ms);
        Ok(Accepted::Complete { message_id, message })
    }

    fn start_message(&mut self, fragment: &Fragment<'_>, now_ms: u64) -> Result<Accepted, ReassemblyError> {
        let layout = *fragment.layout();
        let message_id = fragment.message_id();
        if layout.message_len() > self.limits.max_message_len {
            return Err(ReassemblyError::MessageTooLarge {
                message_len: layout.message_len(),
                max: self.limits.max_message_len,
            });
        }
        if layout.data_shards() == 1 {
            let message = codec::decode(&layout, [(fragment.shard_index(), fragment.shard())])?;
            self.remember_completed(message_id, now_ms);
            return Ok(Accepted::Complete { message_id, message });
        }
        if self.pending.len() >= self.limits.max_pending_messages {
            return Err(ReassemblyError::TooManyMessages { max: self.limits.max_pending_messages });
        }
        // Only d - 1 shards are ever stored: the d-th completes the message.
        let slots = layout.data_shards() - 1;
        let accounted = PENDING_MESSAGE_OVERHEAD + slots * size_of::<StoredShard>() + layout.shard_len();
        self.buffered_bytes = reserved_total(self.buffered_bytes, accounted, self.limits.max_buffered_bytes)?;
        let mut shards = Vec::with_capacity(slots);
        shards.push((fragment.header().shard_index, fragment.shard().to_vec()));
        let deadline_ms = now_ms.saturating_add(self.limits.pending_ttl_ms);
        let mut held = PendingMessage { layout, deadline_ms, received: [0; 4], shards, accounted };
        held.mark(fragment.header().shard_index);
        self.pending.insert(message_id, held);
        self.deadlines.insert((deadline_ms, message_id));
        Ok(Accepted::Pending { message_id, received: 1, needed: layout.data_shards() })
    }

    fn remove_pending(&mut self, message_id: &MessageId) -> Option<PendingMessage> {
        let pending = self.pending.remove(message_id)?;
        self.deadlines.remove(&(pending.deadline_ms, *message_id));
        self.buffered_bytes = self.buffered_bytes.saturating_sub(pending.accounted);
        Some(pending)
    }

    fn remember_completed(&mut self, message_id: MessageId, now_ms: u64) {
        if self.limits.max_remembered_completed == 0 || self.limits.completed_ttl_ms == 0 {
            return;
        }
        while self.completed.len() >= self.limits.max_remembered_completed {
            let Some((_, oldest)) = self.completed_order.pop_front() else {
                break;
            };
            self.completed.remove(&oldest);
        }
        let until = now_ms.saturating_add(self.limits.completed_ttl_ms);
        self.completed.insert(message_id, until);
        self.completed_order.push_back((until, message_id));
    }
}

/// `used + bytes` if it stays within `max`; memory is accounted before the
/// allocation it stands for.
fn reserved_total(used: usize, bytes: usize, max: usize) -> Result<usize, ReassemblyError> {
    match used.checked_add(bytes) {
        Some(total) if total <= max => Ok(total),
        _ => Err(ReassemblyError::MemoryFull { needed: bytes, used, max }),
    }
}

fn first_difference(held: &Layout, got: &Layout) -> Option<&'static str> {
    if held.data_shards() != got.data_shards() {
        Some("data shard count")
    } else if held.parity_shards() != got.parity_shards() {
        Some("parity shard count")
    } else if held.message_len() != got.message_len() {
        Some("message length")
    } else {
        None
    }
}

// The bitmap covers every possible index.
const _: () = assert!(MAX_TOTAL_SHARDS <= 4 * 64);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode;

    impl Reassembler {
        /// Bytes actually allocated for pending messages, recomputed from the
        /// vectors' capacities, plus the fixed per-message overhead.
        fn allocated_bytes(&self) -> usize {
            let shard_bytes =
                |m: &PendingMessage| -> usize { m.shards.iter().map(|(_, shard)| shard.capacity()).sum() };
            self.pending
                .values()
                .map(|m| PENDING_MESSAGE_OVERHEAD + m.shards.capacity() * size_of::<StoredShard>() + shard_bytes(m))
                .sum()
        }

        fn assert_consistent(&self) {
            assert_eq!(self.allocated_bytes(), self.buffered_bytes);
            assert!(self.buffered_bytes <= self.limits.max_buffered_bytes);
            assert_eq!(self.deadlines.len(), self.pending.len());
            assert_eq!(self.completed.len(), self.completed_order.len());
            assert!(self.completed.len() <= self.limits.max_remembered_completed);
        }
    }

    #[test]
    fn accounting_matches_allocations() {
        let limits = ReassemblyLimits {
            max_message_len: 5000,
            max_buffered_bytes: 9000,
            max_pending_messages: 5,
            pending_ttl_ms: 50,
            max_remembered_completed: 3,
            completed_ttl_ms: 80,
        };
        let mut reassembler = Reassembler::new(limits).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut messages = Vec::new();
        for n in 0..12u8 {
            let len = 100 + 300 * usize::from(n);
            let data = 1 + usize::from(n % 6);
            let layout = Layout::new(len, data, usize::from(n % 3)).unwrap();
            let id = MessageId::from_bytes([n; 16]);
            messages.push(encode(&vec![n; len], id, &layout).unwrap());
        }
        for now in 0..3000u64 {
            let message = &messages[(next() % 12) as usize];
            let fragment = &message[(next() % message.len() as u64) as usize];
            let _ = reassembler.accept(fragment, now / 4);
            reassembler.assert_consistent();
        }
    }
}
