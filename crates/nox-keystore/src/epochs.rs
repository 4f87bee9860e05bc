//! Per-epoch Sphinx secret keys: created ahead of their epoch, loaded while accepted, erased
//! from disk and memory when their epoch plus the overlap has passed.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use nox_sphinx::{Scheme, SecretKey};
use nox_topology::{EpochKey, EpochSchedule};
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use crate::error::KeystoreError;
use crate::file::{KeyKind, encode, ensure_private_dir, erase_file, erase_stale_temps, read_key, write_atomic};

/// File name of epoch `e`'s key: `sphinx-<e as 10 decimal digits>.key`.
pub fn epoch_file_name(epoch: u32) -> String {
    format!("sphinx-{epoch:010}.key")
}

/// The directory of a node's Sphinx keys of `scheme` under its key directory:
/// `<key_dir>/sphinx` for ristretto255 (as before KEM schemes existed), else
/// `<key_dir>/sphinx-<scheme name>` (e.g. `sphinx-xwing`). One directory per scheme, so a node
/// switched to another scheme starts a fresh key series instead of finding keys it cannot use.
pub fn sphinx_dir(key_dir: &Path, scheme: Scheme) -> PathBuf {
    match scheme {
        Scheme::Ristretto255 => key_dir.join("sphinx"),
        other => key_dir.join(format!("sphinx-{}", other.name())),
    }
}

fn parse_epoch_file_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("sphinx-")?.strip_suffix(".key")?;
    (digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// What one [`EpochKeyStore::rotate`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Epochs whose keys were erased (disk and memory).
    pub erased: Vec<u32>,
    /// Epochs whose keys were generated.
    pub created: Vec<u32>,
    /// Epochs whose keys are now in memory (the accepting epochs).
    pub loaded: Vec<u32>,
}

/// The Sphinx keys of one node and one [`Scheme`], in `<dir>` (mode 0700), one 0600 file per
/// epoch. Each file records its scheme ([`KeyKind::sphinx`]): a key of another scheme is refused
/// with [`KeystoreError::WrongScheme`], never reinterpreted.
///
/// No clock is read: every time-dependent call takes the current unix second or epoch. One
/// process should own a directory at a time.
#[derive(Debug)]
pub struct EpochKeyStore {
    dir: PathBuf,
    schedule: EpochSchedule,
    scheme: Scheme,
    loaded: BTreeMap<u32, SecretKey>,
}

impl EpochKeyStore {
    /// [`EpochKeyStore::open_for`] with ristretto255 keys (the classical geometry).
    pub fn open(dir: &Path, schedule: EpochSchedule) -> Result<Self, KeystoreError> {
        Self::open_for(dir, schedule, Scheme::Ristretto255)
    }

    /// Opens (creating if needed) the key directory of `scheme`'s keys (see [`sphinx_dir`])
    /// and erases temporary files left by an interrupted write. Loads nothing.
    pub fn open_for(dir: &Path, schedule: EpochSchedule, scheme: Scheme) -> Result<Self, KeystoreError> {
        ensure_private_dir(dir)?;
        erase_stale_temps(dir)?;
        Ok(Self { dir: dir.to_path_buf(), schedule, scheme, loaded: BTreeMap::new() })
    }

    /// The scheme of the keys.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The schedule.
    pub fn schedule(&self) -> &EpochSchedule {
        &self.schedule
    }

    /// Path of epoch `e`'s key file.
    pub fn path(&self, epoch: u32) -> PathBuf {
        self.dir.join(epoch_file_name(epoch))
    }

    /// Epochs with a key file on disk, ascending (other files are ignored).
    pub fn stored_epochs(&self) -> Result<Vec<u32>, KeystoreError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| KeystoreError::io("read directory", &self.dir, e))?;
        let mut epochs = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| KeystoreError::io("read directory", &self.dir, e))?;
            if let Some(e) = entry.file_name().to_str().and_then(parse_epoch_file_name) {
                epochs.push(e);
            }
        }
        epochs.sort_unstable();
        Ok(epochs)
    }

    /// Generates and stores a key for every epoch in `current ..= current + publish_ahead`
    /// that has none. Returns the epochs created. Existing keys are never replaced.
    pub fn ensure<R: CryptoRng>(&mut self, current: u32, rng: &mut R) -> Result<Vec<u32>, KeystoreError> {
        let mut created = Vec::new();
        for epoch in current..=current.saturating_add(self.schedule.publish_ahead()) {
            if std::fs::symlink_metadata(self.path(epoch)).is_ok() {
                continue;
            }
            let secret = Zeroizing::new(SecretKey::generate_for(self.scheme, rng).to_bytes());
            let kind = KeyKind::sphinx(self.scheme);
            write_atomic(&self.dir, &epoch_file_name(epoch), &encode(kind, epoch, &secret)[..])?;
            created.push(epoch);
        }
        Ok(created)
    }

    /// Reads epoch `e`'s key from disk (checking permissions, format, checksum and epoch).
    fn read(&self, epoch: u32) -> Result<SecretKey, KeystoreError> {
        let path = self.path(epoch);
        let (recorded, bytes) = read_key(&path, KeyKind::sphinx(self.scheme))?;
        if recorded != epoch {
            return Err(KeystoreError::EpochMismatch { path, recorded, named: epoch });
        }
        SecretKey::from_seed(self.scheme, &bytes).ok_or(KeystoreError::InvalidKey(path))
    }

    /// Loads these epochs' keys into memory (already loaded ones are kept as they are).
    pub fn load(&mut self, epochs: impl IntoIterator<Item = u32>) -> Result<(), KeystoreError> {
        for epoch in epochs {
            if !self.loaded.contains_key(&epoch) {
                let key = self.read(epoch)?;
                self.loaded.insert(epoch, key);
            }
        }
        Ok(())
    }

    /// Drops (and so zeroizes) in-memory keys of epochs not in `keep`. Files stay.
    pub fn unload_except(&mut self, keep: &[u32]) {
        self.loaded.retain(|e, _| keep.contains(e));
    }

    /// The in-memory key of `epoch`.
    pub fn secret(&self, epoch: u32) -> Option<&SecretKey> {
        self.loaded.get(&epoch)
    }

    /// Epochs whose keys are in memory, ascending.
    pub fn loaded_epochs(&self) -> impl Iterator<Item = u32> + '_ {
        self.loaded.keys().copied()
    }

    /// Public keys of the epochs in `epochs` that have a stored key (for the node's descriptor,
    /// usually `schedule.published_epochs(now)`), ascending. Epochs without a key file are
    /// skipped (the previous epoch's key when the node started inside the overlap); a damaged
    /// file is an error. Secrets read from disk are dropped once the public key is computed.
    pub fn public_keys(&self, epochs: RangeInclusive<u32>) -> Result<Vec<EpochKey>, KeystoreError> {
        let mut out = Vec::new();
        for epoch in epochs {
            let key = match self.loaded.get(&epoch) {
                Some(k) => k.public_key(),
                None => match self.read(epoch) {
                    Ok(k) => k.public_key(),
                    Err(KeystoreError::NotFound(_)) => continue,
                    Err(e) => return Err(e),
                },
            };
            out.push(EpochKey { epoch, key });
        }
        Ok(out)
    }

    /// Erases epoch `e`'s key: overwrite the file with zeros, fsync, unlink, fsync the directory,
    /// and drop the in-memory copy. Returns whether a file existed.
    pub fn erase(&mut self, epoch: u32) -> Result<bool, KeystoreError> {
        self.loaded.remove(&epoch);
        match erase_file(&self.path(epoch)) {
            Ok(()) => Ok(true),
            Err(KeystoreError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Erases every key (on disk or in memory) whose epoch is expired at `now_unix`, i.e.
    /// `now_unix ≥ epoch_end(e) + overlap`. Returns the erased epochs.
    pub fn erase_expired(&mut self, now_unix: u64) -> Result<Vec<u32>, KeystoreError> {
        let mut epochs = self.stored_epochs()?;
        epochs.extend(self.loaded.keys().copied());
        epochs.sort_unstable();
        epochs.dedup();
        epochs.retain(|e| self.schedule.is_expired(*e, now_unix));
        for &epoch in &epochs {
            self.erase(epoch)?;
        }
        Ok(epochs)
    }

    /// The whole periodic step at `now_unix`: erase expired keys, make sure keys exist for the
    /// current and the next `publish_ahead` epochs, and hold exactly the accepting epochs' keys
    /// in memory. Call it at least once per overlap period (and at start-up).
    pub fn rotate<R: CryptoRng>(&mut self, now_unix: u64, rng: &mut R) -> Result<Rotation, KeystoreError> {
        let erased = self.erase_expired(now_unix)?;
        let created = self.ensure(self.schedule.epoch_at(now_unix), rng)?;
        let accepting: Vec<u32> = self.schedule.accepting_epochs(now_unix).collect();
        // The previous epoch's key may be gone (node started inside the overlap, or it was
        // never generated): only the current epoch's key is required.
        let available: Vec<u32> =
            accepting.iter().copied().filter(|e| self.loaded.contains_key(e) || self.path(*e).exists()).collect();
        self.load(available.iter().copied())?;
        self.unload_except(&available);
        Ok(Rotation { erased, created, loaded: available })
    }
}
