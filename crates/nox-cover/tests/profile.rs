//! Cover profiles: the budget is never exceeded by cover, real packets leave in exactly the
//! slots they would take without a profile, and a wallet session never ends before its
//! minimum length. Virtual time throughout.

use std::time::Duration;

use nox_cover::{CoverGate, CoverProfile, Instant, MobileProfile, Payload, SendQueue, WalletProfile};
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const RATE: f64 = 2.0;
const PACKET: u64 = 1_000;

/// What left the client: `(slot instant, real packet id or None for cover)`.
type Sent = Vec<(Instant, Option<u32>)>;

/// Drives a send queue of rate λ_P through `horizon`, pushing real packet `i` at `arrivals[i]`
/// (sorted), with the profile's gate deciding the free slots (`None`: every free slot is
/// cover, the queue as it was before profiles). Returns what was sent.
fn drive(profile: Option<CoverProfile>, arrivals: &[Duration], horizon: Duration, seed: u64) -> Sent {
    let start = Instant::ORIGIN;
    let mut queue = SendQueue::new(RATE, 1 << 16, start, ChaCha20Rng::seed_from_u64(seed)).expect("rate");
    let mut gate = profile
        .map(|p| CoverGate::new(p, RATE, PACKET, start, ChaCha20Rng::seed_from_u64(seed ^ 0xfeed)).expect("profile"));
    let mut sent = Vec::new();
    let mut next = 0;
    let end = start + horizon;
    loop {
        let slot = queue.next_emission_at().expect("timer runs");
        let arrival = arrivals.get(next).map(|a| start + *a);
        match arrival {
            // A real packet queued before the next slot: the application used the client.
            Some(at) if at <= slot && at < end => {
                if let Some(g) = gate.as_mut() {
                    g.on_use(at);
                }
                let _ = queue.push(next as u32);
                next += 1;
            }
            _ if slot >= end => break,
            _ => {
                let emission = queue.poll(slot).expect("due");
                match emission.payload {
                    Payload::Real(id) => {
                        if let Some(g) = gate.as_mut() {
                            g.on_real_sent(emission.at);
                        }
                        sent.push((emission.at, Some(id)));
                    }
                    Payload::Cover => {
                        if gate.as_mut().is_none_or(|g| g.allow_cover(emission.at)) {
                            sent.push((emission.at, None));
                        }
                    }
                }
            }
        }
    }
    sent
}

fn real_times(sent: &Sent) -> Vec<(Instant, u32)> {
    sent.iter().filter_map(|(at, id)| id.map(|id| (*at, id))).collect()
}

fn arrivals_strategy() -> impl Strategy<Value = Vec<Duration>> {
    prop::collection::vec(0u64..600_000, 0..60).prop_map(|mut ms| {
        ms.sort_unstable();
        ms.into_iter().map(Duration::from_millis).collect()
    })
}

fn wallet() -> CoverProfile {
    CoverProfile::Wallet(WalletProfile { min_session: Duration::from_secs(60), idle_tail: Duration::from_secs(15) })
}

fn mobile(budget: u64) -> CoverProfile {
    CoverProfile::Mobile(MobileProfile { budget_bytes_per_day: budget, day: Duration::from_secs(120) })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every real packet leaves in the very slot it takes with always-on cover and with the
    /// queue alone: a profile never delays real traffic, nor drops it.
    #[test]
    fn real_packets_leave_in_the_same_slots_under_every_profile(arrivals in arrivals_strategy(), seed in any::<u64>()) {
        let horizon = Duration::from_secs(700);
        let plain = real_times(&drive(None, &arrivals, horizon, seed));
        prop_assert_eq!(plain.len(), arrivals.len());
        for profile in [CoverProfile::AlwaysOn, wallet(), mobile(30 * PACKET), mobile(0)] {
            prop_assert_eq!(&real_times(&drive(Some(profile), &arrivals, horizon, seed)), &plain, "{:?}", profile);
        }
    }

    /// In every mobile day, cover never takes the day's bytes (real and cover) past the
    /// budget: at each cover packet the day's total so far is within it.
    #[test]
    fn cover_never_exceeds_the_mobile_budget(arrivals in arrivals_strategy(), seed in any::<u64>(), budget_packets in 0u64..400) {
        let budget = budget_packets * PACKET;
        let day = Duration::from_secs(120);
        let sent = drive(Some(mobile(budget)), &arrivals, Duration::from_secs(700), seed);
        let mut spent = std::collections::HashMap::<u64, u64>::new();
        for (at, id) in &sent {
            let index = (at.offset().as_nanos() / day.as_nanos()) as u64;
            let total = spent.entry(index).or_default();
            *total += PACKET;
            if id.is_none() {
                prop_assert!(*total <= budget, "day {index}: {total} bytes after a cover packet, budget {budget}");
            }
        }
    }

    /// A wallet session, started by a real send outside one, carries cover in every free
    /// slot until at least `start + min_session` (and `last real + idle_tail`), and the client
    /// is silent outside sessions.
    #[test]
    fn a_wallet_session_never_ends_before_its_minimum(arrivals in arrivals_strategy(), seed in any::<u64>()) {
        let (min, tail) = (Duration::from_secs(60), Duration::from_secs(15));
        let horizon = Duration::from_secs(700);
        let sent = drive(Some(wallet()), &arrivals, horizon, seed);
        let all = drive(None, &arrivals, horizon, seed);
        // Sessions recomputed from the uses: each arrival, and each real packet's slot.
        let mut uses: Vec<Instant> = arrivals.iter().map(|a| Instant::ORIGIN + *a).collect();
        uses.extend(sent.iter().filter(|(_, id)| id.is_some()).map(|(t, _)| *t));
        uses.sort_unstable();
        let mut sessions: Vec<(Instant, Instant)> = Vec::new();
        for at in uses {
            match sessions.last_mut() {
                Some((start, end)) if at < *end => *end = (*start + min).max(at + tail),
                _ => sessions.push((at, (at + min).max(at + tail))),
            }
        }
        for (start, end) in &sessions {
            prop_assert!(*end >= *start + min);
        }
        // Every free slot inside a session carries cover; none outside one does.
        let in_session = |t: Instant| sessions.iter().any(|(s, e)| t >= *s && t < *e);
        let sent_slots: std::collections::HashSet<Instant> = sent.iter().map(|(t, _)| *t).collect();
        for (t, id) in &all {
            if id.is_none() {
                prop_assert_eq!(sent_slots.contains(t), in_session(*t), "free slot at {:?}", t);
            }
        }
    }
}

/// An idle mobile client spends about its whole budget over the day (the rate follows the
/// remaining budget), not a fixed fraction of it, and none of the next day's.
#[test]
fn an_idle_mobile_client_spends_its_budget_over_the_day() {
    let day = Duration::from_secs(1_000);
    let budget = 500 * PACKET; // 0.5 packets/s of 2 possible
    let profile = CoverProfile::Mobile(MobileProfile { budget_bytes_per_day: budget, day });
    for seed in 0..8 {
        let sent = drive(Some(profile), &[], day, seed);
        let cover = sent.len() as u64 * PACKET;
        assert!(cover <= budget, "seed {seed}: {cover} > {budget}");
        assert!(cover >= budget * 9 / 10, "seed {seed}: spent only {cover} of {budget}");
        // Spread over the day, not spent at the start: the first half carries about half.
        let first_half = sent.iter().filter(|(t, _)| *t < Instant::ORIGIN + day / 2).count() as f64;
        assert!((first_half / sent.len() as f64 - 0.5).abs() < 0.12, "seed {seed}: first half {first_half}");
    }
}

/// An idle wallet client sends nothing at all; always-on sends λ_P.
#[test]
fn an_idle_wallet_client_is_silent() {
    let horizon = Duration::from_secs(600);
    assert!(drive(Some(wallet()), &[], horizon, 1).is_empty());
    let n = drive(Some(CoverProfile::AlwaysOn), &[], horizon, 1).len() as f64;
    assert!((n / 600.0 - RATE).abs() < 0.3, "{n} packets in 600 s");
}

/// One use: a session of exactly `max(min_session, idle_tail)` of cover, then silence.
#[test]
fn one_use_gives_one_minimum_session() {
    let sent = drive(Some(wallet()), &[Duration::from_secs(100)], Duration::from_secs(600), 3);
    let first = sent.first().expect("sent").0;
    let last = sent.last().expect("sent").0;
    assert!(first >= Instant::ORIGIN + Duration::from_secs(100));
    assert!(last >= Instant::ORIGIN + Duration::from_secs(155), "ended at {last:?}");
    assert!(last < Instant::ORIGIN + Duration::from_secs(160), "ended at {last:?}");
}

#[test]
fn names_parse_and_bad_settings_are_refused() {
    for name in nox_cover::PROFILE_NAMES {
        assert_eq!(CoverProfile::from_name(name).expect("known").name(), name);
    }
    assert!(CoverProfile::from_name("stealth").is_err());
    let rng = ChaCha20Rng::seed_from_u64(0);
    assert!(CoverGate::new(wallet(), 0.0, PACKET, Instant::ORIGIN, rng.clone()).is_err());
    assert!(CoverGate::new(mobile(1), RATE, 0, Instant::ORIGIN, rng).is_err());
}
