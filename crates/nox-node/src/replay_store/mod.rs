//! Replay caches on disk, so that no packet is accepted twice across a
//! restart or a power loss: per epoch, a snapshot (written at shutdown) and
//! an append-only journal of the tags recorded since. Formats:
//! docs/spec/replay-cache.md.
//!
//! The journal is written in batches by the group-commit thread
//! ([`crate::TagJournal`]): one append of the batch's records (preceded by a
//! commit slot naming the length the previous sync made durable) and one
//! `fdatasync`. Packets wait in the mixer until their batch is durable.
//!
//! The bytes live behind [`ReplayStorage`]: [`DirStorage`] is the real
//! directory; [`MemStorage`] keeps synced and unsynced bytes apart so tests
//! can simulate a power loss and inject sync failures.
//!
//! `storage` holds that byte layer; this module the [`ReplayStore`] over it (the epochs' caches,
//! their journals and snapshots) and [`ReplayStateError`].

mod storage;
#[cfg(test)]
mod tests;

pub use storage::{DirStorage, MemStorage, ReplayStorage};

use std::{
    collections::HashMap,
    io,
    path::Path,
    sync::{Mutex, MutexGuard, PoisonError},
};

use nox_replay::{BloomParameters, JournalError, ParsedJournal, ReplayCache, SnapshotError, journal};

/// Why an epoch's replay state could not be loaded or written. The node
/// refuses the epoch's packets ([`nox_relay::DropReason::ReplayStateLost`])
/// until the epoch ends.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayStateError {
    /// Reading, writing or syncing a file failed.
    #[error("{file}: {kind}: {message}")]
    Io {
        /// The file.
        file: String,
        /// The error's kind.
        kind: io::ErrorKind,
        /// The error's text.
        message: String,
    },
    /// The snapshot is corrupt or of an unknown format.
    #[error("{file}: {error}")]
    Snapshot {
        /// The file.
        file: String,
        /// What is wrong with it.
        error: SnapshotError,
    },
    /// The journal is damaged (tags that were durable are lost) or unusable.
    #[error("{file}: {error}")]
    Journal {
        /// The file.
        file: String,
        /// What is wrong with it.
        error: JournalError,
    },
    /// No journal is open for the epoch.
    #[error("no journal open for epoch {0}")]
    NotOpen(u32),
}

impl ReplayStateError {
    fn io(file: &str, error: &io::Error) -> Self {
        Self::Io { file: file.to_owned(), kind: error.kind(), message: error.to_string() }
    }

    /// A short label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Io { .. } => "io",
            Self::Snapshot { .. } => "snapshot",
            Self::Journal { error: JournalError::Damaged { .. }, .. } => "journal_damaged",
            Self::Journal { .. } => "journal",
            Self::NotOpen(_) => "not_open",
        }
    }
}

/// What is known of one open journal file.
#[derive(Debug, Clone, Copy)]
struct OpenJournal {
    /// Bytes written so far.
    len: u64,
    /// Bytes made durable by the last completed sync.
    durable: u64,
    /// The durable length the last commit slot written names.
    committed: u64,
}

/// The replay state of one node: snapshots and journals by epoch.
#[derive(Debug)]
pub struct ReplayStore {
    storage: Box<dyn ReplayStorage>,
    journals: Mutex<HashMap<u32, OpenJournal>>,
}

/// A tag whose journal record is still to be written.
pub type PendingTag = (u32, [u8; 32]);

impl ReplayStore {
    /// The store in directory `dir` (created if needed).
    pub fn open(dir: &Path) -> io::Result<Self> {
        Ok(Self::with_storage(Box::new(DirStorage::open(dir)?)))
    }

    /// The store over any [`ReplayStorage`].
    pub fn with_storage(storage: Box<dyn ReplayStorage>) -> Self {
        Self { storage, journals: Mutex::new(HashMap::new()) }
    }

    /// The snapshot file name of `epoch`.
    pub fn snapshot_name(epoch: u32) -> String {
        format!("replay-{epoch:010}.snapshot")
    }

    /// The journal file name of `epoch`.
    pub fn journal_name(epoch: u32) -> String {
        format!("replay-{epoch:010}.journal")
    }

    /// The cache of `epoch`: its snapshot (if any) plus its journal, or a new
    /// cache, and the number of journal records replayed. The journal is
    /// then durable (synced, torn tail cut off) and open for appends.
    ///
    /// Errors mean the epoch's tags may be lost — a corrupt snapshot, a
    /// damaged journal, a read or sync that failed — and the caller must not
    /// accept the epoch's packets. A damaged journal is left untouched.
    pub fn load(&self, epoch: u32, params: BloomParameters) -> Result<(ReplayCache, usize), ReplayStateError> {
        let snapshot = Self::snapshot_name(epoch);
        let mut cache = match self.storage.read(&snapshot).map_err(|e| ReplayStateError::io(&snapshot, &e))? {
            Some(bytes) => ReplayCache::from_bytes(&bytes)
                .map_err(|error| ReplayStateError::Snapshot { file: snapshot.clone(), error })?,
            None => ReplayCache::new(epoch, params),
        };
        if cache.epoch() != epoch {
            return Err(ReplayStateError::Journal {
                file: snapshot,
                error: JournalError::EpochMismatch { journal: cache.epoch(), cache: epoch },
            });
        }
        let name = Self::journal_name(epoch);
        let io = |e: io::Error| ReplayStateError::io(&name, &e);
        let existing = self.storage.read(&name).map_err(io)?;
        let (len, recovered) = match existing.as_deref() {
            // A header that never reached the disk: no record can follow it.
            None | Some([]) => {
                let header = journal::encode_header(epoch);
                self.storage.append(&name, &header).map_err(io)?;
                (header.len() as u64, 0)
            }
            Some(bytes) if bytes.len() < journal::HEADER_LEN => {
                self.storage.truncate(&name, 0).map_err(io)?;
                let header = journal::encode_header(epoch);
                self.storage.append(&name, &header).map_err(io)?;
                (header.len() as u64, 0)
            }
            Some(bytes) => {
                let journal_error = |error| ReplayStateError::Journal { file: name.clone(), error };
                let parsed = ParsedJournal::parse(bytes).map_err(journal_error)?;
                let recovery = cache.apply_parsed_journal(&parsed).map_err(journal_error)?;
                if parsed.version() != journal::VERSION {
                    // A version 1 journal cannot take commit slots: fold it into
                    // a snapshot and continue with a fresh version 2 journal.
                    self.snapshot(&cache)?;
                    tracing::info!(epoch, records = recovery.records, "replay journal v1 migrated to a snapshot");
                    return Ok((cache, recovery.records));
                }
                if recovery.discarded_bytes > 0 {
                    tracing::warn!(
                        epoch,
                        discarded_bytes = recovery.discarded_bytes,
                        "replay journal: torn tail (a batch never acknowledged as durable) cut off"
                    );
                    self.storage.truncate(&name, recovery.valid_len as u64).map_err(io)?;
                }
                (recovery.valid_len as u64, recovery.records)
            }
        };
        // What we read may still sit only in the page cache (the previous
        // process was killed, not the machine): make it durable before a
        // commit slot claims so.
        self.storage.sync(&name).map_err(io)?;
        self.lock().insert(epoch, OpenJournal { len, durable: len, committed: journal::HEADER_LEN as u64 });
        Ok((cache, recovered))
    }

    /// Writes a batch of tags (any epochs, in order) to their journals and
    /// makes them durable: per epoch one append — a commit slot for the
    /// previous sync, then the records — and one sync. Tags of epochs with
    /// no open journal (retired meanwhile: their key is gone, so no replay
    /// of them can be processed) are skipped.
    ///
    /// An error leaves the journals in an unknown state: after a failed
    /// `fsync` the kernel may have dropped the dirty pages, so a later sync
    /// that succeeds proves nothing. The caller must stop emitting.
    pub fn commit(&self, batch: &[PendingTag]) -> Result<(), ReplayStateError> {
        let mut by_epoch: Vec<(u32, Vec<u8>)> = Vec::new();
        let mut journals = self.lock();
        for (epoch, tag) in batch {
            let Some(open) = journals.get(epoch) else { continue };
            let index = match by_epoch.iter().position(|(e, _)| e == epoch) {
                Some(index) => index,
                None => {
                    let mut bytes = Vec::with_capacity((batch.len() + 1) * journal::RECORD_LEN);
                    if open.durable > open.committed {
                        bytes.extend_from_slice(&journal::encode_commit(*epoch, open.durable));
                    }
                    by_epoch.push((*epoch, bytes));
                    by_epoch.len() - 1
                }
            };
            by_epoch[index].1.extend_from_slice(&journal::encode_record(*epoch, tag));
        }
        for (epoch, bytes) in &by_epoch {
            let name = Self::journal_name(*epoch);
            self.storage.append(&name, bytes).map_err(|e| ReplayStateError::io(&name, &e))?;
            if let Some(open) = journals.get_mut(epoch) {
                open.committed = open.committed.max(open.durable);
                open.len += bytes.len() as u64;
            }
        }
        for (epoch, _) in &by_epoch {
            let name = Self::journal_name(*epoch);
            self.storage.sync(&name).map_err(|e| ReplayStateError::io(&name, &e))?;
            if let Some(open) = journals.get_mut(epoch) {
                open.durable = open.len;
            }
        }
        Ok(())
    }

    /// Writes `cache` as its epoch's snapshot (atomically, durably) and
    /// starts its journal afresh (header synced). Call only when no batch of
    /// the epoch is pending (at shutdown, after the group-commit thread
    /// finished).
    pub fn snapshot(&self, cache: &ReplayCache) -> Result<(), ReplayStateError> {
        let epoch = cache.epoch();
        let snapshot = Self::snapshot_name(epoch);
        self.storage
            .replace(&snapshot, &mut |mut out| cache.write_snapshot(&mut out))
            .map_err(|e| ReplayStateError::io(&snapshot, &e))?;
        let name = Self::journal_name(epoch);
        let header = journal::encode_header(epoch);
        self.storage.replace(&name, &mut |out| out.write_all(&header)).map_err(|e| ReplayStateError::io(&name, &e))?;
        let len = header.len() as u64;
        self.lock().insert(epoch, OpenJournal { len, durable: len, committed: len });
        Ok(())
    }

    /// Deletes a retired epoch's files: its key is gone, so its packets can
    /// no longer be processed and its tags are not needed.
    pub fn retire(&self, epoch: u32) -> Result<(), ReplayStateError> {
        self.lock().remove(&epoch);
        for name in [Self::snapshot_name(epoch), Self::journal_name(epoch)] {
            self.storage.remove(&name).map_err(|e| ReplayStateError::io(&name, &e))?;
        }
        Ok(())
    }

    /// Epochs with an open journal.
    pub fn open_epochs(&self) -> Vec<u32> {
        let mut epochs: Vec<u32> = self.lock().keys().copied().collect();
        epochs.sort_unstable();
        epochs
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u32, OpenJournal>> {
        self.journals.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
