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

use std::collections::VecDeque;

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
