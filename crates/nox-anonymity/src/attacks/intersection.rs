//! The intersection (disclosure) attack over epochs.
//!
//! Adversary: a GPA linking a target client `T` and its partner destination `P`. In each
//! epoch it sees the set of clients that sent anything and the set of destinations the exits
//! contacted. Real sends of `T` go to `P`; other clients are active with some probability and
//! contact a uniformly random destination other than `P` (`P` is private to `T`, e.g. `T`'s
//! own account; when others write to `P` too, exact intersection eliminates `T` and a
//! statistical disclosure attack is needed instead — not modelled here). Two directions:
//!
//! - [`Direction::SenderOfDestination`] (the classic attack): the adversary watches `P`; in
//!   every epoch `P` receives, its correspondent is among the clients that appear active, so it
//!   intersects those client sets until one client is left. With client cover (λ_P) every
//!   client appears active in every epoch, the intersection stays the whole population, and
//!   the attack never decides.
//! - [`Direction::PartnerOfClient`]: the adversary watches `T`; in every epoch `T` appears
//!   active, `P` is among the contacted destinations, so it intersects destination sets. Client
//!   cover makes every epoch look active, so the adversary must also intersect over `T`'s idle
//!   epochs, which eliminates `P` unless someone else happened to contact it. This defeats the
//!   attack only partly: when few destinations are contacted per epoch the intersection can
//!   converge before an idle epoch knocks `P` out.

use std::collections::HashSet;

use rand_core::RngCore;
use serde::Serialize;

use crate::AnonymityError;
use crate::entropy::median;
use crate::random::{index, unit};

/// Which side the adversary starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Direction {
    /// Watch the partner destination, intersect the sets of active clients.
    SenderOfDestination,
    /// Watch the target client, intersect the sets of contacted destinations.
    PartnerOfClient,
}

/// Parameters of the attacked population.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntersectionConfig {
    /// Which side the adversary starts from.
    pub direction: Direction,
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
    /// Fraction that named the true partner (or, watching the destination, the target).
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
        match run_once(c, rng) {
            Outcome::Identified(epoch) => {
                successes += 1;
                epochs_to_identify.push(epoch as f64);
            }
            Outcome::Wrong => failures += 1,
            Outcome::Undecided => {}
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

enum Outcome {
    Identified(usize),
    Wrong,
    Undecided,
}

/// One attack. Client 0 is the target; destination ids are `0..destinations`.
fn run_once<R: RngCore + ?Sized>(c: &IntersectionConfig, rng: &mut R) -> Outcome {
    const TARGET: u32 = 0;
    let partner = index(rng, c.destinations as usize) as u32;
    let mut candidates: Option<HashSet<u32>> = None;
    for epoch in 1..=c.max_epochs {
        let mut contacted = HashSet::new();
        let mut visible = HashSet::new();
        let mut partner_contacted = false;
        for client in 0..c.clients {
            let writes = if client == TARGET { unit(rng) < c.target_activity } else { unit(rng) < c.other_activity };
            if writes {
                let destination = if client == TARGET {
                    partner
                } else {
                    // Uniform over the other destinations.
                    let d = index(rng, c.destinations as usize - 1) as u32;
                    if d >= partner { d + 1 } else { d }
                };
                contacted.insert(destination);
                partner_contacted |= destination == partner;
            }
            if writes || unit(rng) < c.cover_presence {
                visible.insert(client);
            }
        }
        let (relevant, observed, answer) = match c.direction {
            Direction::PartnerOfClient => (visible.contains(&TARGET), contacted, partner),
            Direction::SenderOfDestination => (partner_contacted, visible, TARGET),
        };
        if !relevant {
            continue;
        }
        let set = match candidates.take() {
            None => observed,
            Some(previous) => previous.intersection(&observed).copied().collect(),
        };
        match set.len() {
            0 => return Outcome::Wrong,
            1 if set.contains(&answer) => return Outcome::Identified(epoch),
            1 => return Outcome::Wrong,
            _ => candidates = Some(set),
        }
    }
    Outcome::Undecided
}
