//! Small sampling helpers on an injected `RngCore`.

use nox_stats::exponential::uniform_open_closed;
use rand_core::RngCore;

/// An Exp(mean) draw in microseconds (0 when `mean` ≤ 0).
pub(crate) fn exponential_us<R: RngCore + ?Sized>(rng: &mut R, mean_us: f64) -> f64 {
    if mean_us <= 0.0 {
        return 0.0;
    }
    -uniform_open_closed(rng).ln() * mean_us
}

/// A uniform `f64` on `[0, 1)`.
pub(crate) fn unit<R: RngCore + ?Sized>(rng: &mut R) -> f64 {
    1.0 - uniform_open_closed(rng)
}

/// A uniform index in `0..n` (`n > 0`); the modulo bias is below 2⁻³² for the sizes used here.
pub(crate) fn index<R: RngCore + ?Sized>(rng: &mut R, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// A Poisson(mean) draw by counting unit-rate exponential gaps (fine for the small means here).
pub(crate) fn poisson<R: RngCore + ?Sized>(rng: &mut R, mean: f64) -> u64 {
    let mut count = 0;
    let mut elapsed = exponential_us(rng, 1.0);
    while elapsed < mean {
        count += 1;
        elapsed += exponential_us(rng, 1.0);
    }
    count
}
