//! The Loopix client send queue (λ_P): on every tick of a Poisson process, send the next real
//! packet if one is queued, otherwise a cover packet. Emission times are the Poisson process
//! alone; real traffic only decides what fills each slot.

use crate::time::Instant;
use std::collections::VecDeque;
use std::fmt;

use rand_core::RngCore;

use crate::timer::{PoissonTimer, RateError};

/// What fills an emission slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload<T> {
    /// The oldest queued real packet.
    Real(T),
    /// Nothing was queued: send a cover (drop) packet.
    Cover,
}

/// One emission slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emission<T> {
    /// The slot's scheduled instant.
    pub at: Instant,
    /// What to send in it.
    pub payload: Payload<T>,
}

/// The queue is full; the packet is handed back.
pub struct QueueFull<T>(pub T);

impl<T> fmt::Debug for QueueFull<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueueFull(..)")
    }
}

impl<T> fmt::Display for QueueFull<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("send queue is full")
    }
}

impl<T> std::error::Error for QueueFull<T> {}

/// A bounded FIFO of real packets drained by a Poisson process of rate λ_P.
#[derive(Debug, Clone)]
pub struct SendQueue<T, R> {
    queue: VecDeque<T>,
    capacity: usize,
    timer: PoissonTimer<R>,
}

impl<T, R: RngCore> SendQueue<T, R> {
    /// A queue of at most `capacity` real packets, ticking at `rate_per_second` from `start`.
    /// The RNG is used only for the tick times (see [`PoissonTimer`] for why it is owned).
    pub fn new(rate_per_second: f64, capacity: usize, start: Instant, rng: R) -> Result<Self, RateError> {
        Ok(Self { queue: VecDeque::new(), capacity, timer: PoissonTimer::new(rate_per_second, start, rng)? })
    }

    /// Queues a real packet for the next free slot.
    pub fn push(&mut self, packet: T) -> Result<(), QueueFull<T>> {
        if self.queue.len() >= self.capacity {
            return Err(QueueFull(packet));
        }
        self.queue.push_back(packet);
        Ok(())
    }

    /// When the next slot is due.
    pub fn next_emission_at(&self) -> Option<Instant> {
        self.timer.next_at()
    }

    /// The next due slot at `now`, filled with a real packet or cover. Call until `None`.
    pub fn poll(&mut self, now: Instant) -> Option<Emission<T>> {
        let at = self.timer.poll(now)?;
        let payload = match self.queue.pop_front() {
            Some(packet) => Payload::Real(packet),
            None => Payload::Cover,
        };
        Some(Emission { at, payload })
    }

    /// Real packets waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no real packet is waiting.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}
