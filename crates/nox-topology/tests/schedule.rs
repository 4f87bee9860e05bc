//! The epoch schedule: boundaries, overlap, publishing ahead, erasure times.

use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use nox_topology::{EpochSchedule, ScheduleError};
use proptest::prelude::*;

const G: u64 = 1_000;

fn schedule() -> EpochSchedule {
    // 100 s epochs, 10 s overlap, two epochs published ahead.
    EpochSchedule::new(G, Duration::from_secs(100), Duration::from_secs(10), 2).unwrap()
}

fn accepting(t: u64) -> Vec<u32> {
    schedule().accepting_epochs(t).collect()
}

#[test]
fn epochs_and_boundaries() {
    let s = schedule();
    assert_eq!(s.epoch_at(0), 0);
    assert_eq!(s.epoch_at(G), 0);
    assert_eq!(s.epoch_at(G + 99), 0);
    assert_eq!(s.epoch_at(G + 100), 1);
    assert_eq!(s.epoch_start(3), G + 300);
    assert_eq!(s.epoch_end(3), G + 400);
    assert_eq!(s.epoch_at(u64::MAX), u32::MAX);
    assert_eq!(s.epoch_end(u32::MAX), G + (u64::from(u32::MAX) + 1) * 100);
    // Arithmetic saturates instead of overflowing.
    let huge = EpochSchedule::new(u64::MAX - 10, Duration::from_secs(u64::MAX / 2), Duration::ZERO, 8).unwrap();
    assert_eq!((huge.epoch_start(3), huge.erase_at(u32::MAX), huge.epoch_at(u64::MAX)), (u64::MAX, u64::MAX, 0));
    assert_eq!(huge.published_epochs(0), 0..=8);
    assert_eq!(s.epoch_at_time(UNIX_EPOCH + Duration::from_secs(G + 250)), 2);
    assert_eq!(s.epoch_at_time(UNIX_EPOCH - Duration::from_secs(5)), 0);
    #[allow(clippy::disallowed_methods, reason = "any real time maps to some epoch")]
    let _ = s.epoch_at_time(SystemTime::now());
}

#[test]
fn previous_epoch_is_accepted_only_during_the_overlap() {
    assert_eq!(accepting(G + 5), vec![0]); // no epoch before 0
    assert_eq!(accepting(G + 199), vec![1]);
    assert_eq!(accepting(G + 200), vec![2, 1]);
    assert_eq!(accepting(G + 209), vec![2, 1]);
    assert_eq!(accepting(G + 210), vec![2]);
    let s = schedule();
    assert!(s.accepts(1, G + 209) && !s.accepts(1, G + 210) && !s.accepts(3, G + 299));
}

#[test]
fn publishing_and_erasure() {
    let s = schedule();
    assert_eq!(s.published_epochs(G + 250), 2..=4);
    // During the overlap the previous epoch's key is still listed: clients may still use it.
    assert_eq!(s.published_epochs(G + 205), 1..=4);
    assert_eq!(s.published_epochs(G + 5), 0..=2);
    assert_eq!(s.erase_at(1), G + 210);
    assert!(!s.is_expired(1, G + 209) && s.is_expired(1, G + 210));
}

#[test]
fn client_epoch_lags_by_half_an_overlap() {
    let s = schedule();
    assert_eq!(s.client_epoch(G + 204), 1);
    assert_eq!(s.client_epoch(G + 205), 2);
    // A client 5 s ahead or behind still builds for an epoch every node accepts.
    for t in G + 150..G + 450 {
        for skew in [-5i64, 0, 5] {
            let client_clock = t.checked_add_signed(skew).unwrap();
            assert!(s.accepts(s.client_epoch(client_clock), t), "t={t} skew={skew}");
        }
    }
}

#[test]
fn invalid_parameters() {
    let s =
        |len, overlap, ahead| EpochSchedule::new(0, Duration::from_millis(len), Duration::from_millis(overlap), ahead);
    assert_eq!(s(0, 0, 1), Err(ScheduleError::EpochLength));
    assert_eq!(s(1500, 0, 1), Err(ScheduleError::EpochLength));
    assert_eq!(s(10_000, 10_000, 1), Err(ScheduleError::Overlap));
    assert_eq!(s(10_000, 500, 1), Err(ScheduleError::Overlap));
    assert_eq!(s(10_000, 1000, 9), Err(ScheduleError::PublishAhead(9)));
    assert!(s(10_000, 0, 0).is_ok());
    let d = EpochSchedule::with_defaults(7);
    assert_eq!(
        (d.epoch_length(), d.overlap(), d.publish_ahead()),
        (Duration::from_secs(3600), Duration::from_secs(300), 1)
    );
}

proptest! {
    #[test]
    fn schedule_invariants(len in 1u64..10_000, overlap_frac in 0u64..1000, t in 0u64..10_000_000, genesis in 0u64..1_000_000) {
        let overlap = overlap_frac * len / 1000;
        let s = EpochSchedule::new(genesis, Duration::from_secs(len), Duration::from_secs(overlap), 1).unwrap();
        let e = s.epoch_at(t);
        if t >= genesis {
            prop_assert!(s.epoch_start(e) <= t && t < s.epoch_end(e));
        }
        let acc: Vec<u32> = s.accepting_epochs(t).collect();
        prop_assert_eq!(acc[0], e);
        // Accepted ⇔ current, or previous and not yet expired: the node erases a key exactly when
        // it stops accepting it.
        if e > 0 {
            prop_assert_eq!(acc.contains(&(e - 1)), !s.is_expired(e - 1, t));
        }
        if e > 1 {
            prop_assert!(s.is_expired(e - 2, t));
        }
        prop_assert!(!s.is_expired(e, t) && !s.is_expired(e.saturating_add(1), t));
        prop_assert!(acc.len() <= 2);
        let published = s.published_epochs(t);
        prop_assert!(acc.iter().all(|a| published.contains(a)));
        prop_assert_eq!(*published.end(), e.saturating_add(1));
        // What a client builds for is accepted by nodes and listed in a current document.
        let c = s.client_epoch(t);
        prop_assert!(s.accepts(c, t) && published.contains(&c));
    }
}
