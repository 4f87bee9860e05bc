//! A Poisson process in virtual time: exponential gaps drawn from an RNG the timer owns.

use std::time::Duration;

use crate::time::Instant;

use rand_core::RngCore;

/// An invalid rate.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("rate must be finite and non-negative (and at most 10⁹ per second), got {0}")]
pub struct RateError(pub f64);

/// Converts a rate in events per second to the mean gap; `None` for a zero rate (disabled).
pub(crate) fn mean_gap(rate_per_second: f64) -> Result<Option<Duration>, RateError> {
    if !(rate_per_second.is_finite() && (0.0..=1e9).contains(&rate_per_second)) {
        return Err(RateError(rate_per_second));
    }
    if rate_per_second == 0.0 {
        return Ok(None);
    }
    Ok(Some(Duration::from_nanos((1e9 / rate_per_second).round() as u64)))
}

/// Fires at the points of a Poisson process of rate λ: gaps are i.i.d. Exp(1/λ).
///
/// Each next instant is drawn from the *scheduled* instant, not from when the caller polled, so
/// the emitted times are the Poisson process itself whatever the polling latency; a caller that
/// polls late gets every missed firing, one per `poll`, with its scheduled instant.
///
/// The timer owns its RNG. That is deliberate: if the caller's packet-building code shared the
/// same RNG, the timing draws would shift with how much randomness real and cover packets
/// consume, and emission times would depend on traffic.
#[derive(Debug, Clone)]
pub struct PoissonTimer<R> {
    mean_gap: Option<Duration>,
    next_at: Option<Instant>,
    rng: R,
}

impl<R: RngCore> PoissonTimer<R> {
    /// A timer of `rate_per_second` whose first firing is one exponential gap after `start`.
    /// A zero rate gives a timer that never fires.
    pub fn new(rate_per_second: f64, start: Instant, mut rng: R) -> Result<Self, RateError> {
        let mean_gap = mean_gap(rate_per_second)?;
        let next_at = mean_gap.map(|mean| advance(start, nox_stats::exponential::sample(&mut rng, mean)));
        Ok(Self { mean_gap, next_at, rng })
    }

    /// When the timer fires next (`None` if disabled).
    pub fn next_at(&self) -> Option<Instant> {
        self.next_at
    }

    /// The mean gap between firings (`None` if disabled).
    pub fn mean_gap(&self) -> Option<Duration> {
        self.mean_gap
    }

    /// If the next firing is due (`<= now`), consumes it and returns its scheduled instant.
    pub fn poll(&mut self, now: Instant) -> Option<Instant> {
        let (due, mean) = (self.next_at?, self.mean_gap?);
        if due > now {
            return None;
        }
        self.next_at = Some(advance(due, nox_stats::exponential::sample(&mut self.rng, mean)));
        Some(due)
    }
}

/// `at + gap`, saturating instead of panicking.
pub(crate) fn advance(at: Instant, gap: Duration) -> Instant {
    at.checked_add(gap).unwrap_or(at)
}
