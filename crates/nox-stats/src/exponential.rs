//! The exponential distribution: one sampler shared by mixing delays and cover timers.

use std::time::Duration;

use rand_core::RngCore;

/// Draws a duration from the exponential distribution with the given mean (rate `1/mean`).
///
/// Inverse transform: `-mean · ln U` with `U` uniform on `(0, 1]` built from 53 random bits, so
/// the logarithm is always finite and the largest possible draw is about `36.7 · mean`. A zero
/// mean gives `Duration::ZERO`. The product is computed in nanoseconds and saturates at
/// `u64::MAX` nanoseconds (about 584 years) instead of panicking.
pub fn sample<R: RngCore + ?Sized>(rng: &mut R, mean: Duration) -> Duration {
    if mean.is_zero() {
        return Duration::ZERO;
    }
    let uniform = uniform_open_closed(rng);
    let mean_nanos = mean.as_nanos() as f64;
    let nanos = -uniform.ln() * mean_nanos;
    // `as` on f64 -> u64 saturates (and maps NaN to 0), so this cannot panic.
    Duration::from_nanos(nanos as u64)
}

/// A uniform `f64` on `(0, 1]` with 53 bits of precision.
pub fn uniform_open_closed<R: RngCore + ?Sized>(rng: &mut R) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    ((rng.next_u64() >> 11) + 1) as f64 * SCALE
}

/// The CDF of the exponential distribution with mean `mean`: `1 - e^{-x/mean}` for `x >= 0`.
///
/// A zero mean is the point mass at zero.
pub fn cdf(x: f64, mean: f64) -> f64 {
    if x < 0.0 {
        0.0
    } else if mean <= 0.0 {
        1.0
    } else {
        1.0 - (-x / mean).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn zero_mean_gives_zero() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        assert_eq!(sample(&mut rng, Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn sample_mean_is_close_to_the_mean() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let mean = Duration::from_millis(10);
        let n = 20_000;
        let total: f64 = (0..n).map(|_| sample(&mut rng, mean).as_secs_f64()).sum();
        let empirical = total / n as f64;
        // Standard error of the mean is mean/sqrt(n) = 0.7 % of the mean; allow 4 sigma.
        assert!((empirical - 0.010).abs() < 0.010 * 4.0 / (n as f64).sqrt(), "{empirical}");
    }

    #[test]
    fn uniform_is_never_zero_and_at_most_one() {
        struct Extreme(u64);
        impl RngCore for Extreme {
            fn next_u32(&mut self) -> u32 {
                self.0 as u32
            }
            fn next_u64(&mut self) -> u64 {
                self.0
            }
            fn fill_bytes(&mut self, dst: &mut [u8]) {
                dst.fill(self.0 as u8);
            }
        }
        assert!(uniform_open_closed(&mut Extreme(0)) > 0.0);
        assert!(uniform_open_closed(&mut Extreme(u64::MAX)) <= 1.0);
        let longest = sample(&mut Extreme(0), Duration::from_secs(1));
        assert!(longest > Duration::from_secs(36) && longest < Duration::from_secs(37));
        assert_eq!(sample(&mut Extreme(u64::MAX), Duration::from_secs(1)), Duration::ZERO);
        // Saturates instead of panicking for absurd means.
        let _ = sample(&mut Extreme(0), Duration::MAX);
    }

    #[test]
    fn cdf_edges() {
        assert_eq!(cdf(-1.0, 1.0), 0.0);
        assert_eq!(cdf(0.0, 1.0), 0.0);
        assert!((cdf(1.0, 1.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-15);
        assert_eq!(cdf(0.0, 0.0), 1.0);
    }
}
