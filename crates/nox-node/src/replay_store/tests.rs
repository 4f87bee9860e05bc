//! Unit tests of the replay store over [`MemStorage`]: restarts, power loss, sync failures.

use super::*;
use std::{fs::OpenOptions, io::Write};

fn params() -> BloomParameters {
    BloomParameters::for_capacity(10_000, 0.001).unwrap()
}

#[test]
fn tags_survive_a_restart_and_a_torn_tail_on_disk() {
    let dir = std::env::temp_dir().join(format!("nox-replay-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = ReplayStore::open(&dir).unwrap();
    let (mut cache, recovered) = store.load(7, params()).unwrap();
    assert_eq!(recovered, 0);
    let tags: Vec<PendingTag> = (0..100u8).map(|i| (7, [i; 32])).collect();
    for (_, tag) in &tags {
        assert!(!cache.insert(tag).is_replay());
    }
    store.commit(&tags[..50]).unwrap();
    store.commit(&tags[50..]).unwrap();
    drop(store);
    // A torn write: part of a record at the end.
    let journal = dir.join(ReplayStore::journal_name(7));
    OpenOptions::new().append(true).open(&journal).unwrap().write_all(&[1, 2, 3]).unwrap();
    let store = ReplayStore::open(&dir).unwrap();
    let (cache, recovered) = store.load(7, params()).unwrap();
    assert_eq!(recovered, 100);
    assert!((0..100u8).all(|i| cache.check(&[i; 32])));
    assert!(!cache.check(&[200; 32]));
    // Snapshot, more tags, restart: both parts come back.
    store.snapshot(&cache).unwrap();
    store.commit(&[(7, [201; 32])]).unwrap();
    drop(store);
    let store = ReplayStore::open(&dir).unwrap();
    let (cache, recovered) = store.load(7, params()).unwrap();
    assert_eq!(recovered, 1);
    assert!(cache.check(&[5; 32]) && cache.check(&[201; 32]));
    store.retire(7).unwrap();
    assert!(!journal.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_synced_batches_survive_a_power_loss() {
    let storage = MemStorage::new();
    let store = ReplayStore::with_storage(Box::new(storage.clone()));
    store.load(3, params()).unwrap();
    store.commit(&[(3, [1; 32]), (3, [2; 32])]).unwrap();
    // Written but not synced (as if the process died between append and sync).
    storage.append(&ReplayStore::journal_name(3), &journal::encode_record(3, &[9; 32])).unwrap();
    storage.power_loss();
    let store = ReplayStore::with_storage(Box::new(storage.clone()));
    let (cache, recovered) = store.load(3, params()).unwrap();
    assert_eq!(recovered, 2);
    assert!(cache.check(&[1; 32]) && cache.check(&[2; 32]) && !cache.check(&[9; 32]));
}

#[test]
fn damage_inside_committed_batches_refuses_the_epoch_and_keeps_the_file() {
    let storage = MemStorage::new();
    let store = ReplayStore::with_storage(Box::new(storage.clone()));
    store.load(4, params()).unwrap();
    for batch in 0..3u8 {
        store.commit(&[(4, [batch; 32]), (4, [batch + 100; 32])]).unwrap();
    }
    let name = ReplayStore::journal_name(4);
    // Flip a bit in the first batch's first record.
    storage.corrupt(&name, |bytes| bytes[journal::HEADER_LEN + 4] ^= 1);
    let before = storage.contents(&name);
    let store = ReplayStore::with_storage(Box::new(storage.clone()));
    let error = store.load(4, params()).unwrap_err();
    assert_eq!(error.kind(), "journal_damaged");
    assert!(matches!(error, ReplayStateError::Journal { error: JournalError::Damaged { .. }, .. }));
    // Left as found: a restart refuses the epoch again.
    assert_eq!(storage.contents(&name), before);
    assert!(store.load(4, params()).is_err());
    // Other epochs are unaffected.
    assert!(store.load(5, params()).is_ok());
}

#[test]
fn a_version_1_journal_is_migrated_and_later_batches_stay_readable() {
    let storage = MemStorage::new();
    let name = ReplayStore::journal_name(2);
    let mut v1 = journal::encode_header_version(2, journal::VERSION_1).to_vec();
    for i in 0..5u8 {
        v1.extend_from_slice(&journal::encode_record(2, &[i; 32]));
    }
    storage.append(&name, &v1).unwrap();
    storage.sync(&name).unwrap();
    let store = ReplayStore::with_storage(Box::new(storage.clone()));
    let (cache, recovered) = store.load(2, params()).unwrap();
    assert_eq!(recovered, 5);
    assert!((0..5u8).all(|i| cache.check(&[i; 32])));
    for batch in 10..13u8 {
        store.commit(&[(2, [batch; 32])]).unwrap();
    }
    let store = ReplayStore::with_storage(Box::new(storage.clone()));
    let (cache, recovered) = store.load(2, params()).unwrap();
    assert_eq!(recovered, 3);
    assert!((0..5u8).chain(10..13).all(|i| cache.check(&[i; 32])));
}

#[test]
fn a_corrupt_snapshot_or_failing_sync_is_an_error() {
    let storage = MemStorage::new();
    let store = ReplayStore::with_storage(Box::new(storage.clone()));
    let (cache, _) = store.load(6, params()).unwrap();
    store.snapshot(&cache).unwrap();
    storage.corrupt(&ReplayStore::snapshot_name(6), |bytes| bytes[70] ^= 1);
    let store = ReplayStore::with_storage(Box::new(storage.clone()));
    assert_eq!(store.load(6, params()).unwrap_err().kind(), "snapshot");
    let (_, _) = store.load(7, params()).unwrap();
    storage.fail_syncs(true);
    assert_eq!(store.commit(&[(7, [1; 32])]).unwrap_err().kind(), "io");
    assert_eq!(store.load(8, params()).unwrap_err().kind(), "io");
}
