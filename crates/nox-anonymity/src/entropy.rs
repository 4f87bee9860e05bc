//! Sender anonymity from the GPA's view: a backward-traced posterior over senders for every
//! exit→destination emission, scored by Shannon entropy and, with ground truth, by the
//! probability the adversary puts on the true sender.

use std::collections::HashMap;

use serde::Serialize;

use crate::observation::IMPOSSIBLE_PENALTY;
use crate::{AnonymityError, DelayModel, Endpoint, GroundTruth, MessageId, Observation, Topology};

/// Candidate arrivals whose log-likelihood is this far below the best are ignored (e⁻⁴⁰).
const CUTOFF: f64 = IMPOSSIBLE_PENALTY;
/// Posterior entries below this mass are pruned (and the rest renormalised) to keep the
/// per-event distributions sparse on long observations.
const PRUNE: f64 = 1e-9;

/// The adversary's posterior over senders for one emission.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SenderPosterior {
    /// Index of the emission in [`Observation::events`].
    pub event_index: usize,
    /// `(client, probability)`, sorted by client, summing to 1 (empty if untraceable).
    pub probabilities: Vec<(u32, f64)>,
}

impl SenderPosterior {
    /// Shannon entropy `H = −Σ p log₂ p` in bits.
    pub fn entropy_bits(&self) -> f64 {
        let h: f64 = self.probabilities.iter().filter(|(_, p)| *p > 0.0).map(|(_, p)| -p * p.log2()).sum();
        if h > 0.0 { h } else { 0.0 } // no −0.0 for a point mass
    }

    /// The probability given to `client` (0 if absent).
    pub fn probability_of(&self, client: u32) -> f64 {
        self.probabilities.iter().find(|(c, _)| *c == client).map_or(0.0, |(_, p)| *p)
    }

    /// Top-1 credit for `client`: `1/k` if it is one of the `k` most likely senders, else 0.
    pub fn top1_credit(&self, client: u32) -> f64 {
        let best = self.probabilities.iter().map(|(_, p)| *p).fold(0.0, f64::max);
        let tied = self.probabilities.iter().filter(|(_, p)| *p >= best - 1e-12).count();
        if tied > 0 && self.probability_of(client) >= best - 1e-12 { 1.0 / tied as f64 } else { 0.0 }
    }
}

/// The adversary's posterior for every exit→destination emission, in event order.
///
/// Forward dynamic programme over the events: a client send carries a point mass on its
/// client; a departure from node `n` at time `t` is a mixture of the distributions of the
/// earlier arrivals at `n`, weighted by the delay likelihood of `t − t_arrival`
/// ([`DelayModel::log_likelihood`]). Untraceable arrivals (e.g. node cover with no earlier
/// arrival) are left out of the mixture.
pub fn sender_posteriors(
    observation: &Observation,
    topology: &Topology,
    model: &DelayModel,
) -> Result<Vec<SenderPosterior>, AnonymityError> {
    observation.validate(topology)?;
    let events = &observation.events;
    let clients = observation.clients();
    let dense: HashMap<u32, usize> = clients.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    let mut arrivals: HashMap<u16, Vec<usize>> = HashMap::new();
    let mut distributions: Vec<Vec<(usize, f64)>> = Vec::with_capacity(events.len());
    let mut scratch = vec![0.0; clients.len()];
    let mut touched: Vec<usize> = Vec::new();
    let mut weights: Vec<(usize, f64)> = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let distribution = match event.from {
            Endpoint::Client(c) => vec![(dense[&c], 1.0)],
            Endpoint::Destination(_) => Vec::new(),
            Endpoint::Node(node) => {
                let candidates = arrivals.get(&node).map_or(&[][..], Vec::as_slice);
                candidate_weights(events, candidates, index, model, &distributions, &mut weights);
                mix(&weights, &distributions, &mut scratch, &mut touched)
            }
        };
        distributions.push(distribution);
        if let Endpoint::Node(node) = event.to {
            arrivals.entry(node).or_default().push(index);
        }
    }
    Ok(observation
        .deliveries()
        .into_iter()
        .map(|event_index| SenderPosterior {
            event_index,
            probabilities: distributions[event_index].iter().map(|&(i, p)| (clients[i], p)).collect(),
        })
        .collect())
}

/// Normalised weights of the arrivals at a node that could explain the departure `index`.
fn candidate_weights(
    events: &[crate::LinkEvent],
    candidates: &[usize],
    index: usize,
    model: &DelayModel,
    distributions: &[Vec<(usize, f64)>],
    weights: &mut Vec<(usize, f64)>,
) {
    weights.clear();
    let departure = events[index].time_us as f64;
    let mut best = f64::NEG_INFINITY;
    for &arrival in candidates.iter().rev() {
        if arrival >= index {
            continue;
        }
        let lag = departure - events[arrival].time_us as f64;
        let log_likelihood = model.log_likelihood(lag);
        if lag >= model.processing_us && log_likelihood < best - CUTOFF {
            break; // further back only gets less likely
        }
        if distributions[arrival].is_empty() {
            continue;
        }
        best = best.max(log_likelihood);
        weights.push((arrival, log_likelihood));
    }
    weights.retain(|&(_, l)| l >= best - CUTOFF);
    let total: f64 = weights.iter().map(|&(_, l)| (l - best).exp()).sum();
    for (_, w) in weights.iter_mut() {
        *w = (*w - best).exp() / total;
    }
}

/// `Σ w_a · distribution[a]`, pruned and renormalised, as a sparse sorted vector.
fn mix(
    weights: &[(usize, f64)],
    distributions: &[Vec<(usize, f64)>],
    scratch: &mut [f64],
    touched: &mut Vec<usize>,
) -> Vec<(usize, f64)> {
    touched.clear();
    for &(arrival, weight) in weights {
        for &(client, p) in &distributions[arrival] {
            if scratch[client] == 0.0 {
                touched.push(client);
            }
            scratch[client] += weight * p;
        }
    }
    touched.sort_unstable();
    let mut out: Vec<(usize, f64)> = Vec::with_capacity(touched.len());
    for &client in touched.iter() {
        if scratch[client] >= PRUNE {
            out.push((client, scratch[client]));
        }
        scratch[client] = 0.0;
    }
    let total: f64 = out.iter().map(|(_, p)| p).sum();
    if total > 0.0 {
        out.iter_mut().for_each(|(_, p)| *p /= total);
    }
    out
}

/// One scored emission.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageScore {
    /// Index of the emission in the observation.
    pub event_index: usize,
    /// Entropy of the adversary's posterior, in bits.
    pub entropy_bits: f64,
    /// The message delivered by this emission, if the ground truth names it.
    pub message: Option<MessageId>,
    /// Probability the adversary gives the true sender (needs ground truth).
    pub true_sender_probability: Option<f64>,
    /// Top-1 credit (1/k if the true sender is among k tied best guesses; needs ground truth).
    pub top1_credit: Option<f64>,
}

/// Sender-anonymity summary over all traceable emissions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntropyReport {
    /// Emissions scored (traceable to at least one client).
    pub messages: usize,
    /// Emissions with an empty posterior (not traceable to any client send).
    pub untraceable: usize,
    /// Distinct clients seen sending: the upper bound of the anonymity set.
    pub clients: usize,
    /// `log₂(clients)`.
    pub max_entropy_bits: f64,
    /// Mean per-message entropy.
    pub mean_entropy_bits: f64,
    /// Median per-message entropy.
    pub median_entropy_bits: f64,
    /// Smallest per-message entropy (the worst-protected message).
    pub min_entropy_bits: f64,
    /// `2^mean H`: the effective anonymity set.
    pub effective_anonymity_set: f64,
    /// `mean H / log₂(clients)` (0 when there is a single client).
    pub normalized_entropy: f64,
    /// Mean probability on the true sender, over messages named by the ground truth.
    pub mean_true_sender_probability: Option<f64>,
    /// Fraction of messages whose true sender is the adversary's top guess (ties split).
    pub top1_accuracy: Option<f64>,
    /// Per-message scores.
    pub per_message: Vec<MessageScore>,
}

/// Scores every exit→destination emission of `observation` (see [`sender_posteriors`]).
/// `truth`, if given, is used only after the posteriors are computed, to score them.
pub fn sender_entropy(
    observation: &Observation,
    topology: &Topology,
    model: &DelayModel,
    truth: Option<&GroundTruth>,
) -> Result<EntropyReport, AnonymityError> {
    let posteriors = sender_posteriors(observation, topology, model)?;
    let by_event: HashMap<usize, MessageId> =
        truth.map(|t| t.message_delivery.iter().map(|(&m, &e)| (e, m)).collect()).unwrap_or_default();
    let mut per_message = Vec::new();
    let mut untraceable = 0;
    for posterior in &posteriors {
        if posterior.probabilities.is_empty() {
            untraceable += 1;
            continue;
        }
        let message = by_event.get(&posterior.event_index).copied();
        let sender = message.and_then(|m| truth?.message_sender.get(&m).copied());
        per_message.push(MessageScore {
            event_index: posterior.event_index,
            entropy_bits: posterior.entropy_bits(),
            message,
            true_sender_probability: sender.map(|s| posterior.probability_of(s)),
            top1_credit: sender.map(|s| posterior.top1_credit(s)),
        });
    }
    if per_message.is_empty() {
        return Err(AnonymityError::Empty("no traceable exit→destination emission"));
    }
    let mut entropies: Vec<f64> = per_message.iter().map(|m| m.entropy_bits).collect();
    entropies.sort_by(f64::total_cmp);
    let mean = entropies.iter().sum::<f64>() / entropies.len() as f64;
    let clients = observation.clients().len();
    let max_entropy_bits = (clients as f64).log2();
    let average = |values: Vec<f64>| (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
    Ok(EntropyReport {
        messages: per_message.len(),
        untraceable,
        clients,
        max_entropy_bits,
        mean_entropy_bits: mean,
        median_entropy_bits: median(&entropies),
        min_entropy_bits: entropies[0],
        effective_anonymity_set: mean.exp2(),
        normalized_entropy: if clients > 1 { mean / max_entropy_bits } else { 0.0 },
        mean_true_sender_probability: average(per_message.iter().filter_map(|m| m.true_sender_probability).collect()),
        top1_accuracy: average(per_message.iter().filter_map(|m| m.top1_credit).collect()),
        per_message,
    })
}

/// Median of a sorted, non-empty slice.
pub(crate) fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 }
}
