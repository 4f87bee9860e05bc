//! One simulated attack: the target's and the others' sessions over the days, the target's
//! sends under its profile (substitution into cover slots or not), every emission's weight
//! under the chosen [`Evidence`], and the partner's rank at the end of each day (see the
//! [parent module](super)).

use rand_core::RngCore;

use super::{DisclosureConfig, DisclosureScores, Evidence};
use crate::activity::{ActivityConfig, Profile};
use crate::random::{exponential_us, index, unit};

const DAY_S: f64 = 86_400.0;

#[derive(Default)]
pub(super) struct Totals {
    pub(super) target_weight: f64,
    pub(super) target_emissions: f64,
    pub(super) other_weight: f64,
    pub(super) other_emissions: f64,
}

/// Destination popularity: a cumulative distribution to sample from.
pub(super) struct Popularity {
    cumulative: Vec<f64>,
}

impl Popularity {
    pub(super) fn zipf(destinations: usize, exponent: f64) -> Self {
        let mut cumulative = Vec::with_capacity(destinations);
        let mut total = 0.0;
        for rank in 1..=destinations {
            total += (rank as f64).powf(-exponent);
            cumulative.push(total);
        }
        cumulative.iter_mut().for_each(|c| *c /= total);
        Self { cumulative }
    }

    fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> usize {
        let u = unit(rng);
        self.cumulative.partition_point(|&c| c <= u).min(self.cumulative.len() - 1)
    }
}

/// One emission: its time, destination, and the delay density of its own send (0 for the
/// target's, whose sends are counted with the target).
struct Emission {
    time: f64,
    destination: usize,
    own_density: f64,
}

/// One attack; returns the partner's rank at the end of each day.
pub(super) fn run_trial<R: RngCore + ?Sized>(
    config: &DisclosureConfig,
    popularity: &Popularity,
    rng: &mut R,
    totals: &mut Totals,
) -> Vec<usize> {
    let a = &config.activity;
    let span = f64::from(config.days) * DAY_S;
    let destinations = config.destinations as usize;
    let partner = popularity.sample(rng);
    let others = (a.users - 1) as usize;
    let favourites: Vec<usize> = (0..others).map(|_| popularity.sample(rng)).collect();

    // The target: its sessions, its sends (what its link shows) and its emissions.
    let mut target_sends: Vec<f64> = Vec::new();
    let mut target_emissions: Vec<Emission> = Vec::new();
    let mut requests: Vec<(f64, usize)> = Vec::new();
    let mut sessions: Vec<(f64, f64)> = Vec::new(); // (start, last request)
    let mut t = exponential_us(rng, a.session_interval_s);
    while t < span {
        let destination = if unit(rng) < config.target_habit { partner } else { popularity.sample(rng) };
        let mut r = t;
        for _ in 0..a.requests_per_session {
            r += exponential_us(rng, a.request_gap_s);
            requests.push((r, destination));
        }
        sessions.push((t, r));
        t += exponential_us(rng, a.session_interval_s);
    }
    requests.sort_by(|x, y| x.0.total_cmp(&y.0));
    let real_sends: Vec<(f64, usize)> = match a.profile {
        Profile::NoCover => requests.clone(),
        Profile::AlwaysOn => {
            let slots = poisson_on(rng, a.cover_rate_per_s, 0.0, span + 3_600.0);
            substitute(&slots, &requests, &mut target_sends)
        }
        Profile::Mobile => {
            // λ_P slots all day; a real request takes the next one, a free one carries cover
            // with probability (budget rate / λ_P).
            let slots = poisson_on(rng, a.cover_rate_per_s, 0.0, span + 3_600.0);
            let mut used = Vec::new();
            let real = substitute(&slots, &requests, &mut used);
            let keep = (a.mobile_rate_per_s / a.cover_rate_per_s).min(1.0);
            let mut reals = real.iter().map(|&(t, _)| t).peekable();
            for &slot in &slots {
                if reals.next_if(|&t| t == slot).is_some() || unit(rng) < keep {
                    target_sends.push(slot);
                }
            }
            real
        }
        Profile::Wallet => {
            let mut slots = Vec::new();
            for &(start, last) in &sessions {
                // Online from the session's start until the minimum length has passed, the
                // last request has had a slot and the idle tail after it has run out.
                let end = (start + a.min_session_s).max(last + a.idle_tail_s);
                let mut s = start + exponential_us(rng, 1.0 / a.cover_rate_per_s);
                let mut after_last = false;
                while s < end || !after_last {
                    slots.push(s);
                    after_last |= s >= last;
                    s += exponential_us(rng, 1.0 / a.cover_rate_per_s);
                }
            }
            slots.sort_by(f64::total_cmp);
            substitute(&slots, &requests, &mut target_sends)
        }
    };
    if a.profile == Profile::NoCover {
        target_sends = real_sends.iter().map(|&(s, _)| s).collect();
    }
    // What comes back down the target's link: the SURB replies
    // (`reply_packets` for every request and for every cover slot that is a loop), about one
    // round trip (two delays) after the packet they answer.
    let mut target_replies: Vec<f64> = Vec::new();
    let mut reals = real_sends.iter().map(|&(t, _)| t).peekable();
    for &slot in &target_sends {
        let real = reals.next_if(|&t| t == slot).is_some();
        if real || (a.profile.has_cover() && unit(rng) < a.loop_fraction) {
            for _ in 0..a.reply_packets {
                target_replies.push(slot + a.sample_delay(rng) + a.sample_delay(rng));
            }
        }
    }
    target_replies.sort_by(f64::total_cmp);
    for &(send, destination) in &real_sends {
        target_emissions.push(Emission { time: send + a.sample_delay(rng), destination, own_density: 0.0 });
    }

    // Everyone else's emissions, day by day into the statistic.
    let others_rate = others as f64 * a.mean_send_rate();
    // Everyone else's SURB replies, per second.
    let others_reply_rate = others as f64 * a.sending_probability() * a.reply_rate_while_sending();
    let mut daily: Vec<DisclosureScores> = (0..config.days).map(|_| DisclosureScores::new(destinations)).collect();
    let weigh = |time: f64, own_density: Option<f64>| -> f64 {
        match config.evidence {
            Evidence::Timing => {
                // The target's sends' density over everyone's: the emission's own sender (when
                // it is not the target) plus the mean rate of the users not involved.
                let mine = density_of_sends(a, &target_sends, time);
                let denominator = match own_density {
                    None => mine + others_rate,
                    Some(own) => mine + own + (others_rate - a.mean_send_rate()).max(0.0),
                };
                if denominator > 0.0 { mine / denominator } else { 0.0 }
            }
            Evidence::RoundCounts => {
                let round = (time / config.round_s).floor();
                let (from, to) = (round * config.round_s, (round + 1.0) * config.round_s);
                let count = count_in(&target_sends, from, to);
                let expected = count + others_rate * config.round_s;
                if expected > 0.0 { count / expected } else { 0.0 }
            }
            Evidence::ReplyCounts => {
                let round = (time / config.round_s).floor();
                let (from, to) = (round * config.round_s, (round + 1.0) * config.round_s);
                let count = count_in(&target_replies, from, to);
                let expected = count + others_reply_rate * config.round_s;
                if expected > 0.0 { count / expected } else { 0.0 }
            }
        }
    };
    for emission in &target_emissions {
        let day = (emission.time / DAY_S) as usize;
        if day < daily.len() {
            let w = weigh(emission.time, None);
            totals.target_weight += w;
            totals.target_emissions += 1.0;
            daily[day].add(emission.destination, w);
        }
    }
    let session_rate = others as f64 / a.session_interval_s;
    if others > 0 {
        let mut t = exponential_us(rng, 1.0 / session_rate);
        while t < span {
            let user = index(rng, others);
            let destination = if unit(rng) < config.habit { favourites[user] } else { popularity.sample(rng) };
            let mut r = t;
            for _ in 0..a.requests_per_session {
                r += exponential_us(rng, a.request_gap_s);
                let wait = if a.profile.has_cover() { exponential_us(rng, 1.0 / a.cover_rate_per_s) } else { 0.0 };
                let delay = a.sample_delay(rng);
                let emission = Emission { time: r + wait + delay, destination, own_density: a.delay_density(delay) };
                let day = (emission.time / DAY_S) as usize;
                if day < daily.len() {
                    let w = weigh(emission.time, Some(emission.own_density));
                    totals.other_weight += w;
                    totals.other_emissions += 1.0;
                    daily[day].add(emission.destination, w);
                }
            }
            t += exponential_us(rng, 1.0 / session_rate);
        }
    }
    let mut running = DisclosureScores::new(destinations);
    daily
        .iter()
        .map(|day| {
            running.merge(day);
            running.rank(partner)
        })
        .collect()
}

/// Poisson instants of `rate` on `[from, to)`.
fn poisson_on<R: RngCore + ?Sized>(rng: &mut R, rate: f64, from: f64, to: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut t = from + exponential_us(rng, 1.0 / rate);
    while t < to {
        out.push(t);
        t += exponential_us(rng, 1.0 / rate);
    }
    out
}

/// Substitution: each request (in time order) takes the first free slot at or after it. Pushes
/// every slot to `sends` and returns the real ones with their destinations (requests left
/// without a slot are dropped).
fn substitute(slots: &[f64], requests: &[(f64, usize)], sends: &mut Vec<f64>) -> Vec<(f64, usize)> {
    sends.extend_from_slice(slots);
    let mut real = Vec::with_capacity(requests.len());
    let mut next = 0usize;
    for &(time, destination) in requests {
        next = next.max(slots.partition_point(|&s| s < time));
        if let Some(&slot) = slots.get(next) {
            real.push((slot, destination));
            next += 1;
        }
    }
    real
}

/// `Σ_s density(time − s)` over the sorted sends within the horizon before `time`.
fn density_of_sends(a: &ActivityConfig, sends: &[f64], time: f64) -> f64 {
    let end = sends.partition_point(|&s| s < time);
    let start = sends[..end].partition_point(|&s| s < time - a.horizon_s());
    sends[start..end].iter().map(|&s| a.delay_density(time - s)).sum()
}

/// Sends in `[from, to)`.
fn count_in(sends: &[f64], from: f64, to: f64) -> f64 {
    (sends.partition_point(|&s| s < to) - sends.partition_point(|&s| s < from)) as f64
}
