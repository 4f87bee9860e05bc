//! No false negatives, measured false-positive rate, saturation, epoch isolation.

use nox_replay::{BloomParameters, EpochError, EpochReplayCaches, InsertOutcome, ReplayCache};
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn random_tag(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut tag = [0u8; 32];
    rng.fill_bytes(&mut tag);
    tag
}

fn small_params() -> BloomParameters {
    BloomParameters::for_capacity(1_000, 0.01).expect("valid")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn inserted_tags_are_always_found(tags in prop::collection::vec(any::<[u8; 32]>(), 1..300)) {
        let mut cache = ReplayCache::new(7, small_params());
        for tag in &tags {
            let _ = cache.insert(tag);
        }
        for tag in &tags {
            prop_assert!(cache.check(tag));
            prop_assert_eq!(cache.insert(tag), InsertOutcome::AlreadyPresent);
        }
    }

    #[test]
    fn first_insert_of_a_new_tag_reports_inserted_once(tag in any::<[u8; 32]>()) {
        let mut cache = ReplayCache::new(7, small_params());
        prop_assert!(!cache.check(&tag));
        prop_assert_eq!(cache.insert(&tag), InsertOutcome::Inserted);
        prop_assert_eq!(cache.insert(&tag), InsertOutcome::AlreadyPresent);
        prop_assert_eq!(cache.inserted(), 1);
    }
}

#[test]
fn measured_false_positive_rate_matches_the_design_at_capacity() {
    let capacity = 100_000;
    let params = BloomParameters::for_capacity(capacity, 0.001).expect("valid");
    let mut cache = ReplayCache::new(1, params);
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    for _ in 0..capacity {
        let _ = cache.insert(&random_tag(&mut rng));
    }
    let probes = 500_000u32;
    let false_positives = (0..probes).filter(|_| cache.check(&random_tag(&mut rng))).count();
    let measured = false_positives as f64 / f64::from(probes);
    let expected = params.expected_false_positive_rate(capacity);
    // Binomial: 500 expected hits, sigma ≈ 22. Allow ±25 % (about 5.5 sigma).
    assert!((measured - expected).abs() < 0.25 * expected, "measured {measured}, expected {expected}");
    assert!((expected - 0.001).abs() < 0.0002);
    // The fill-based estimates agree with the truth.
    assert!((cache.estimated_false_positive_rate() - expected).abs() < 0.1 * expected);
    assert!((cache.estimated_items() - capacity as f64).abs() < 0.02 * capacity as f64);
}

#[test]
fn saturation_is_reported_past_the_design_load() {
    let params = BloomParameters::for_capacity(2_000, 0.01).expect("valid");
    let mut cache = ReplayCache::new(1, params);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    for _ in 0..1_800 {
        let _ = cache.insert(&random_tag(&mut rng));
    }
    assert!(!cache.is_saturated(), "fp {}", cache.estimated_false_positive_rate());
    for _ in 0..600 {
        let _ = cache.insert(&random_tag(&mut rng));
    }
    assert!(cache.is_saturated(), "fp {}", cache.estimated_false_positive_rate());
    assert!(cache.fill_ratio() > 0.5 && cache.fill_ratio() < 0.7);
}

#[test]
fn epochs_are_isolated_and_dropped_with_their_key() {
    let mut caches = EpochReplayCaches::new(2);
    caches.open(ReplayCache::new(10, small_params())).unwrap();
    caches.open(ReplayCache::new(11, small_params())).unwrap();
    assert_eq!(caches.open(ReplayCache::new(12, small_params())), Err(EpochError::TooManyEpochs(2)));
    assert_eq!(caches.open(ReplayCache::new(11, small_params())), Err(EpochError::AlreadyOpen(11)));
    let tag = [9u8; 32];
    assert_eq!(caches.insert(10, &tag), Ok(InsertOutcome::Inserted));
    assert_eq!(caches.check(10, &tag), Ok(true));
    assert_eq!(caches.check(11, &tag), Ok(false), "another epoch's cache is independent");
    assert_eq!(caches.insert(11, &tag), Ok(InsertOutcome::Inserted));
    assert_eq!(caches.insert(10, &tag), Ok(InsertOutcome::AlreadyPresent));

    // Retiring epoch 10 drops its cache; packets for it are refused as unknown-epoch.
    assert!(caches.retire(10).is_some());
    assert_eq!(caches.check(10, &tag), Err(EpochError::UnknownEpoch(10)));
    assert_eq!(caches.insert(10, &tag), Err(EpochError::UnknownEpoch(10)));
    caches.open(ReplayCache::new(12, small_params())).unwrap();
    assert_eq!(caches.epochs().collect::<Vec<_>>(), vec![11, 12]);
    assert_eq!(caches.retire_before(12), 1);
    assert_eq!(caches.epochs().collect::<Vec<_>>(), vec![12]);
    assert_eq!(caches.retire(99), None);
}
