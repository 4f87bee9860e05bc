//! Per-epoch Sphinx keys: creation ahead, reload, rotation, erasure from disk and memory.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use nox_keystore::{EpochKeyStore, KEY_FILE_CONTEXT, KeystoreError, epoch_file_name};
use nox_topology::EpochSchedule;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const G: u64 = 10_000;

/// 100 s epochs, 10 s overlap, two epochs published ahead.
fn schedule() -> EpochSchedule {
    EpochSchedule::new(G, Duration::from_secs(100), Duration::from_secs(10), 2).unwrap()
}

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(11)
}

#[test]
fn ensure_creates_current_and_ahead_once() {
    let tmp = TempDir::new("ensure");
    let mut store = EpochKeyStore::open(tmp.path(), schedule()).unwrap();
    assert_eq!(mode(tmp.path()), 0o700);
    assert_eq!(store.ensure(4, &mut rng()).unwrap(), vec![4, 5, 6]);
    assert_eq!(store.ensure(4, &mut rng()).unwrap(), Vec::<u32>::new());
    assert_eq!(store.ensure(5, &mut rng()).unwrap(), vec![7]);
    assert_eq!(store.stored_epochs().unwrap(), vec![4, 5, 6, 7]);
    for e in 4..=7 {
        assert_eq!(mode(&store.path(e)), 0o600);
    }
    assert_eq!(store.loaded_epochs().count(), 0, "ensure does not load");
}

#[test]
fn reload_gives_the_same_keys() {
    let tmp = TempDir::new("reload");
    let mut store = EpochKeyStore::open(tmp.path(), schedule()).unwrap();
    store.ensure(1, &mut rng()).unwrap();
    store.load([1, 2]).unwrap();
    let publics = store.public_keys(1..=3).unwrap();
    assert_eq!(publics[0].key, store.secret(1).unwrap().public_key());
    assert_ne!(publics[0].key, publics[1].key);

    let mut again = EpochKeyStore::open(tmp.path(), schedule()).unwrap();
    again.load([1, 2, 3]).unwrap();
    for e in 1..=2 {
        assert_eq!(again.secret(e).unwrap().to_bytes(), store.secret(e).unwrap().to_bytes());
    }
    assert_eq!(again.public_keys(1..=3).unwrap(), publics);
    // Epochs without a key are skipped; the node started after epoch 0's key would have existed.
    assert_eq!(again.public_keys(0..=5).unwrap(), publics);
    assert!(matches!(again.load([9]), Err(KeystoreError::NotFound(_))));
}

#[test]
fn erasure_follows_the_schedule_and_zeroes_the_file() {
    let tmp = TempDir::new("erase");
    let s = schedule();
    let mut store = EpochKeyStore::open(tmp.path(), s).unwrap();
    store.ensure(3, &mut rng()).unwrap();
    store.load([3, 4]).unwrap();
    // A second name for epoch 3's file: after erasure it shows what was left in the inode.
    let witness = tmp.path().join("witness");
    std::fs::hard_link(store.path(3), &witness).unwrap();

    assert_eq!(store.erase_expired(s.erase_at(3) - 1).unwrap(), Vec::<u32>::new());
    assert!(store.secret(3).is_some() && store.path(3).exists());
    assert_eq!(store.erase_expired(s.erase_at(3)).unwrap(), vec![3]);
    assert!(store.secret(3).is_none(), "in-memory key dropped");
    assert!(!store.path(3).exists(), "file unlinked");
    let left = std::fs::read(&witness).unwrap();
    assert_eq!(left.len(), nox_keystore::KEY_FILE_LEN);
    assert!(left.iter().all(|&b| b == 0), "file overwritten with zeros before unlink");
    assert!(store.secret(4).is_some() && store.path(4).exists());
    assert!(!store.erase(3).unwrap(), "nothing left to erase");
    assert!(store.erase(5).unwrap());
    assert_eq!(store.stored_epochs().unwrap(), vec![4]);
}

#[test]
fn rotation_over_many_epochs() {
    let tmp = TempDir::new("rotate");
    let s = schedule();
    let mut store = EpochKeyStore::open(tmp.path(), s).unwrap();
    let mut rng = rng();
    let mut first_seen = HashMap::new();
    for t in (G + 50..G + 1_000).step_by(5) {
        let r = store.rotate(t, &mut rng).unwrap();
        let current = s.epoch_at(t);
        let mut accepting: Vec<u32> = s.accepting_epochs(t).collect();
        accepting.sort_unstable();
        assert_eq!(store.loaded_epochs().collect::<Vec<_>>(), accepting, "t={t}");
        assert_eq!(r.loaded.len(), accepting.len());
        let stored = store.stored_epochs().unwrap();
        assert!(stored.iter().all(|&e| !s.is_expired(e, t)), "t={t}: expired key kept: {stored:?}");
        assert!((current..=current + 2).all(|e| stored.contains(&e)), "t={t}: {stored:?}");
        // A key never changes during its lifetime.
        for k in store.public_keys(current..=current + 2).unwrap() {
            assert_eq!(*first_seen.entry(k.epoch).or_insert(k.key.clone()), k.key, "epoch {} regenerated", k.epoch);
        }
    }
    assert!(first_seen.len() >= 11);
}

#[test]
fn starting_inside_the_overlap_without_the_previous_key() {
    let tmp = TempDir::new("late");
    let s = schedule();
    let mut store = EpochKeyStore::open(tmp.path(), s).unwrap();
    let r = store.rotate(s.epoch_start(7) + 3, &mut rng()).unwrap();
    assert_eq!(r.created, vec![7, 8, 9]);
    assert_eq!(r.loaded, vec![7]);
    assert!(r.erased.is_empty());
    let published: Vec<u32> =
        store.public_keys(s.published_epochs(s.epoch_start(7) + 3)).unwrap().iter().map(|k| k.epoch).collect();
    assert_eq!(published, vec![7, 8, 9]);
}

/// A key file built from the documented format (README, "Key files").
fn key_file(kind: u8, epoch: u32, secret: [u8; 32]) -> Vec<u8> {
    let mut out = b"NOXKEY01".to_vec();
    out.push(kind);
    out.extend(epoch.to_le_bytes());
    out.extend(secret);
    let check = blake3::derive_key(KEY_FILE_CONTEXT, &out);
    out.extend(&check[..16]);
    out
}

#[test]
fn damaged_epoch_files_give_typed_errors() {
    let tmp = TempDir::new("damaged");
    let mut store = EpochKeyStore::open(tmp.path(), schedule()).unwrap();
    store.ensure(2, &mut rng()).unwrap();
    // The documented format matches what the store writes.
    let written = std::fs::read(store.path(2)).unwrap();
    let secret: [u8; 32] = written[13..45].try_into().unwrap();
    assert_eq!(written, key_file(3, 2, secret));

    std::fs::rename(store.path(2), store.path(10)).unwrap();
    assert!(matches!(store.load([10]), Err(KeystoreError::EpochMismatch { recorded: 2, named: 10, .. })));
    std::fs::write(store.path(11), key_file(3, 11, [0xff; 32])).unwrap();
    set_mode(&store.path(11), 0o600);
    assert!(matches!(store.load([11]), Err(KeystoreError::InvalidKey(_))));
    std::fs::write(store.path(12), key_file(2, 12, secret)).unwrap();
    set_mode(&store.path(12), 0o600);
    assert!(matches!(store.load([12]), Err(KeystoreError::WrongKind(_))));
    std::fs::write(store.path(3), &std::fs::read(store.path(3)).unwrap()[..60]).unwrap();
    assert!(matches!(store.load([3]), Err(KeystoreError::BadLength { len: 60, .. })));
    assert_eq!(store.loaded_epochs().count(), 0);
}

#[test]
fn open_erases_interrupted_writes_and_ignores_other_files() {
    let tmp = TempDir::new("stale");
    {
        let mut store = EpochKeyStore::open(tmp.path(), schedule()).unwrap();
        store.ensure(0, &mut rng()).unwrap();
    }
    let stale = tmp.path().join(format!(".{}.123.0.tmp", epoch_file_name(5)));
    std::fs::write(&stale, [9u8; 20]).unwrap();
    std::fs::write(tmp.path().join("README"), b"operator notes").unwrap();
    std::fs::write(tmp.path().join("sphinx-12.key"), b"not ten digits").unwrap();
    let store = EpochKeyStore::open(tmp.path(), schedule()).unwrap();
    assert!(!stale.exists());
    assert_eq!(store.stored_epochs().unwrap(), vec![0, 1, 2]);
    assert!(tmp.path().join("README").exists());
}

/// Every scheme's keys are stored as 32 bytes and come back as the same key of the same scheme;
/// a file records its scheme, so a ristretto255 key is never read as a KEM seed (or one KEM
/// scheme's seed as another's), and each scheme has its own directory under the key directory.
#[test]
fn keys_of_every_scheme_round_trip_and_never_cross_schemes() {
    use nox_sphinx::Scheme;
    let tmp = TempDir::new("schemes");
    for scheme in Scheme::ALL {
        let dir = nox_keystore::sphinx_dir(tmp.path(), scheme);
        let mut store = EpochKeyStore::open_for(&dir, schedule(), scheme).unwrap();
        assert_eq!(store.scheme(), scheme);
        store.ensure(1, &mut rng()).unwrap();
        store.load([1]).unwrap();
        let public = store.public_keys(1..=1).unwrap()[0].key.clone();
        assert_eq!((public.scheme(), store.secret(1).unwrap().scheme()), (scheme, scheme));
        let mut again = EpochKeyStore::open_for(&dir, schedule(), scheme).unwrap();
        again.load([1]).unwrap();
        assert_eq!(again.secret(1).unwrap().public_key(), public);
        assert_eq!(std::fs::read(store.path(1)).unwrap()[8], nox_keystore::KeyKind::sphinx(scheme) as u8);
        for other in Scheme::ALL.into_iter().filter(|s| *s != scheme) {
            let mut wrong = EpochKeyStore::open_for(&dir, schedule(), other).unwrap();
            let error = wrong.load([1]).unwrap_err();
            assert!(
                matches!(&error, KeystoreError::WrongScheme { found, expected, .. } if (*found, *expected) == (scheme, other)),
                "{error:?}"
            );
            assert!(error.to_string().contains(scheme.name()), "{error}");
        }
    }
    let names: Vec<String> = Scheme::ALL
        .iter()
        .map(|s| nox_keystore::sphinx_dir(tmp.path(), *s).file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["sphinx", "sphinx-x25519-kem", "sphinx-mlkem768", "sphinx-xwing"]);
    // The classical store's `open` is ristretto255.
    let classical = EpochKeyStore::open(&nox_keystore::sphinx_dir(tmp.path(), Scheme::Ristretto255), schedule());
    assert_eq!(classical.unwrap().scheme(), Scheme::Ristretto255);
}
