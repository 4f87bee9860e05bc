//! The intersection (disclosure) attack over epochs.
//!
//! Adversary: a GPA that targets one client and wants its partner. In each epoch it sees the
//! set of clients that sent anything and the set of destinations the exits contacted. Every
//! epoch in which the target *appears* active, the partner must be among that epoch's
//! destinations, so it intersects those sets; it names the partner once one destination is
//! left. Real sends go to the partner; other clients are active with some probability and
//! contact a uniformly random destination. With client cover (λ_P) every client appears
//! active in every epoch, the adversary can no longer select the epochs where the target
//! really wrote, and intersecting over idle epochs eliminates the true partner.

use std::collections::HashSet;

use rand_core::RngCore;
use serde::Serialize;

use crate::AnonymityError;
use crate::entropy::median;
use crate::random::{index, unit};

/// Parameters of the attacked population.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntersectionConfig {
    /// Clients, the target included.
    pub clients: u32,
    /// Destinations.
    pub destinations: u32,
    /// Probability that the target writes to its partner in an epoch.
    pub target_activity: f64,
    /// Probability that each other client writes (to a random destination) in an epoch.
    pub other_activity: f64,
    /// Probability that a client with nothing to send still appears active because of client
    /// cover: `1 − e^{−λ_P · epoch}` (see [`IntersectionConfig::cover_presence`]); 0 = no cover.
    pub cover_presence: f64,
    /// Epochs observed before giving up.
    pub max_epochs: usize,
}

impl IntersectionConfig {
    /// `1 − e^{−λ_P T}`: the chance a Poisson(λ_P) cover stream sends at least once in an
    /// epoch of `epoch_s` seconds.
    pub fn cover_presence(rate_per_s: f64, epoch_s: f64) -> f64 {
        1.0 - (-rate_per_s * epoch_s).exp()
    }
}

/// Outcome of repeated attacks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntersectionReport {
    /// The configuration attacked.
    pub config: IntersectionConfig,
    /// Attacks run.
    pub trials: usize,
    /// Fraction that named the true partner.
    pub success_rate: f64,
    /// Fraction that named a wrong destination or eliminated every candidate.
    pub failure_rate: f64,
    /// Fraction still undecided after `max_epochs`.
    pub undecided_rate: f64,
    /// Mean epochs to a correct identification (`None` if none succeeded).
    pub mean_epochs_to_identify: Option<f64>,
    /// Median epochs to a correct identification.
    pub median_epochs_to_identify: Option<f64>,
}

/// Runs `trials` independent attacks.
pub fn intersection_attack<R: RngCore + ?Sized>(
    config: &IntersectionConfig,
    trials: usize,
    rng: &mut R,
) -> Result<IntersectionReport, AnonymityError> {
    let c = config;
    if trials == 0 || c.clients == 0 || c.destinations < 2 || c.max_epochs == 0 {
        return Err(AnonymityError::InvalidParameter("need trials, clients, max_epochs ≥ 1 and destinations ≥ 2"));
    }
    let (mut successes, mut failures) = (0usize, 0usize);
    let mut epochs_to_identify = Vec::new();
    for _ in 0..trials {
        let partner = index(rng, c.destinations as usize) as u32;
        let mut candidates: Option<HashSet<u32>> = None;
        for epoch in 1..=c.max_epochs {
            let writes = unit(rng) < c.target_activity;
            let mut contacted = HashSet::new();
            if writes {
                contacted.insert(partner);
            }
            for _ in 1..c.clients {
                if unit(rng) < c.other_activity {
                    contacted.insert(index(rng, c.destinations as usize) as u32);
                }
            }
            let appears_active = writes || unit(rng) < c.cover_presence;
            if !appears_active {
                continue;
            }
            let set = match candidates.take() {
                None => contacted,
                Some(previous) => previous.intersection(&contacted).copied().collect(),
            };
            match set.len() {
                0 => {
                    failures += 1;
                    break;
                }
                1 => {
                    if set.contains(&partner) {
                        successes += 1;
                        epochs_to_identify.push(epoch as f64);
                    } else {
                        failures += 1;
                    }
                    break;
                }
                _ => candidates = Some(set),
            }
        }
    }
    let n = trials as f64;
    epochs_to_identify.sort_by(f64::total_cmp);
    let mean = (!epochs_to_identify.is_empty())
        .then(|| epochs_to_identify.iter().sum::<f64>() / epochs_to_identify.len() as f64);
    Ok(IntersectionReport {
        config: *config,
        trials,
        success_rate: successes as f64 / n,
        failure_rate: failures as f64 / n,
        undecided_rate: (trials - successes - failures) as f64 / n,
        mean_epochs_to_identify: mean,
        median_epochs_to_identify: (!epochs_to_identify.is_empty()).then(|| median(&epochs_to_identify)),
    })
}
