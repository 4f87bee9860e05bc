//! Reply gateways the client has moved away from but still owes replies to
//! (docs/spec/link.md §2.4, "Changing gateways").
//!
//! A SURB names its reply gateway as its last hop when it is built, so the
//! replies of requests (and stream SURBs) sent before a gateway change come
//! back through the old gateway. The core remembers, most recent first, the
//! gateways it left while SURB keys naming them were live; the shell keeps a
//! reply link to each (with the same mailbox) until no live SURB names it.
//! At most [`MAX_OLD_GATEWAYS`] are kept: an older one is given up (its
//! requests then time out as if their replies were lost).
//!
//! It also holds [`GatewayPatience`], the hysteresis of the gateway choice:
//! when loop health may make the client leave its reply gateway.

use std::collections::VecDeque;
use std::time::Duration;

use nox_cover::Instant;
use nox_sphinx::NodeId;

/// Most former reply gateways whose links the client keeps open for the
/// replies still owed through them.
pub const MAX_OLD_GATEWAYS: usize = 2;

/// Former reply gateways, most recent first, at most [`MAX_OLD_GATEWAYS`].
#[derive(Debug, Default)]
pub(crate) struct FormerGateways {
    old: VecDeque<NodeId>,
}

impl FormerGateways {
    /// The reply gateway changed from `from` to `to`. `from` is kept if SURBs
    /// naming it are still live (`owed`); `to` is no longer a former one.
    /// Returns the gateways given up for the bound, if any.
    pub(crate) fn moved(&mut self, from: NodeId, to: NodeId, owed: bool) -> Vec<NodeId> {
        self.old.retain(|g| *g != from && *g != to);
        if owed && from != to {
            self.old.push_front(from);
        }
        let mut evicted = Vec::new();
        while self.old.len() > MAX_OLD_GATEWAYS {
            evicted.extend(self.old.pop_back());
        }
        evicted
    }

    /// Forgets the gateways no live SURB names any more.
    pub(crate) fn release(&mut self, mut owed: impl FnMut(&NodeId) -> bool) {
        self.old.retain(|g| owed(g));
    }

    /// The former gateways, most recent first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &NodeId> + '_ {
        self.old.iter()
    }
}

/// Hysteresis of the gateway choice: the client leaves its reply gateway
/// only once loop health has marked it degraded, without a break, for
/// `patience` (the loop return timeout), counted from the first health
/// refresh that saw it degraded; a refresh that sees it healthy again resets
/// the count, and so does a move.
///
/// Why one return timeout: a loss is known only a return timeout after its
/// loop was sent, so the losses that degrade a gateway are those of loops
/// sent up to a timeout earlier — after a move, loops lost through the
/// *previous* gateway (on whose paths the new one was an exit) keep landing
/// on the new one for a timeout. Once the gateway has stayed degraded for a
/// further timeout, every loss counted in that time is of a loop sent while
/// it was already suspect (charged to the degraded nodes alone), and any
/// loop through it that worked has returned and restored it: a gateway that
/// is still degraded then is really failing. Without it, a blip (a burst of
/// late loops on a loaded machine, the tail of the previous gateway's
/// losses) sends the client straight back to a gateway it just left: the
/// flip-flop costs the replies owed through the one it leaves once more
/// than [`MAX_OLD_GATEWAYS`] are kept, and a reply link per move.
///
/// Pure: time is passed in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GatewayPatience {
    patience: Duration,
    /// Since when the current gateway has been seen degraded without a break.
    degraded_since: Option<Instant>,
}

impl GatewayPatience {
    /// No degradation seen yet; the client leaves a gateway degraded for `patience`.
    pub(crate) fn new(patience: Duration) -> Self {
        Self { patience, degraded_since: None }
    }

    /// A health refresh at `now` found the current gateway `degraded` (or
    /// not): whether the client leaves it now.
    pub(crate) fn leave(&mut self, degraded: bool, now: Instant) -> bool {
        if !degraded {
            self.degraded_since = None;
            return false;
        }
        let since = *self.degraded_since.get_or_insert(now);
        now.saturating_duration_since(since) >= self.patience
    }

    /// The client moved to another gateway: its health is counted afresh.
    pub(crate) fn moved(&mut self) {
        self.degraded_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(n: u8) -> NodeId {
        NodeId([n; 32])
    }

    #[test]
    fn keeps_owed_gateways_most_recent_first_and_at_most_two() {
        let mut former = FormerGateways::default();
        assert!(former.moved(node(1), node(2), true).is_empty());
        assert!(former.moved(node(2), node(3), true).is_empty());
        assert_eq!(former.iter().copied().collect::<Vec<_>>(), [node(2), node(1)]);
        // A third old gateway pushes the oldest out.
        assert_eq!(former.moved(node(3), node(4), true), [node(1)]);
        assert_eq!(former.iter().copied().collect::<Vec<_>>(), [node(3), node(2)]);
    }

    #[test]
    fn a_gateway_owed_nothing_is_not_kept_and_one_moved_back_to_is_current() {
        let mut former = FormerGateways::default();
        former.moved(node(1), node(2), false);
        assert_eq!(former.iter().count(), 0, "nothing owed: nothing kept");
        former.moved(node(2), node(1), true);
        assert_eq!(former.iter().copied().collect::<Vec<_>>(), [node(2)]);
        // Back to 2: it is the current gateway again, not a former one.
        former.moved(node(1), node(2), true);
        assert_eq!(former.iter().copied().collect::<Vec<_>>(), [node(1)]);
        former.release(|g| *g != node(1));
        assert_eq!(former.iter().count(), 0, "released once nothing is owed");
    }
}

#[cfg(test)]
mod patience_tests {
    use super::*;

    const PATIENCE: Duration = Duration::from_secs(5);

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    /// A small deterministic generator (xorshift), enough to draw signal
    /// sequences without a dependency.
    struct Draw(u64);

    impl Draw {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    #[test]
    fn no_flip_flop_under_alternating_health_signals() {
        // Property: whatever the signals, the gateway is left only at a refresh at which it
        // has been seen degraded without a break for at least PATIENCE (counted from the first
        // refresh that saw it degraded), and then it is left at once.
        for seed in 1..=200u64 {
            let mut draw = Draw(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut patience = GatewayPatience::new(PATIENCE);
            let mut now = 0u64;
            let mut run_start: Option<u64> = None;
            let mut left = 0;
            for _ in 0..2_000 {
                now += 1 + draw.below(400);
                // Alternating: short degraded runs mostly, a long one now and then.
                let degraded = draw.below(3) != 0;
                let expected = if degraded {
                    let start = *run_start.get_or_insert(now);
                    now - start >= PATIENCE.as_millis() as u64
                } else {
                    run_start = None;
                    false
                };
                let leave = patience.leave(degraded, at(now));
                assert_eq!(leave, expected, "seed {seed} at {now} ms");
                if leave {
                    left += 1;
                    patience.moved();
                    run_start = None;
                }
            }
            assert!(left < 2_000 / 10, "seed {seed}: left {left} times");
        }
    }

    #[test]
    fn degraded_runs_shorter_than_the_patience_never_move_the_client() {
        // A gateway that flaps — degraded for 4.9 s, healthy for one refresh, again and
        // again — is never left: each recovery shows it works.
        let mut patience = GatewayPatience::new(PATIENCE);
        let mut now = 0;
        for _ in 0..100 {
            for _ in 0..49 {
                now += 100;
                assert!(!patience.leave(true, at(now)), "left at {now} ms");
            }
            now += 100;
            assert!(!patience.leave(false, at(now)));
        }
    }

    #[test]
    fn a_gateway_degraded_for_the_whole_patience_is_left_and_the_next_gets_its_own() {
        let mut patience = GatewayPatience::new(PATIENCE);
        assert!(!patience.leave(false, at(0)));
        // First seen degraded at 1 s: kept until 6 s.
        assert!(!patience.leave(true, at(1_000)));
        assert!(!patience.leave(true, at(5_999)));
        assert!(patience.leave(true, at(6_000)), "degraded for the whole patience: left");
        patience.moved();
        // The gateway moved to is degraded too (every gateway is): it gets its own patience,
        // counted from its first degraded refresh, not from the old one's.
        assert!(!patience.leave(true, at(6_100)));
        assert!(!patience.leave(true, at(11_000)));
        assert!(patience.leave(true, at(11_100)));
    }
}
