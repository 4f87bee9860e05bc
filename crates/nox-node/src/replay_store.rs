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

use std::{
    collections::HashMap,
    fs::{File, OpenOptions},
    io::{self, Write},
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use nox_replay::{BloomParameters, JournalError, ParsedJournal, ReplayCache, SnapshotError, journal};

/// Byte storage for replay state, by file name. Appends and truncations are
/// volatile until [`ReplayStorage::sync`] of that file returns `Ok`;
/// [`ReplayStorage::replace`] is durable (and atomic) when it returns `Ok`.
pub trait ReplayStorage: Send + Sync + std::fmt::Debug {
    /// The whole file, or `None` if it does not exist.
    fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>>;
    /// Appends to the file, creating it if needed.
    fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()>;
    /// Shortens the file to `len` bytes.
    fn truncate(&self, name: &str, len: u64) -> io::Result<()>;
    /// Makes the file's content, length and existence durable
    /// (`fdatasync`, plus the directory the first time).
    fn sync(&self, name: &str) -> io::Result<()>;
    /// Replaces the file atomically and durably with what `write` produces.
    fn replace(&self, name: &str, write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>) -> io::Result<()>;
    /// Deletes the file (missing is fine).
    fn remove(&self, name: &str) -> io::Result<()>;
}

/// A directory on the local file system.
#[derive(Debug)]
pub struct DirStorage {
    dir: PathBuf,
    /// Open append handles, and whether the directory entry still needs a sync.
    open: Mutex<HashMap<String, (File, bool)>>,
}

impl DirStorage {
    /// Opens (creating) the directory.
    pub fn open(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self { dir: dir.to_path_buf(), open: Mutex::new(HashMap::new()) })
    }

    fn handles(&self) -> MutexGuard<'_, HashMap<String, (File, bool)>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}

impl ReplayStorage for DirStorage {
    fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.dir.join(name)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut handles = self.handles();
        if !handles.contains_key(name) {
            let path = self.dir.join(name);
            let existed = path.exists();
            let file = OpenOptions::new().create(true).append(true).open(&path)?;
            handles.insert(name.to_owned(), (file, !existed));
        }
        match handles.get_mut(name) {
            Some((file, _)) => file.write_all(bytes),
            None => Err(io::Error::other("journal handle vanished")),
        }
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        let handles = self.handles();
        match handles.get(name) {
            Some((file, _)) => file.set_len(len),
            None => OpenOptions::new().write(true).open(self.dir.join(name))?.set_len(len),
        }
    }

    fn sync(&self, name: &str) -> io::Result<()> {
        let mut handles = self.handles();
        let new_entry = match handles.get_mut(name) {
            Some((file, new_entry)) => {
                file.sync_data()?;
                std::mem::replace(new_entry, false)
            }
            None => {
                OpenOptions::new().write(true).open(self.dir.join(name))?.sync_data()?;
                false
            }
        };
        drop(handles);
        if new_entry {
            self.sync_dir()?;
        }
        Ok(())
    }

    fn replace(&self, name: &str, write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
        let target = self.dir.join(name);
        let temporary = self.dir.join(format!(".{name}.tmp"));
        {
            let mut file = io::BufWriter::new(File::create(&temporary)?);
            write(&mut file)?;
            file.into_inner().map_err(io::IntoInnerError::into_error)?.sync_all()?;
        }
        // The old handle (if any) points at the replaced inode: forget it.
        self.handles().remove(name);
        std::fs::rename(&temporary, &target)?;
        self.sync_dir()
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.handles().remove(name);
        match std::fs::remove_file(self.dir.join(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// In-memory storage that behaves like a disk cache in front of a disk: what
/// was written but not synced is lost by [`MemStorage::power_loss`], and sync
/// failures can be injected. For tests (simulated crashes), never for a node.
#[derive(Debug, Clone, Default)]
pub struct MemStorage {
    files: Arc<Mutex<HashMap<String, MemFile>>>,
    fail_sync: Arc<AtomicBool>,
    /// How long each sync takes, in microseconds (a slow disk).
    sync_micros: Arc<AtomicU64>,
}

#[derive(Debug, Clone, Default)]
struct MemFile {
    /// What a reader sees now (the page cache).
    current: Option<Vec<u8>>,
    /// What survives a power loss.
    durable: Option<Vec<u8>>,
}

impl MemStorage {
    /// Empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    /// The machine loses power: every file reverts to its last synced state
    /// (files never synced vanish).
    pub fn power_loss(&self) {
        for file in self.lock().values_mut() {
            file.current = file.durable.clone();
        }
    }

    /// An independent copy of what survives a power loss now: the disk as a
    /// restarted machine finds it, untouched by the crashed process's threads.
    pub fn fork_durable(&self) -> MemStorage {
        let files = self
            .lock()
            .iter()
            .filter_map(|(name, file)| {
                file.durable
                    .clone()
                    .map(|bytes| (name.clone(), MemFile { current: Some(bytes.clone()), durable: Some(bytes) }))
            })
            .collect();
        MemStorage { files: Arc::new(Mutex::new(files)), ..MemStorage::default() }
    }

    /// From now on, [`ReplayStorage::sync`] fails (like `EIO` from `fsync`).
    pub fn fail_syncs(&self, fail: bool) {
        self.fail_sync.store(fail, Ordering::SeqCst);
    }

    /// Every later sync takes `delay` (a slow disk), so tests can see what
    /// would leave the node before its tag is durable.
    pub fn set_sync_delay(&self, delay: Duration) {
        self.sync_micros.store(u64::try_from(delay.as_micros()).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// Applies `change` to the current bytes of `name` (e.g. to damage them);
    /// `durable` too, so the damage survives a power loss.
    pub fn corrupt(&self, name: &str, change: impl Fn(&mut Vec<u8>)) {
        if let Some(file) = self.lock().get_mut(name) {
            file.current.as_mut().map(&change);
            file.durable.as_mut().map(&change);
        }
    }

    /// The current bytes of `name`.
    pub fn contents(&self, name: &str) -> Option<Vec<u8>> {
        self.lock().get(name).and_then(|f| f.current.clone())
    }

    /// The bytes of `name` that would survive a power loss now.
    pub fn durable_contents(&self, name: &str) -> Option<Vec<u8>> {
        self.lock().get(name).and_then(|f| f.durable.clone())
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, MemFile>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ReplayStorage for MemStorage {
    fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        Ok(self.contents(name))
    }

    fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.lock().entry(name.to_owned()).or_default().current.get_or_insert_with(Vec::new).extend_from_slice(bytes);
        Ok(())
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        match self.lock().get_mut(name).and_then(|f| f.current.as_mut()) {
            Some(bytes) => {
                bytes.truncate(usize::try_from(len).unwrap_or(usize::MAX));
                Ok(())
            }
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    fn sync(&self, name: &str) -> io::Result<()> {
        let delay = self.sync_micros.load(Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_micros(delay));
        }
        if self.fail_sync.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected sync failure (EIO)"));
        }
        match self.lock().get_mut(name) {
            Some(file) => {
                file.durable = file.current.clone();
                Ok(())
            }
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    fn replace(&self, name: &str, write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
        let mut bytes = Vec::new();
        write(&mut bytes)?;
        if self.fail_sync.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected sync failure (EIO)"));
        }
        self.lock().insert(name.to_owned(), MemFile { current: Some(bytes.clone()), durable: Some(bytes) });
        Ok(())
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.lock().remove(name);
        Ok(())
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
