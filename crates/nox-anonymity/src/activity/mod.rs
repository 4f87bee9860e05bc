//! Realistic client activity at scale: who sends when, under the client profiles the real code
//! runs, and the sender anonymity a global passive adversary (GPA) is left with at 100 to
//! 10,000 users (design: `docs/design/anonymity-metrics.md`; figures:
//! `docs/benchmarks/anonymity.md`, "Anonymity at scale").
//!
//! **Activity.** Users are idle most of the time; a user opens its wallet in *sessions*
//! (Poisson, one every [`ActivityConfig::session_interval_s`] on average), each a burst of
//! [`ActivityConfig::requests_per_session`] requests spaced Exp([`ActivityConfig::request_gap_s`]).
//! One request is one packet (a 64-byte JSON-RPC request fits one Sphinx payload).
//!
//! **Profiles** ([`Profile`]), as `nox-client` sends:
//! - [`Profile::AlwaysOn`]: substitution cover at λ_P while the client runs (`nox client`'s
//!   daemon): packets leave in Poisson(λ_P) slots, a real packet takes the next free slot, the
//!   other slots carry loop or drop cover (no destination emission at the exit).
//! - [`Profile::Wallet`] (`nox client --profile wallet`): the same, but cover only during a
//!   session, from its first request until `max(start + min_session, last request +
//!   idle_tail)` ([`ActivityConfig::min_session_s`], [`ActivityConfig::idle_tail_s`]: 120 s
//!   and 30 s as shipped); outside a session it sends nothing.
//! - [`Profile::Mobile`] (`nox client --profile mobile`): a byte budget per day spent evenly as
//!   a thinned Poisson process of cover at [`ActivityConfig::mobile_rate_per_s`] (capped at
//!   λ_P: the shipped 125 MB/day of 4 KiB packets is 0.35/s); a real packet still takes the next
//!   λ_P slot.
//! - [`Profile::NoCover`]: each request leaves at once; nothing else is sent.
//!
//! **Two adversaries / two simulators.**
//! - [`simulate_substitution`] builds the full link-level [`Observation`] (every client send,
//!   every hop on a random `layers × width` route, Exp(μ) per hop after a constant processing
//!   time), scored by the hop-by-hop tracer of [`crate::sender_entropy`]. Exact, but its cost
//!   grows with (users × λ_P)² per unit of time: used at 10–100 users.
//! - [`pool_sender_anonymity`] is the **pool (mean-field) model**: the adversary weights every
//!   client send in the window before a delivery by the density of the end-to-end delay
//!   (`L·p + Gamma(L, μ)`), ignoring which nodes the packets crossed. It is the limit the
//!   hop-by-hop tracer reaches when every node holds many packets per μ (it can only do better
//!   where nodes are nearly empty), and its cost is linear in the users sending in one window:
//!   used at 100–10,000 users. The gap between the two at the same N is measured by
//!   `nox bench anonymity-scale` and stated beside the figures.
//!
//! **Files.** This module holds the population ([`Profile`], [`ActivityConfig`] and its
//! rates); `pool_model.rs` the mean-field scorer ([`pool_sender_anonymity`], [`ScaleReport`]);
//! `substitution.rs` the link-level simulator ([`simulate_substitution`],
//! [`SubstitutionConfig`]); `tests.rs` the tests of all three.

use serde::Serialize;

use rand_core::RngCore;

use crate::AnonymityError;
use crate::random::exponential_us;

mod pool_model;
mod substitution;
#[cfg(test)]
mod tests;

pub use pool_model::{ScaleReport, pool_sender_anonymity};
pub use substitution::{SubstitutionConfig, simulate_substitution};

/// How a client sends (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Profile {
    /// Substitution cover at λ_P whenever the client runs.
    AlwaysOn,
    /// Substitution cover at λ_P only while a wallet session is open (padded to a minimum and
    /// an idle tail).
    Wallet,
    /// Cover at a daily byte budget's rate, all day.
    Mobile,
    /// No cover: requests leave when made.
    NoCover,
}

impl Profile {
    /// Every profile, in report order.
    pub const ALL: [Profile; 4] = [Profile::AlwaysOn, Profile::Wallet, Profile::Mobile, Profile::NoCover];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Profile::AlwaysOn => "always-on",
            Profile::Wallet => "wallet",
            Profile::Mobile => "mobile",
            Profile::NoCover => "no cover",
        }
    }

    /// Whether packets leave in λ_P slots (substitution cover).
    pub fn has_cover(self) -> bool {
        !matches!(self, Profile::NoCover)
    }
}

/// A population of users, its habits and the network's public parameters. Times in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ActivityConfig {
    /// Users (clients), the target included.
    pub users: u32,
    /// How every user sends.
    pub profile: Profile,
    /// λ_P, client slots per second while sending with cover.
    pub cover_rate_per_s: f64,
    /// μ, mean mixing delay per hop (s).
    pub mean_delay_s: f64,
    /// Constant processing time per hop (s).
    pub processing_s: f64,
    /// Hops a packet crosses from client to destination (the layers).
    pub layers: usize,
    /// Mean time between one user's wallet sessions (s).
    pub session_interval_s: f64,
    /// Requests per session.
    pub requests_per_session: u32,
    /// Mean gap between the requests of a session (s).
    pub request_gap_s: f64,
    /// [`Profile::Wallet`]: a session keeps the client online at least this long (s).
    pub min_session_s: f64,
    /// [`Profile::Wallet`]: and at least this long after its last request (s).
    pub idle_tail_s: f64,
    /// [`Profile::Mobile`]: the budget's cover rate (packets/s; budget / packet size / day).
    pub mobile_rate_per_s: f64,
    /// Share of cover slots that carry a loop (an echo to the client itself, answered on SURB
    /// replies) instead of a drop (shipped: `nox_client::ClientConfig::default().loop_fraction`,
    /// 0.5, pinned by nox-bench's `bench_disclosure` test).
    pub loop_fraction: f64,
    /// SURB reply packets the exit sends back for each request and each loop (shipped: 2,
    /// `nox_message::surbs_needed` for an echo reply on the 4 KiB geometry, as the calibrated
    /// link-level simulator uses, pinned by the same test; 0 = no replies).
    pub reply_packets: u32,
}

/// The shipped mobile budget's rate: 125 MB a day of 4 KiB packets (`nox_cover::MOBILE_DEFAULT_BUDGET`
/// at nox-sphinx's `DEFAULT_PACKET_LEN`; the same 0.353 packets/s the 1 GB budget bought at
/// 32 KiB), packets per second. Pinned to the client's constants by `tests/shipped.rs`.
pub const MOBILE_DEFAULT_RATE_PER_S: f64 = 125e6 / 4_096.0 / 86_400.0;

impl Default for ActivityConfig {
    /// 1,000 always-on users at the shipped μ = 50 ms and λ_P = 2/s (the setting the testnet
    /// calibration measured; the daemon ships 2.75/s since session 25, docs/benchmarks/frontier.md),
    /// 0.3 ms processing, 3 layers;
    /// a wallet session every 4 h on average, 5 requests 5 s apart; the wallet profile's
    /// padding (120 s minimum, 30 s idle tail) and the mobile budget (125 MB/day) as shipped.
    fn default() -> Self {
        Self {
            users: 1_000,
            profile: Profile::AlwaysOn,
            cover_rate_per_s: 2.0,
            mean_delay_s: 0.05,
            processing_s: 0.000_3,
            layers: 3,
            session_interval_s: 4.0 * 3_600.0,
            requests_per_session: 5,
            request_gap_s: 5.0,
            min_session_s: 120.0,
            idle_tail_s: 30.0,
            mobile_rate_per_s: MOBILE_DEFAULT_RATE_PER_S,
            loop_fraction: 0.5,
            reply_packets: 2,
        }
    }
}

impl ActivityConfig {
    /// Checks the domain of every parameter.
    pub fn validate(&self) -> Result<(), AnonymityError> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if self.users < 2 || self.layers == 0 || self.requests_per_session == 0 {
            return Err(AnonymityError::InvalidParameter("need users ≥ 2, layers ≥ 1, requests_per_session ≥ 1"));
        }
        if !positive(self.mean_delay_s) || !positive(self.session_interval_s) || !positive(self.request_gap_s) {
            return Err(AnonymityError::InvalidParameter("need μ, session interval and request gap > 0"));
        }
        let non_negative = |v: f64| v.is_finite() && v >= 0.0;
        if !non_negative(self.processing_s) || !non_negative(self.min_session_s) || !non_negative(self.idle_tail_s) {
            return Err(AnonymityError::InvalidParameter("need processing, minimum session and idle tail ≥ 0"));
        }
        if self.profile == Profile::Mobile && !positive(self.mobile_rate_per_s) {
            return Err(AnonymityError::InvalidParameter("the mobile profile needs a budget rate > 0"));
        }
        if self.profile.has_cover() && !positive(self.cover_rate_per_s) {
            return Err(AnonymityError::InvalidParameter("a cover profile needs λ_P > 0"));
        }
        if !(0.0..=1.0).contains(&self.loop_fraction) {
            return Err(AnonymityError::InvalidParameter("the loop fraction is a share of cover slots, in [0, 1]"));
        }
        Ok(())
    }

    /// Mean length of a session's request burst, `k · gap` (s).
    pub fn burst_s(&self) -> f64 {
        f64::from(self.requests_per_session) * self.request_gap_s
    }

    /// Probability that a given user is sending at a given instant (stationary): 1 for
    /// always-on and mobile; the online share for wallet sessions
    /// (`max(min_session, burst + 1/λ_P + idle_tail) / interval`); the burst share without cover.
    pub fn sending_probability(&self) -> f64 {
        let share = match self.profile {
            Profile::AlwaysOn | Profile::Mobile => 1.0,
            Profile::Wallet => {
                self.min_session_s.max(self.burst_s() + 1.0 / self.cover_rate_per_s + self.idle_tail_s)
                    / self.session_interval_s
            }
            Profile::NoCover => self.burst_s() / self.session_interval_s,
        };
        share.min(1.0)
    }

    /// Packets per second of a user while it is sending: λ_P with cover, the budget's rate
    /// (at most λ_P) for mobile, `1/gap` without.
    pub fn send_rate_while_sending(&self) -> f64 {
        match self.profile {
            Profile::AlwaysOn | Profile::Wallet => self.cover_rate_per_s,
            Profile::Mobile => self.mobile_rate_per_s.min(self.cover_rate_per_s),
            Profile::NoCover => 1.0 / self.request_gap_s,
        }
    }

    /// Long-run packets per second of one user (what it costs: × packet size = bytes).
    pub fn mean_send_rate(&self) -> f64 {
        self.sending_probability() * self.send_rate_while_sending()
    }

    /// Real requests per second of a user while it is sending: its sessions' requests
    /// (`k / interval`) spread over the time it sends; `1/gap` in a burst without cover.
    pub fn request_rate_while_sending(&self) -> f64 {
        let p = self.sending_probability();
        let rate = f64::from(self.requests_per_session) / self.session_interval_s;
        if p > 0.0 { (rate / p).min(self.send_rate_while_sending()) } else { 0.0 }
    }

    /// Loop cover packets per second of a user while it is sending: `loop_fraction` of the
    /// slots that carry cover (λ_P less the requests; the budget's rate for mobile; none
    /// without cover).
    pub fn loop_rate_while_sending(&self) -> f64 {
        let cover = match self.profile {
            Profile::AlwaysOn | Profile::Wallet => self.cover_rate_per_s - self.request_rate_while_sending(),
            Profile::Mobile => self.send_rate_while_sending() - self.request_rate_while_sending(),
            Profile::NoCover => 0.0,
        };
        self.loop_fraction * cover.max(0.0)
    }

    /// SURB reply packets per second the network carries back to a user while it is sending:
    /// `reply_packets` for each of its requests and loops.
    pub fn reply_rate_while_sending(&self) -> f64 {
        f64::from(self.reply_packets) * (self.request_rate_while_sending() + self.loop_rate_while_sending())
    }

    /// Delay of one packet from its client send to the destination: `L·p + Gamma(L, μ)`.
    pub fn sample_delay<R: RngCore + ?Sized>(&self, rng: &mut R) -> f64 {
        let mut delay = self.layers as f64 * self.processing_s;
        for _ in 0..self.layers {
            delay += exponential_us(rng, self.mean_delay_s);
        }
        delay
    }

    /// The density (per second) of that delay at `lag_s` (0 below `L·p`).
    pub fn delay_density(&self, lag_s: f64) -> f64 {
        let x = lag_s - self.layers as f64 * self.processing_s;
        if x <= 0.0 {
            return 0.0;
        }
        let k = self.layers as f64;
        let log_factorial: f64 = (1..self.layers).map(|i| (i as f64).ln()).sum();
        ((k - 1.0) * x.ln() - x / self.mean_delay_s - log_factorial - k * self.mean_delay_s.ln()).exp()
    }

    /// How far back from a delivery a send can matter: `L·p + (L + 40) μ` (the Gamma tail
    /// beyond is below 10⁻¹⁵).
    pub fn horizon_s(&self) -> f64 {
        self.layers as f64 * self.processing_s + (self.layers as f64 + 40.0) * self.mean_delay_s
    }
}
