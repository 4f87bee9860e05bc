//! A stream's SURB pool and the plan of one message back: how many SURBs it
//! spends and how many data bytes it may carry (docs/spec/streams.md §1, §4).
//! Pure: no I/O, no clock.

use std::collections::VecDeque;

use nox_fec::{MAX_TOTAL_SHARDS, PlanningError, choose_parity};
use nox_message::RESPONSE_HEADER_LEN;
use nox_stream::StreamMessage;

/// Most SURBs the exit holds for one stream; a batch beyond it pushes the
/// oldest out.
pub const MAX_POOL: usize = 1024;
/// SURBs kept back for control frames (an `ACK`, a `FIN`, a `RESET`): data
/// is sent only with SURBs beyond the reserve.
pub const RESERVE: usize = 1;
/// Most data shards one message back spans (d ≤ 8): a lost packet costs at
/// most one such message, and the pool is spent in small steps.
pub const MAX_DATA_SHARDS: usize = 8;

/// The SURBs a client gave one stream, oldest first (replies spend the
/// oldest first: they expire first), and the highest batch number seen.
#[derive(Debug)]
pub struct SurbPool<S> {
    surbs: VecDeque<S>,
    seen_seq: u32,
    limit: usize,
}

impl<S> SurbPool<S> {
    /// An empty pool holding at most `limit` SURBs.
    pub fn new(limit: usize) -> Self {
        Self { surbs: VecDeque::new(), seen_seq: 0, limit }
    }

    /// Adds a request's SURBs (its `SURBS` frame's `seq`, if it had one).
    /// Past the limit the oldest SURBs are dropped; returns how many.
    pub fn push(&mut self, surbs: Vec<S>, seq: Option<u32>) -> usize {
        if let Some(seq) = seq {
            self.seen_seq = self.seen_seq.max(seq);
        }
        self.surbs.extend(surbs);
        let excess = self.surbs.len().saturating_sub(self.limit);
        self.surbs.drain(..excess);
        excess
    }

    /// SURBs held.
    pub fn len(&self) -> usize {
        self.surbs.len()
    }

    /// Whether no SURB is held.
    pub fn is_empty(&self) -> bool {
        self.surbs.is_empty()
    }

    /// The highest `SURBS.seq` received (0: none).
    pub fn seen_seq(&self) -> u32 {
        self.seen_seq
    }

    /// Takes the `n` oldest SURBs (fewer if fewer are held).
    pub fn take(&mut self, n: usize) -> Vec<S> {
        let n = n.min(self.surbs.len());
        self.surbs.drain(..n).collect()
    }

    /// Puts back SURBs taken and not spent, in front, in their order.
    pub fn put_back(&mut self, surbs: Vec<S>) {
        for surb in surbs.into_iter().rev() {
            self.surbs.push_front(surb);
        }
        let excess = self.surbs.len().saturating_sub(self.limit);
        self.surbs.drain(..excess);
    }
}

/// What the exit's reply policy needs to plan a message back: the shard
/// bytes of one reply packet, and the loss rate and delivery target the
/// parity is chosen for (the same as `nox_message::reply_packets_from`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplyPlanner {
    /// Shard bytes one SURB reply carries (`nox_fec::shard_capacity` of the
    /// geometry's payload capacity).
    pub shard_capacity: usize,
    /// Loss rate the parity is planned for.
    pub loss: f64,
    /// Delivery probability the parity aims at, within the SURBs allowed.
    pub target: f64,
}

impl ReplyPlanner {
    /// The data and parity shards `(d, p)` of an encoded response of `len`
    /// bytes sent with at most `budget` SURBs: d the fewest that carry it,
    /// p the least parity meeting the target within the budget, or all the
    /// budget leaves when the target is out of reach. `None` when the d data
    /// shards alone do not fit. This is the plan `reply_packets_from` makes
    /// when handed exactly `budget` SURBs, so d + p SURBs are what it spends.
    pub fn shards(&self, len: usize, budget: usize) -> Option<(usize, usize)> {
        if self.shard_capacity == 0 {
            return None;
        }
        let data = len.div_ceil(self.shard_capacity).max(1);
        if data > budget || data > MAX_TOTAL_SHARDS {
            return None;
        }
        let parity = match choose_parity(data, budget, self.loss, self.target) {
            Ok(choice) => choice.parity_shards,
            Err(PlanningError::TargetUnreachable { best, .. }) => best.parity_shards,
            // Only an invalid loss or target (refused by the node's config): no parity.
            Err(_) => 0,
        };
        Some((data, parity))
    }

    /// Data shards of a data-bearing message within `budget` SURBs: the most
    /// (at most [`MAX_DATA_SHARDS`]) whose parity still meets the target
    /// within the budget; one when none does (all the rest is parity); zero
    /// when the budget is zero.
    pub fn data_shards(&self, budget: usize) -> usize {
        let most = budget.min(MAX_DATA_SHARDS).min(MAX_TOTAL_SHARDS);
        (1..=most)
            .rev()
            .find(|&data| choose_parity(data, budget, self.loss, self.target).is_ok())
            .unwrap_or(most.min(1))
    }

    /// The most `DATA` bytes a message with the frames of `template` (its
    /// `data` ignored) may carry so that it is sent with at most `budget`
    /// SURBs, parity included. Zero when not even one byte fits.
    pub fn max_data(&self, template: &StreamMessage, budget: usize) -> usize {
        let data = self.data_shards(budget);
        if data == 0 {
            return 0;
        }
        let room = data.saturating_mul(self.shard_capacity).saturating_sub(RESPONSE_HEADER_LEN);
        template.data_room(room)
    }
}

#[cfg(test)]
mod tests {
    use nox_stream::{Ack, Data, Pool, StreamId};

    use super::*;

    fn planner() -> ReplyPlanner {
        let capacity = nox_fec::shard_capacity(nox_sphinx::Geometry::default().payload_capacity()).unwrap();
        ReplyPlanner { shard_capacity: capacity, loss: 0.05, target: 0.999 }
    }

    #[test]
    fn the_pool_is_bounded_from_the_oldest_end_and_remembers_the_highest_batch() {
        let mut pool = SurbPool::new(5);
        assert_eq!(pool.push(vec![1, 2, 3], Some(2)), 0);
        assert_eq!(pool.push(vec![4, 5, 6, 7], Some(1)), 2);
        assert_eq!(pool.seen_seq(), 2, "a late lower batch does not lower seen_seq");
        assert_eq!(pool.len(), 5);
        assert_eq!(pool.take(2), vec![3, 4]);
        pool.push(vec![8], None);
        assert_eq!(pool.seen_seq(), 2);
        pool.put_back(vec![3, 4]);
        assert_eq!(pool.len(), 5, "putting back respects the bound");
        assert_eq!(pool.take(10), vec![4, 5, 6, 7, 8]);
        assert!(pool.is_empty());
        assert!(pool.take(1).is_empty());
    }

    #[test]
    fn the_default_pool_bound_is_the_spec_s() {
        let mut pool = SurbPool::new(MAX_POOL);
        pool.push((0..1000).collect(), Some(1));
        assert_eq!(pool.push((1000..1100).collect(), Some(2)), 76);
        assert_eq!(pool.take(1), vec![76]);
    }

    /// The biggest message a session may send with `max_data`: every frame it
    /// can carry, data of exactly `max_data` bytes.
    fn worst_message(max_data: usize) -> StreamMessage {
        let mut message = StreamMessage::new(StreamId([7; 16]));
        message.opened = true;
        message.pool = Some(Pool { held: u16::MAX, seen_seq: u32::MAX });
        message.ack = Some(Ack { offset: u64::MAX / 2, window: u64::MAX / 2 });
        message.fin = Some(u64::MAX / 2);
        if max_data > 0 {
            message.data = Some(Data { offset: 0, bytes: vec![0; max_data] });
        }
        message
    }

    #[test]
    fn data_never_needs_more_surbs_than_the_pool_minus_the_reserve() {
        let capacities = [planner().shard_capacity, 100, 998, 30_000];
        for capacity in capacities {
            for (loss, target) in [(0.05, 0.999), (0.0, 0.5), (0.3, 0.999_999), (0.5, 1.0)] {
                let planner = ReplyPlanner { shard_capacity: capacity, loss, target };
                for pool in 0..=300usize {
                    let budget = pool.saturating_sub(RESERVE);
                    let template = worst_message(0);
                    let max_data = planner.max_data(&template, budget);
                    if budget == 0 {
                        assert_eq!(max_data, 0, "pool {pool}: no data with only the reserve");
                        continue;
                    }
                    let message = worst_message(max_data);
                    let len = RESPONSE_HEADER_LEN + message.encoded_len();
                    let (data, parity) = planner
                        .shards(len, budget)
                        .unwrap_or_else(|| panic!("capacity {capacity} pool {pool}: {len} bytes do not fit"));
                    assert!(data + parity <= budget, "capacity {capacity} pool {pool}: {data} + {parity}");
                    assert!(data <= MAX_DATA_SHARDS);
                    assert!(pool - (data + parity) >= RESERVE, "the reserve is kept");
                    // A full message uses every data shard it was planned for.
                    if max_data > 0 {
                        assert_eq!(data, planner.data_shards(budget), "capacity {capacity} pool {pool}");
                    }
                }
            }
        }
    }

    #[test]
    fn data_shards_favour_the_target_over_size() {
        let planner = planner();
        assert_eq!(planner.data_shards(0), 0);
        assert_eq!(planner.data_shards(1), 1, "no parity possible: one data shard");
        // 1 data shard needs 2 parity to reach 0.999 at 5% loss.
        assert_eq!(planner.shards(10, 3), Some((1, 2)));
        assert_eq!(planner.data_shards(3), 1);
        assert_eq!(planner.data_shards(1000), MAX_DATA_SHARDS);
        let (data, parity) = planner.shards(MAX_DATA_SHARDS * planner.shard_capacity, 1000).unwrap();
        assert_eq!(data, MAX_DATA_SHARDS);
        assert!(parity > 0 && parity < 10, "{parity}");
    }

    #[test]
    fn a_control_message_fits_the_reserve_alone() {
        let planner = planner();
        let mut message = worst_message(0);
        message.reset = Some(nox_stream::ResetCode::Idle);
        assert_eq!(planner.shards(RESPONSE_HEADER_LEN + message.encoded_len(), 1), Some((1, 0)));
        assert_eq!(planner.shards(10, 0), None);
        let broken = ReplyPlanner { shard_capacity: 0, ..planner };
        assert_eq!(broken.shards(10, 5), None);
        assert_eq!(broken.max_data(&message, 5), 0);
    }
}
