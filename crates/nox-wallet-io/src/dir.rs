//! The wallet's directory (mode 0700): `wallet.key` (the seed sealed under the passphrase,
//! `nox_wallet::file`), `wallet.state` (the view of the pool sealed under a seed-derived key) and
//! `submitted.json` (the journal of transactions handed over, `nox_wallet::journal`). Every file
//! is written atomically with mode 0600. Moved unchanged from the `nox wallet` command (issue 34):
//! the messages are the command's.

use std::path::{Path, PathBuf};

use nox_wallet::{PoolView, Seed, WalletError, file, journal};
use rand_core_06::{CryptoRng, RngCore};
use zeroize::Zeroizing;

/// What went wrong with a file of the wallet's directory.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// Reading or creating `path` failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The wallet has no key file (or it cannot be read).
    #[error("{}: {source} (create one with `nox wallet new`)", path.display())]
    NoKey {
        /// The key file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Setting the directory's mode failed.
    #[error("{0}")]
    Permissions(std::io::Error),
    /// A sealed file does not open (wrong passphrase, another wallet's state, damaged).
    #[error("{}: {source}", path.display())]
    Sealed {
        /// The file.
        path: PathBuf,
        /// The error.
        source: WalletError,
    },
    /// The state file opens but its view does not load.
    #[error("{}: {source} (delete it to rescan)", path.display())]
    State {
        /// The state file.
        path: PathBuf,
        /// The error.
        source: WalletError,
    },
    /// Encoding or sealing the view failed.
    #[error("{0}")]
    Seal(WalletError),
    /// The journal is not valid JSON.
    #[error("{}: {source}", path.display())]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
    /// Encoding the journal failed.
    #[error("{0}")]
    JournalEncode(serde_json::Error),
    /// Writing a file failed.
    #[error("{0}")]
    Write(#[from] nox_keystore::KeystoreError),
}

/// Writes `bytes` to `path` atomically, mode 0600 (temporary file, fsync, rename, fsync dir).
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), DirError> {
    // A fresh O_EXCL temporary file, never an existing file's mode (nox_keystore).
    Ok(nox_keystore::write_private_file(path, bytes)?)
}

/// A wallet directory.
#[derive(Clone, Debug)]
pub struct WalletDir {
    root: PathBuf,
}

impl WalletDir {
    /// The wallet in directory `root` (nothing is read yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `wallet.key`: the sealed seed.
    pub fn key_path(&self) -> PathBuf {
        self.root.join("wallet.key")
    }

    /// `wallet.state`: the sealed view.
    pub fn state_path(&self) -> PathBuf {
        self.root.join("wallet.state")
    }

    /// `submitted.json`: the journal.
    pub fn journal_path(&self) -> PathBuf {
        self.root.join(journal::FILE)
    }

    /// Creates the directory (and its parents), mode 0700.
    pub fn create(&self) -> Result<(), DirError> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&self.root).map_err(|source| DirError::Io { path: self.root.clone(), source })?;
        std::fs::set_permissions(&self.root, std::fs::Permissions::from_mode(0o700)).map_err(DirError::Permissions)
    }

    /// The sealed seed's bytes.
    pub fn read_key(&self) -> Result<Vec<u8>, DirError> {
        let path = self.key_path();
        std::fs::read(&path).map_err(|source| DirError::NoKey { path, source })
    }

    /// Opens the sealed seed `bytes` (read by [`Self::read_key`]) with `passphrase`.
    pub fn open_seed(&self, bytes: &[u8], passphrase: &[u8]) -> Result<Seed, DirError> {
        file::open_seed(bytes, passphrase).map_err(|source| DirError::Sealed { path: self.key_path(), source })
    }

    /// The saved view, or (no state file yet) an empty one that starts at block `from_block`.
    pub fn load_view(&self, seed: &Seed, from_block: u64) -> Result<PoolView, DirError> {
        let path = self.state_path();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let plain =
                    file::open_state(seed, &bytes).map_err(|source| DirError::Sealed { path: path.clone(), source })?;
                PoolView::from_json(&plain).map_err(|source| DirError::State { path, source })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut view = PoolView::new();
                view.last_block = from_block.saturating_sub(1);
                Ok(view)
            }
            Err(source) => Err(DirError::Io { path, source }),
        }
    }

    /// Seals `view` under `seed`'s state key and writes it.
    pub fn save_view<R: RngCore + CryptoRng>(&self, seed: &Seed, view: &PoolView, rng: &mut R) -> Result<(), DirError> {
        let plain = Zeroizing::new(view.to_json().map_err(DirError::Seal)?);
        let sealed = file::seal_state(seed, &plain, rng).map_err(DirError::Seal)?;
        write_private(&self.state_path(), &sealed)
    }

    /// The journal (empty if there is no file).
    pub fn load_journal(&self) -> Result<journal::Journal, DirError> {
        let path = self.journal_path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| DirError::Journal { path, source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(journal::Journal::default()),
            Err(source) => Err(DirError::Io { path, source }),
        }
    }

    /// Writes the journal.
    pub fn save_journal(&self, j: &journal::Journal) -> Result<(), DirError> {
        let bytes = serde_json::to_vec_pretty(j).map_err(DirError::JournalEncode)?;
        write_private(&self.journal_path(), &bytes)
    }

    /// Records that `entry` is being handed over (before it leaves, or right after a broadcast).
    pub fn journal_record(&self, entry: journal::Entry) -> Result<(), DirError> {
        let mut j = self.load_journal()?;
        j.record(entry);
        self.save_journal(&j)
    }

    /// Forgets `intent`'s entry: its outcome is known.
    pub fn journal_resolve(&self, intent: &str) -> Result<(), DirError> {
        let mut j = self.load_journal()?;
        if j.find(intent).is_none() {
            return Ok(());
        }
        j.resolve(intent);
        self.save_journal(&j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};

    #[test]
    fn the_view_and_the_journal_round_trip_and_the_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = WalletDir::new(tmp.path().join("w"));
        dir.create().unwrap();
        assert_eq!(std::fs::metadata(dir.root()).unwrap().permissions().mode() & 0o777, 0o700);
        let mut rng = ChaCha20Rng::from_seed([3; 32]);
        let seed = Seed::random(&mut rng);
        // No state yet: an empty view starting at the pool's block.
        assert_eq!(dir.load_view(&seed, 10).unwrap().last_block, 9);
        let mut view = PoolView::new();
        view.last_block = 42;
        dir.save_view(&seed, &view, &mut rng).unwrap();
        assert_eq!(dir.load_view(&seed, 0).unwrap().last_block, 42);
        assert_eq!(std::fs::metadata(dir.state_path()).unwrap().permissions().mode() & 0o777, 0o600);
        // Another seed cannot open it, and the message names the file.
        let other = Seed::random(&mut rng);
        let e = dir.load_view(&other, 0).unwrap_err();
        assert!(matches!(e, DirError::Sealed { .. }) && e.to_string().contains("wallet.state"), "{e}");

        let entry = journal::Entry {
            intent: "deposit".into(),
            tx_hash: None,
            nullifiers: None,
            deadline: Some(7),
            relayer: None,
            from_block: 5,
        };
        dir.journal_record(entry.clone()).unwrap();
        assert_eq!(dir.load_journal().unwrap().find("deposit"), Some(&entry));
        dir.journal_resolve("deposit").unwrap();
        assert!(dir.load_journal().unwrap().entries.is_empty());
    }

    #[test]
    fn a_missing_key_says_how_to_make_one() {
        let tmp = tempfile::tempdir().unwrap();
        let e = WalletDir::new(tmp.path()).read_key().unwrap_err();
        assert!(e.to_string().ends_with("(create one with `nox wallet new`)"), "{e}");
    }
}
