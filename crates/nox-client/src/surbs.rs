//! The SURB keys of requests in flight, by SURB id, and a bounded memory
//! of retired ids so that a second reply on a SURB is recognised as such.

use std::collections::{HashMap, VecDeque};

use nox_sphinx::{SurbId, SurbRecovery};

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

/// Live SURB keys (zeroized when removed) and recently retired ids.
#[derive(Default)]
pub(crate) struct SurbTable {
    live: HashMap<SurbId, (RequestId, SurbRecovery)>,
    retired: HashMap<SurbId, Retired>,
    order: VecDeque<SurbId>,
}

impl SurbTable {
    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }

    pub(crate) fn insert(&mut self, id: SurbId, request: RequestId, recovery: SurbRecovery) {
        self.live.insert(id, (request, recovery));
    }

    /// Takes the keys of a SURB for its one use; `Err` tells whether the id
    /// was retired (and why) or never known.
    pub(crate) fn take(&mut self, id: &SurbId) -> Result<(RequestId, SurbRecovery), Option<Retired>> {
        match self.live.remove(id) {
            Some(found) => {
                self.remember(*id, Retired::Used);
                Ok(found)
            }
            None => Err(self.retired.get(id).copied()),
        }
    }

    /// Drops a SURB's keys unused (its request is over).
    pub(crate) fn retire(&mut self, id: &SurbId) {
        if self.live.remove(id).is_some() {
            self.remember(*id, Retired::Dropped);
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
