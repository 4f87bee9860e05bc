//! Client cover profiles: when a client's λ_P slots carry cover, and how many.
//!
//! A profile never moves a slot and never holds back a real packet. The send queue keeps its
//! Poisson process of rate λ_P ([`crate::SendQueue`]); a real packet (or a stream message) takes
//! the next slot exactly as without a profile. The profile only decides, at a slot with nothing
//! real to carry, whether a cover packet goes out or the slot stays silent ([`CoverGate`]):
//!
//! - [`CoverProfile::AlwaysOn`]: every free slot carries cover (Loopix as specified).
//! - [`CoverProfile::Wallet`]: cover only during a *session*. A session starts with the first
//!   real send outside one and lasts until `max(last real send + idle_tail, start + min_session)`;
//!   then the client is silent until the next real send.
//! - [`CoverProfile::Mobile`]: a byte budget per day. At each free slot the gate computes the
//!   cover rate that spends the day's remaining budget (real packets count against it) over the
//!   day's remaining time, capped at λ_P, and keeps the slot with probability rate / λ_P (a
//!   thinned Poisson process). Cover never makes the day's bytes exceed the budget; real
//!   packets are never refused, so real traffic alone may.

use std::time::Duration;

use rand_core::RngCore;

use crate::time::Instant;
use crate::timer::mean_gap;

/// The wallet profile's session padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalletProfile {
    /// A session lasts at least this long from its first real send (default 120 s).
    pub min_session: Duration,
    /// And at least this long after its last real send (default 30 s).
    pub idle_tail: Duration,
}

impl Default for WalletProfile {
    fn default() -> Self {
        Self { min_session: Duration::from_secs(120), idle_tail: Duration::from_secs(30) }
    }
}

/// The mobile profile's default budget, bytes of packets a day: 125 MB, 30,518 packets of 4 KiB
/// (0.353 packets/s).
pub const MOBILE_DEFAULT_BUDGET: u64 = 125_000_000;

/// The mobile profile's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MobileProfile {
    /// Upstream bytes per day, cover and real together (default 125 MB: at the 4 KiB default
    /// packet length the 0.35 packets/s that the 1 GB budget bought at 32 KiB, so the same
    /// simulated anonymity, docs/benchmarks/cover.md).
    pub budget_bytes_per_day: u64,
    /// The accounting period (default 24 h, counted from the client's start).
    pub day: Duration,
}

impl Default for MobileProfile {
    fn default() -> Self {
        Self { budget_bytes_per_day: MOBILE_DEFAULT_BUDGET, day: Duration::from_secs(86_400) }
    }
}

/// A named set of the client's cover parameters (`nox client --profile NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CoverProfile {
    /// Cover in every free slot while the client runs.
    #[default]
    AlwaysOn,
    /// Cover only during padded sessions.
    Wallet(WalletProfile),
    /// Cover thinned to a daily byte budget.
    Mobile(MobileProfile),
}

/// The profile names [`CoverProfile::from_name`] accepts.
pub const PROFILE_NAMES: [&str; 3] = ["always-on", "wallet", "mobile"];

/// An unknown profile name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown cover profile {0:?} (expected always-on, wallet or mobile)")]
pub struct UnknownProfile(pub String);

/// A profile that cannot run.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ProfileError {
    /// λ_P is not a usable rate (profiles other than `always-on` need λ_P > 0).
    #[error("cover profile needs a finite positive λ_P, got {0}")]
    Rate(f64),
    /// The mobile profile's day is zero, or its packet length is zero.
    #[error("mobile profile needs a non-zero day and packet length")]
    Degenerate,
}

impl CoverProfile {
    /// The profile of that name with its default parameters.
    pub fn from_name(name: &str) -> Result<Self, UnknownProfile> {
        match name {
            "always-on" => Ok(Self::AlwaysOn),
            "wallet" => Ok(Self::Wallet(WalletProfile::default())),
            "mobile" => Ok(Self::Mobile(MobileProfile::default())),
            other => Err(UnknownProfile(other.to_owned())),
        }
    }

    /// The profile's name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::AlwaysOn => "always-on",
            Self::Wallet(_) => "wallet",
            Self::Mobile(_) => "mobile",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Session {
    start: Instant,
    last_real: Instant,
}

/// The pure per-slot decision of a [`CoverProfile`]: no clock, times are passed in. It owns
/// its own RNG (the mobile profile's thinning coin), apart from the slot timer's.
#[derive(Debug, Clone)]
pub struct CoverGate<R> {
    profile: CoverProfile,
    rate: f64,
    packet_bytes: u64,
    origin: Instant,
    rng: R,
    session: Option<Session>,
    day_index: u64,
    spent_today: u64,
}

impl<R: RngCore> CoverGate<R> {
    /// A gate for slots of rate `rate` (λ_P) carrying packets of `packet_bytes`, from `start`.
    pub fn new(
        profile: CoverProfile,
        rate: f64,
        packet_bytes: u64,
        start: Instant,
        rng: R,
    ) -> Result<Self, ProfileError> {
        if !matches!(mean_gap(rate), Ok(Some(_))) {
            return Err(ProfileError::Rate(rate));
        }
        if let CoverProfile::Mobile(m) = profile
            && (m.day.is_zero() || packet_bytes == 0)
        {
            return Err(ProfileError::Degenerate);
        }
        Ok(Self { profile, rate, packet_bytes, origin: start, rng, session: None, day_index: 0, spent_today: 0 })
    }

    /// The profile.
    pub fn profile(&self) -> CoverProfile {
        self.profile
    }

    /// The application used the client at `now` (a request was queued): a wallet session
    /// starts if none is running, and its idle tail restarts.
    pub fn on_use(&mut self, now: Instant) {
        if let CoverProfile::Wallet(w) = self.profile {
            match &mut self.session {
                Some(s) if now < session_end(s, &w) => s.last_real = s.last_real.max(now),
                _ => self.session = Some(Session { start: now, last_real: now }),
            }
        }
    }

    /// A real packet left in the slot at `at`: it counts against the mobile budget and, like
    /// [`Self::on_use`], keeps a wallet session going.
    pub fn on_real_sent(&mut self, at: Instant) {
        self.on_use(at);
        if let CoverProfile::Mobile(m) = self.profile {
            self.roll_day(at, &m);
            self.spent_today = self.spent_today.saturating_add(self.packet_bytes);
        }
    }

    /// A free slot at `at`: whether it carries a cover packet (counted if so) or stays silent.
    pub fn allow_cover(&mut self, at: Instant) -> bool {
        match self.profile {
            CoverProfile::AlwaysOn => true,
            CoverProfile::Wallet(w) => match self.session {
                Some(s) if at >= s.start && at < session_end(&s, &w) => true,
                Some(s) if at >= session_end(&s, &w) => {
                    self.session = None;
                    false
                }
                _ => false,
            },
            CoverProfile::Mobile(m) => {
                self.roll_day(at, &m);
                let rate = self.budget_rate(at, &m);
                if rate <= 0.0 {
                    return false;
                }
                let keep = rate / self.rate;
                if keep < 1.0 && unit(&mut self.rng) >= keep {
                    return false;
                }
                self.spent_today += self.packet_bytes;
                true
            }
        }
    }

    /// The cover rate (packets per second) the profile runs at `at`: λ_P, 0, or the mobile
    /// budget's rate.
    pub fn cover_rate_at(&mut self, at: Instant) -> f64 {
        match self.profile {
            CoverProfile::AlwaysOn => self.rate,
            CoverProfile::Wallet(w) => match self.session {
                Some(s) if at >= s.start && at < session_end(&s, &w) => self.rate,
                _ => 0.0,
            },
            CoverProfile::Mobile(m) => {
                self.roll_day(at, &m);
                self.budget_rate(at, &m)
            }
        }
    }

    /// The running wallet session as `(start, end)` (the end moves with later real sends).
    pub fn session(&self) -> Option<(Instant, Instant)> {
        match (self.profile, self.session) {
            (CoverProfile::Wallet(w), Some(s)) => Some((s.start, session_end(&s, &w))),
            _ => None,
        }
    }

    /// Bytes counted against the current mobile day.
    pub fn spent_today(&self) -> u64 {
        self.spent_today
    }

    fn roll_day(&mut self, at: Instant, m: &MobileProfile) {
        let index = day_index(self.origin, at, m.day);
        if index > self.day_index {
            self.day_index = index;
            self.spent_today = 0;
        }
    }

    /// min(λ_P, remaining packets / remaining seconds of the day); 0 when another cover
    /// packet would overrun the budget.
    fn budget_rate(&self, at: Instant, m: &MobileProfile) -> f64 {
        let remaining = m.budget_bytes_per_day.saturating_sub(self.spent_today);
        if remaining < self.packet_bytes {
            return 0.0;
        }
        let day_end = day_start(self.origin, self.day_index, m.day) + m.day;
        let left = day_end.saturating_duration_since(at).as_secs_f64().max(1e-3);
        ((remaining / self.packet_bytes) as f64 / left).min(self.rate)
    }
}

fn session_end(s: &Session, w: &WalletProfile) -> Instant {
    (s.last_real + w.idle_tail).max(s.start + w.min_session)
}

fn day_index(origin: Instant, at: Instant, day: Duration) -> u64 {
    let since = at.saturating_duration_since(origin).as_nanos();
    u64::try_from(since / day.as_nanos().max(1)).unwrap_or(u64::MAX)
}

fn day_start(origin: Instant, index: u64, day: Duration) -> Instant {
    let offset = day.as_nanos().saturating_mul(u128::from(index));
    origin + Duration::from_nanos(u64::try_from(offset).unwrap_or(u64::MAX))
}

/// A uniform draw in [0, 1).
fn unit<R: RngCore>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}
