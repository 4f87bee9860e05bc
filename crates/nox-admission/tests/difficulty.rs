//! Adaptive PoW: the report's steps, raised at once, lowered one step at a time with hysteresis.

use std::time::{Duration, Instant};

use nox_admission::{AdaptiveDifficulty, DifficultyChange, DifficultyConfig, DifficultyConfigError};

const EXPECTED: f64 = 100.0;

/// Feeds `rate` packets per second for `seconds`, in 10 ms slices (as evenly as integers
/// allow), updating every slice. Returns the instant reached and every change seen.
fn run(
    difficulty: &mut AdaptiveDifficulty,
    mut now: Instant,
    rate: u64,
    seconds: u64,
) -> (Instant, Vec<DifficultyChange>) {
    let mut changes = Vec::new();
    for slice in 0..seconds * 100 {
        now += Duration::from_millis(10);
        difficulty.record_arrivals(now, (slice + 1) * rate / 100 - slice * rate / 100);
        match difficulty.update(now) {
            DifficultyChange::Unchanged(_) => {}
            change => changes.push(change),
        }
    }
    (now, changes)
}

fn changes_from(changes: &[DifficultyChange]) -> u8 {
    match changes.last() {
        Some(DifficultyChange::Raised { from, .. }) => *from,
        _ => 0,
    }
}

fn fresh() -> (AdaptiveDifficulty, Instant) {
    let start = Instant::now();
    (AdaptiveDifficulty::new(DifficultyConfig::report_schedule(EXPECTED), start).unwrap(), start)
}

#[test]
fn normal_load_stays_at_base() {
    let (mut difficulty, start) = fresh();
    let (_, changes) = run(&mut difficulty, start, 190, 60); // 1.9× expected
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(difficulty.current(), 12);
}

#[test]
fn each_threshold_selects_its_step() {
    for (rate, expected) in [(250, 16), (600, 20), (1_200, 24)] {
        let (mut difficulty, start) = fresh();
        let (_, changes) = run(&mut difficulty, start, rate, 10);
        assert_eq!(difficulty.current(), expected, "rate {rate}");
        // Only raises, ending at the step, and nothing above it.
        assert!(changes.iter().all(|c| matches!(c, DifficultyChange::Raised { .. })), "{changes:?}");
        assert_eq!(changes.last(), Some(&DifficultyChange::Raised { from: changes_from(&changes), to: expected }));
    }
}

#[test]
fn raise_is_fast_lowering_is_slow_and_stepwise() {
    let (mut difficulty, start) = fresh();
    let (now, _) = run(&mut difficulty, start, 100, 20);
    // A 15× flood: the 2 s window average crosses 10× within 1.3 s, climbing through the
    // steps on the way (the estimate rises continuously).
    let (now, changes) = run(&mut difficulty, now, 1_500, 2);
    assert_eq!(difficulty.current(), 24, "{changes:?}");
    assert_eq!(changes.first(), Some(&DifficultyChange::Raised { from: 12, to: 16 }));
    let (mut now, changes) = run(&mut difficulty, now, 1_500, 18);
    assert!(changes.is_empty(), "no change while the flood lasts: {changes:?}");

    // Load back below normal (80 pps): one step down at a time. The 30 s window must first
    // drop below half the 10× trigger (≈ 20 s after the flood), then each further step waits
    // the 30 s hold.
    let mut lowered_after = Vec::new();
    for second in 1..=120u32 {
        let (later, changes) = run(&mut difficulty, now, 80, 1);
        now = later;
        for change in changes {
            lowered_after.push((second, change));
        }
    }
    let steps: Vec<DifficultyChange> = lowered_after.iter().map(|(_, change)| *change).collect();
    assert_eq!(
        steps,
        vec![
            DifficultyChange::Lowered { from: 24, to: 20 },
            DifficultyChange::Lowered { from: 20, to: 16 },
            DifficultyChange::Lowered { from: 16, to: 12 },
        ]
    );
    let seconds: Vec<u32> = lowered_after.iter().map(|(second, _)| *second).collect();
    assert!((18..=24).contains(&seconds[0]), "{seconds:?}");
    assert!(seconds[1] - seconds[0] >= 30 && seconds[2] - seconds[1] >= 30, "{seconds:?}");
}

#[test]
fn hysteresis_keeps_the_level_just_below_the_trigger() {
    let (mut difficulty, start) = fresh();
    let (now, _) = run(&mut difficulty, start, 300, 10); // 3× → 16
    assert_eq!(difficulty.current(), 16);
    // 1.5× is below the 2× trigger but above half of it (1×): stays at 16 indefinitely.
    let (now, changes) = run(&mut difficulty, now, 150, 120);
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(difficulty.current(), 16);
    // 0.9× is below half the trigger: lowered once the hold and long window allow.
    let (_, changes) = run(&mut difficulty, now, 90, 60);
    assert_eq!(changes, vec![DifficultyChange::Lowered { from: 16, to: 12 }]);
}

#[test]
fn short_burst_within_windows_is_measured_as_a_rate() {
    let (mut difficulty, start) = fresh();
    let (now, _) = run(&mut difficulty, start, 100, 10);
    let window = Duration::from_secs(2);
    assert!((difficulty.arrival_rate(now, window) - 100.0).abs() < 2.0);
    // 50 packets in one instant on top of 100 pps: 1.5× over the raise window.
    difficulty.record_arrivals(now, 50);
    assert!((difficulty.arrival_rate(now, window) - 150.0).abs() < 2.0);
    assert_eq!(difficulty.update(now), DifficultyChange::Unchanged(12));
    // 100 more: 2.5×, over the 2× trigger.
    difficulty.record_arrivals(now, 100);
    assert_eq!(difficulty.update(now), DifficultyChange::Raised { from: 12, to: 16 });
}

#[test]
fn grace_accepts_the_previous_difficulty_briefly() {
    let (mut difficulty, start) = fresh();
    let now = start + Duration::from_secs(5);
    difficulty.record_arrivals(now, 10_000);
    assert_eq!(difficulty.update(now), DifficultyChange::Raised { from: 12, to: 24 });
    assert_eq!(difficulty.minimum_accepted(now + Duration::from_secs(1)), 12);
    assert_eq!(difficulty.minimum_accepted(now + Duration::from_secs(2)), 24);
}

#[test]
fn min_and_max_clamp_every_level() {
    let start = Instant::now();
    let mut config = DifficultyConfig::report_schedule(EXPECTED);
    config.min_difficulty = 14;
    config.max_difficulty = 20;
    let mut difficulty = AdaptiveDifficulty::new(config, start).unwrap();
    assert_eq!(difficulty.current(), 14);
    let now = start + Duration::from_secs(5);
    difficulty.record_arrivals(now, 100_000);
    assert_eq!(difficulty.update(now), DifficultyChange::Raised { from: 14, to: 20 });
}

#[test]
fn idle_gaps_longer_than_the_ring_are_handled() {
    let (mut difficulty, start) = fresh();
    let now = start + Duration::from_secs(3);
    difficulty.record_arrivals(now, 10_000);
    assert_eq!(difficulty.current(), 12);
    difficulty.update(now);
    assert_eq!(difficulty.current(), 24);
    // A day later the old counts are gone.
    let later = now + Duration::from_secs(86_400);
    assert_eq!(difficulty.arrival_rate(later, Duration::from_secs(30)), 0.0);
    assert_eq!(difficulty.update(later), DifficultyChange::Lowered { from: 24, to: 20 });
}

#[test]
fn invalid_configs_are_rejected() {
    let start = Instant::now();
    let mut config = DifficultyConfig::report_schedule(0.0);
    assert_eq!(AdaptiveDifficulty::new(config.clone(), start).unwrap_err(), DifficultyConfigError::ExpectedRate);
    config.expected_rate_pps = 10.0;
    config.steps.swap(0, 1);
    assert_eq!(AdaptiveDifficulty::new(config.clone(), start).unwrap_err(), DifficultyConfigError::Steps);
    let mut config = DifficultyConfig::report_schedule(10.0);
    config.min_difficulty = 30;
    config.max_difficulty = 20;
    assert_eq!(AdaptiveDifficulty::new(config, start).unwrap_err(), DifficultyConfigError::Bounds);
    let mut config = DifficultyConfig::report_schedule(10.0);
    config.bucket_width = Duration::ZERO;
    assert_eq!(AdaptiveDifficulty::new(config, start).unwrap_err(), DifficultyConfigError::Windows);
    let mut config = DifficultyConfig::report_schedule(10.0);
    config.lower_fraction = 1.5;
    assert_eq!(AdaptiveDifficulty::new(config, start).unwrap_err(), DifficultyConfigError::LowerFraction);
}
