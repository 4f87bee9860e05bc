//! Exponential reconnect backoff with jitter.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::time::Duration;

/// Reconnect delays: `initial · 2^attempt`, capped at `max`, then drawn
/// uniformly from the upper half ("equal jitter") so that peers that lost
/// a node together do not reconnect in lockstep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// First delay (default 100 ms).
    pub initial: Duration,
    /// Largest delay (default 5 s).
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { initial: Duration::from_millis(100), max: Duration::from_secs(5) }
    }
}

impl Backoff {
    /// The delay before reconnect attempt `attempt` (0-based), with
    /// `jitter` a uniform random `u64`. Pure, for tests.
    pub fn delay(&self, attempt: u32, jitter: u64) -> Duration {
        let exp = self.initial.saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX));
        let capped = exp.min(self.max);
        let nanos = u64::try_from(capped.as_nanos()).unwrap_or(u64::MAX);
        let half = nanos / 2;
        Duration::from_nanos(nanos - half + jitter % (half + 1))
    }
}

/// A random `u64` for jitter (std's per-process random hasher keys; not
/// cryptographic, which jitter does not need).
pub(crate) fn jitter() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(0x6e6f_785f_6c69_6e6b);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_caps_and_jitters_within_bounds() {
        let b = Backoff::default();
        assert_eq!(b.delay(0, 0), Duration::from_millis(50));
        assert_eq!(
            b.delay(0, u64::MAX - 1),
            Duration::from_millis(50) + Duration::from_nanos((u64::MAX - 1) % 50_000_001)
        );
        assert_eq!(b.delay(1, 0), Duration::from_millis(100));
        assert_eq!(b.delay(6, 0), Duration::from_millis(2_500)); // 6.4 s capped to 5 s
        assert_eq!(b.delay(100, 0), Duration::from_millis(2_500));
        for a in 0..40 {
            let d = b.delay(a, jitter());
            assert!(d >= Duration::from_millis(50) && d <= Duration::from_secs(5), "{a}: {d:?}");
        }
        assert_ne!(jitter(), jitter());
    }
}
