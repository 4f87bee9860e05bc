//! Monotonic time as a value the host supplies.
//!
//! `std::time::Instant` cannot be built from a number and its `now()` panics on
//! `wasm32-unknown-unknown`, so the pure crates (this one, `nox-client`'s core) take this
//! [`Instant`] instead: a [`Duration`] since an origin the host picked (process start, page
//! load, `performance.timeOrigin` — any fixed point, as long as it stays the same for one core).
//! Only differences and comparisons between instants mean anything, as with the standard type.
//!
//! A native shell keeps one `std::time::Instant` as its origin and converts with
//! [`Instant::from_std`] / [`Instant::to_std`]; a browser host passes
//! `performance.now()` milliseconds to [`Instant::from_millis`].
//!
//! Arithmetic never panics: adding saturates at the largest offset, subtracting at the origin.

use core::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A point in monotonic time: the offset since the host's origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(Duration);

impl Instant {
    /// The host's origin itself.
    pub const ORIGIN: Self = Self(Duration::ZERO);

    /// The instant `offset` after the host's origin.
    pub const fn from_offset(offset: Duration) -> Self {
        Self(offset)
    }

    /// The instant `ms` milliseconds after the host's origin (a browser's `performance.now()`,
    /// rounded down by the caller to whole milliseconds).
    pub const fn from_millis(ms: u64) -> Self {
        Self(Duration::from_millis(ms))
    }

    /// The offset since the host's origin.
    pub const fn offset(self) -> Duration {
        self.0
    }

    /// `t` seen from `origin`: a native shell's conversion (`origin` is the
    /// `std::time::Instant` it took once; an instant before it maps to the origin).
    pub fn from_std(origin: std::time::Instant, t: std::time::Instant) -> Self {
        Self(t.saturating_duration_since(origin))
    }

    /// This instant as a `std::time::Instant`, for a native shell whose origin is `origin` (to
    /// sleep until it). `None` if it is not representable (far beyond any real deadline).
    pub fn to_std(self, origin: std::time::Instant) -> Option<std::time::Instant> {
        origin.checked_add(self.0)
    }

    /// Time from `earlier` to `self`; zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// Time from `earlier` to `self`, or `None` if `earlier` is later.
    pub fn checked_duration_since(self, earlier: Self) -> Option<Duration> {
        self.0.checked_sub(earlier.0)
    }

    /// `self + d`, or `None` on overflow.
    pub fn checked_add(self, d: Duration) -> Option<Self> {
        self.0.checked_add(d).map(Self)
    }

    /// `self - d`, or `None` before the origin.
    pub fn checked_sub(self, d: Duration) -> Option<Self> {
        self.0.checked_sub(d).map(Self)
    }
}

impl Add<Duration> for Instant {
    type Output = Self;
    /// Saturates at the largest representable instant.
    fn add(self, d: Duration) -> Self {
        Self(self.0.saturating_add(d))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Self;
    /// Saturates at the origin.
    fn sub(self, d: Duration) -> Self {
        Self(self.0.saturating_sub(d))
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl Sub for Instant {
    type Output = Duration;
    /// Saturates at zero, like `std::time::Instant` since Rust 1.60.
    fn sub(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_panicking() {
        let t = Instant::from_millis(1_500);
        assert_eq!(t.offset(), Duration::from_millis(1_500));
        assert_eq!(t + Duration::from_millis(500), Instant::from_millis(2_000));
        assert_eq!(t - Duration::from_secs(10), Instant::ORIGIN);
        assert_eq!(Instant::ORIGIN - t, Duration::ZERO);
        assert_eq!(t - Instant::ORIGIN, Duration::from_millis(1_500));
        assert_eq!(Instant::from_offset(Duration::MAX) + Duration::from_secs(1), Instant::from_offset(Duration::MAX));
        assert_eq!(Instant::from_offset(Duration::MAX).checked_add(Duration::from_nanos(1)), None);
        assert_eq!(Instant::ORIGIN.checked_sub(Duration::from_nanos(1)), None);
        assert_eq!(Instant::ORIGIN.checked_duration_since(t), None);
        assert_eq!(t.checked_duration_since(Instant::ORIGIN), Some(Duration::from_millis(1_500)));
        let mut u = t;
        u += Duration::from_millis(1);
        u -= Duration::from_millis(2);
        assert_eq!(u, Instant::from_millis(1_499));
        assert!(Instant::ORIGIN < t && t < u + Duration::from_millis(2));
    }

    #[test]
    #[allow(clippy::disallowed_methods, reason = "a real std::time::Instant to convert")]
    fn std_conversion_round_trips_through_the_origin() {
        let origin = std::time::Instant::now();
        let later = origin + Duration::from_millis(1_234);
        let t = Instant::from_std(origin, later);
        assert_eq!(t, Instant::from_millis(1_234));
        assert_eq!(t.to_std(origin), Some(later));
        // Before the origin: clamped to it.
        assert_eq!(Instant::from_std(later, origin), Instant::ORIGIN);
        assert_eq!(Instant::from_offset(Duration::MAX).to_std(origin), None);
    }
}
