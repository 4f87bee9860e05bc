//! The long-term **statistical disclosure attack** (SDA; Danezis 2003, in the differential
//! form of Danezis and Serjantov's pool-mix variant) against a user who keeps talking to the same
//! destination (its dapp's RPC, its relayer), simulated over days.
//!
//! **Adversary.** A GPA that watches the target's link and every exit→destination emission for
//! days. For every emission `e` it holds a weight `w_e`: its belief that the target sent it.
//! Summing per destination and subtracting what the background would give,
//!
//! `score(d) = Σ_e w_e·[d_e = d] − (Σ_e w_e) · û(d)`, `û(d)` = share of all emissions seen going to `d`,
//!
//! it ranks destinations; the target's partner is found when it is ranked first. With
//! `w_e = [target sent in e's round] / (packets in the round)` this is Danezis' SDA over a
//! threshold mix. Two evidence models ([`Evidence`]):
//! - [`Evidence::RoundCounts`]: the classic attack. Rounds of [`DisclosureConfig::round_s`]; in
//!   each, `w = c_T / C` with `c_T` the packets the target was seen to send in the round and `C`
//!   the expected packets of everyone. Substitution cover at a constant λ_P makes `c_T`
//!   independent of what the target does, and the attack blind.
//! - [`Evidence::ReplyCounts`]: the same over the other direction of the target's link, the
//!   SURB replies coming back to it ([`ActivityConfig::reply_packets`] for each request and each
//!   loop, none for a drop). Substitution keeps the sends constant but not quite the replies: a
//!   request is answered where the drop it displaced was not, so with half the cover slots
//!   loops a request adds `reply_packets / 2` packets downstream on average, against the
//!   loops' own randomness (with every cover slot a drop, the replies count the requests
//!   exactly).
//! - [`Evidence::Timing`]: the GPA also uses *when* the target sent: `w_e` is the pool-model
//!   posterior that the target sent `e` (`crate::activity`): the delay density of the target's
//!   sends before `e`, over that plus the density of everyone else's (the emission's own sender,
//!   plus the others' mean rate). This is the per-message tracer's information accumulated over
//!   days, and cover at λ_P does not remove it — only mixing (μ, users) dilutes it.
//!
//! **Population.** `N` users (the target is one), [`DisclosureConfig::destinations`]
//! destinations with Zipf(s) popularity. Each other user has a favourite destination (drawn from
//! the popularity) that a session goes to with probability [`DisclosureConfig::habit`], else a
//! popular one at random; a session's requests all go to one destination. The target's sessions
//! go to its partner (also drawn from the popularity: it can be the most used RPC) with
//! probability [`DisclosureConfig::target_habit`]. Sessions and profiles are those of
//! [`ActivityConfig`]; others' packets matter to `w` only through their mean rate (mean-field),
//! the emission's own sender excepted.
//!
//! **Result.** For each day, the share of independent trials whose ranking puts the partner
//! first; "days to 95 %": the first day that share reaches 0.95.

//!
//! **Files.** This module holds the attack's parameters, its report, the score keeping
//! ([`DisclosureScores`]) and the driver ([`statistical_disclosure`]); `trial.rs` one simulated
//! attack (the population's sessions, the target's sends and the per-day ranking); `tests.rs`
//! the tests.

use serde::Serialize;

use rand_core::RngCore;

use crate::AnonymityError;
use crate::activity::ActivityConfig;

#[cfg(test)]
mod tests;
mod trial;

use trial::{Popularity, Totals, run_trial};

/// What the adversary weighs each emission by (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Evidence {
    /// The target's packet count per round over everyone's (Danezis' SDA).
    RoundCounts,
    /// The same over the SURB replies coming back to the target (the link's other direction).
    ReplyCounts,
    /// The pool-model posterior that the target sent the emission, from send and emission times.
    Timing,
}

impl Evidence {
    /// Both, in report order.
    pub const ALL: [Evidence; 3] = [Evidence::RoundCounts, Evidence::ReplyCounts, Evidence::Timing];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Evidence::RoundCounts => "round counts (SDA)",
            Evidence::ReplyCounts => "reply counts (SDA)",
            Evidence::Timing => "timing posterior",
        }
    }
}

/// The attacked population and the adversary.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DisclosureConfig {
    /// Users, profile, sessions and the network's μ, λ_P.
    pub activity: ActivityConfig,
    /// Destinations.
    pub destinations: u32,
    /// Zipf exponent of destination popularity (0 = uniform).
    pub zipf_exponent: f64,
    /// Probability that another user's session goes to its own favourite destination.
    pub habit: f64,
    /// Probability that a target's session goes to its partner (0: a user with no partner).
    pub target_habit: f64,
    /// Round length of [`Evidence::RoundCounts`] (s).
    pub round_s: f64,
    /// Days observed.
    pub days: u32,
    /// The adversary's evidence.
    pub evidence: Evidence,
}

impl Default for DisclosureConfig {
    /// 1,000 always-on users (shipped μ, λ_P), 100 destinations with Zipf(1) popularity, habits
    /// of 0.8, a target who always uses its partner, 1 h rounds, 30 days, timing evidence.
    fn default() -> Self {
        Self {
            activity: ActivityConfig::default(),
            destinations: 100,
            zipf_exponent: 1.0,
            habit: 0.8,
            target_habit: 1.0,
            round_s: 3_600.0,
            days: 30,
            evidence: Evidence::Timing,
        }
    }
}

/// Repeated attacks, day by day.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DisclosureReport {
    /// The configuration attacked.
    pub config: DisclosureConfig,
    /// Independent trials (population, partner and history drawn afresh).
    pub trials: usize,
    /// `ranked_first_by_day[d]`: share of trials ranking the partner first after day `d + 1`.
    pub ranked_first_by_day: Vec<f64>,
    /// First day (1-based) at which that share reaches 0.95, if any.
    pub days_to_95: Option<u32>,
    /// Mean rank of the partner (1 = first) after the last day.
    pub mean_final_rank: f64,
    /// Mean weight on the target's own emissions (what one of its requests tells the adversary).
    pub mean_weight_target: f64,
    /// Mean weight on everyone else's emissions (the noise floor, ≈ the target's share of traffic).
    pub mean_weight_others: f64,
    /// Target's real requests per day (mean).
    pub target_requests_per_day: f64,
    /// All real requests per day (mean).
    pub requests_per_day: f64,
}

/// The adversary's running statistic: weighted and plain emission counts per destination.
#[derive(Debug, Clone, PartialEq)]
pub struct DisclosureScores {
    weighted: Vec<f64>,
    weight_total: f64,
    seen: Vec<f64>,
    seen_total: f64,
}

impl DisclosureScores {
    /// An empty statistic over `destinations` destinations.
    pub fn new(destinations: usize) -> Self {
        Self { weighted: vec![0.0; destinations], weight_total: 0.0, seen: vec![0.0; destinations], seen_total: 0.0 }
    }

    /// Records one emission to `destination` that the target sent with belief `weight`.
    /// Destinations out of range are ignored.
    pub fn add(&mut self, destination: usize, weight: f64) {
        if destination < self.seen.len() {
            self.weighted[destination] += weight;
            self.weight_total += weight;
            self.seen[destination] += 1.0;
            self.seen_total += 1.0;
        }
    }

    /// Adds another statistic (e.g. one day's) into this one.
    pub fn merge(&mut self, other: &Self) {
        for (a, b) in self.weighted.iter_mut().zip(&other.weighted) {
            *a += b;
        }
        for (a, b) in self.seen.iter_mut().zip(&other.seen) {
            *a += b;
        }
        self.weight_total += other.weight_total;
        self.seen_total += other.seen_total;
    }

    /// `score(d) = Σ w·[d] − (Σ w)·û(d)` for every destination.
    pub fn scores(&self) -> Vec<f64> {
        if self.seen_total == 0.0 {
            return vec![0.0; self.seen.len()];
        }
        self.weighted.iter().zip(&self.seen).map(|(w, s)| w - self.weight_total * s / self.seen_total).collect()
    }

    /// Rank of `destination` (1 = strictly first; ties count against it).
    pub fn rank(&self, destination: usize) -> usize {
        let scores = self.scores();
        let mine = scores.get(destination).copied().unwrap_or(f64::NEG_INFINITY);
        1 + scores.iter().enumerate().filter(|&(d, &s)| d != destination && s >= mine).count()
    }
}

/// Runs `trials` independent attacks of `days` days each.
pub fn statistical_disclosure<R: RngCore + ?Sized>(
    config: &DisclosureConfig,
    trials: usize,
    rng: &mut R,
) -> Result<DisclosureReport, AnonymityError> {
    config.activity.validate()?;
    let unit_interval = |v: f64| (0.0..=1.0).contains(&v);
    if trials == 0 || config.days == 0 || config.destinations < 2 {
        return Err(AnonymityError::InvalidParameter("need trials ≥ 1, days ≥ 1, destinations ≥ 2"));
    }
    if !unit_interval(config.habit) || !unit_interval(config.target_habit) {
        return Err(AnonymityError::InvalidParameter("habits are probabilities"));
    }
    let round_ok = config.round_s.is_finite() && config.round_s > 0.0;
    let zipf_ok = config.zipf_exponent.is_finite() && config.zipf_exponent >= 0.0;
    if !round_ok || !zipf_ok {
        return Err(AnonymityError::InvalidParameter("need round > 0 and Zipf exponent ≥ 0"));
    }
    let popularity = Popularity::zipf(config.destinations as usize, config.zipf_exponent);
    let days = config.days as usize;
    let mut first = vec![0usize; days];
    let mut final_rank = 0.0;
    let mut totals = Totals::default();
    for _ in 0..trials {
        let ranks = run_trial(config, &popularity, rng, &mut totals);
        for (day, &rank) in ranks.iter().enumerate() {
            first[day] += usize::from(rank == 1);
        }
        final_rank += ranks.last().copied().unwrap_or(0) as f64;
    }
    let n = trials as f64;
    let ranked_first_by_day: Vec<f64> = first.iter().map(|&c| c as f64 / n).collect();
    let days_to_95 = ranked_first_by_day.iter().position(|&s| s >= 0.95).map(|d| d as u32 + 1);
    let span_days = n * f64::from(config.days);
    Ok(DisclosureReport {
        config: *config,
        trials,
        ranked_first_by_day,
        days_to_95,
        mean_final_rank: final_rank / n,
        mean_weight_target: totals.target_weight / totals.target_emissions.max(1.0),
        mean_weight_others: totals.other_weight / totals.other_emissions.max(1.0),
        target_requests_per_day: totals.target_emissions / span_days,
        requests_per_day: (totals.target_emissions + totals.other_emissions) / span_days,
    })
}
