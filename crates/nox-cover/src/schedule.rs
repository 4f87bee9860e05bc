//! Node-initiated cover (paper §4.4): loop cover at λ_L and drop cover at λ_D, two independent
//! Poisson processes merged.

use crate::time::Instant;

use rand_core::RngCore;

use crate::timer::{PoissonTimer, RateError};

/// The kind of cover packet to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoverKind {
    /// A loop through the full path back to this node (also a health probe).
    Loop,
    /// A packet to a random exit, discarded there.
    Drop,
}

/// One due cover packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoverEvent {
    /// What to send.
    pub kind: CoverKind,
    /// The instant the Poisson process scheduled it for (≤ the `now` it was polled at).
    pub scheduled_at: Instant,
}

/// Loop and drop cover timers. Each stream owns its RNG (see [`PoissonTimer`]).
#[derive(Debug, Clone)]
pub struct CoverScheduler<R> {
    loops: PoissonTimer<R>,
    drops: PoissonTimer<R>,
}

impl<R: RngCore> CoverScheduler<R> {
    /// Timers for `loop_rate` (λ_L) and `drop_rate` (λ_D) per second, starting at `start`, with
    /// one RNG per stream. The paper's defaults are 0.05 and 0.05.
    pub fn new(loop_rate: f64, drop_rate: f64, start: Instant, loop_rng: R, drop_rng: R) -> Result<Self, RateError> {
        Ok(Self {
            loops: PoissonTimer::new(loop_rate, start, loop_rng)?,
            drops: PoissonTimer::new(drop_rate, start, drop_rng)?,
        })
    }

    /// When the next cover packet is due (the caller's next timer).
    pub fn next_event_at(&self) -> Option<Instant> {
        match (self.loops.next_at(), self.drops.next_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest due cover event, if any is due at `now`. Call until `None`.
    pub fn poll(&mut self, now: Instant) -> Option<CoverEvent> {
        let loop_first = match (self.loops.next_at(), self.drops.next_at()) {
            (Some(a), Some(b)) => a <= b,
            (a, _) => a.is_some(),
        };
        if loop_first {
            self.loops.poll(now).map(|scheduled_at| CoverEvent { kind: CoverKind::Loop, scheduled_at })
        } else {
            self.drops.poll(now).map(|scheduled_at| CoverEvent { kind: CoverKind::Drop, scheduled_at })
        }
    }
}
