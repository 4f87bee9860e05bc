//! The SURB keys of requests in flight, by SURB id, with the reply gateway
//! each SURB names, and a bounded memory of retired ids so that a second
//! reply on a SURB is recognised as such.

use std::collections::{HashMap, VecDeque};

use nox_sphinx::{NodeId, SurbId, SurbRecovery};

use crate::core::RequestId;

/// Retired ids remembered (about 1 MiB at most).
const REMEMBERED: usize = 1 << 16;

/// Why a SURB id is no longer usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retired {
    /// A reply already arrived on it: SURBs are single-use.
    Used,
    /// Its request completed or timed out before any reply used it.
    Dropped,
}

/// One live SURB: its request (or stream), the gateway it names, its keys.
struct Live {
    request: RequestId,
    gateway: NodeId,
    recovery: SurbRecovery,
}

/// Live SURB keys (zeroized when removed) and recently retired ids.
#[derive(Default)]
pub(crate) struct SurbTable {
    live: HashMap<SurbId, Live>,
    /// Live SURBs per reply gateway they name (no zero entries).
    per_gateway: HashMap<NodeId, usize>,
    retired: HashMap<SurbId, Retired>,
    order: VecDeque<SurbId>,
}

impl SurbTable {
    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }

    /// Keeps the keys of a SURB of `request` whose last hop is `gateway`.
    pub(crate) fn insert(&mut self, id: SurbId, request: RequestId, gateway: NodeId, recovery: SurbRecovery) {
        *self.per_gateway.entry(gateway).or_default() += 1;
        if let Some(old) = self.live.insert(id, Live { request, gateway, recovery }) {
            // A SURB id drawn twice (128 random bits): keep the counts exact.
            self.uncount(&old.gateway);
        }
    }

    /// Live SURBs naming `gateway` as their last hop.
    pub(crate) fn live_for(&self, gateway: &NodeId) -> usize {
        self.per_gateway.get(gateway).copied().unwrap_or(0)
    }

    /// Takes the keys of a SURB for its one use; `Err` tells whether the id
    /// was retired (and why) or never known.
    pub(crate) fn take(&mut self, id: &SurbId) -> Result<(RequestId, SurbRecovery), Option<Retired>> {
        match self.live.remove(id) {
            Some(found) => {
                self.uncount(&found.gateway);
                self.remember(*id, Retired::Used);
                Ok((found.request, found.recovery))
            }
            None => Err(self.retired.get(id).copied()),
        }
    }

    /// Drops a SURB's keys unused (its request is over).
    pub(crate) fn retire(&mut self, id: &SurbId) {
        if let Some(found) = self.live.remove(id) {
            self.uncount(&found.gateway);
            self.remember(*id, Retired::Dropped);
        }
    }

    fn uncount(&mut self, gateway: &NodeId) {
        if let Some(n) = self.per_gateway.get_mut(gateway) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_gateway.remove(gateway);
            }
        }
    }

    fn remember(&mut self, id: SurbId, why: Retired) {
        if self.retired.insert(id, why).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.retired.remove(&old);
            }
        }
    }
}
