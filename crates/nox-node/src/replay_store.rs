//! Replay caches on disk, so that no packet is accepted twice across a
//! restart: per epoch, a snapshot (written at shutdown) and an append-only
//! journal of the tags recorded since (one `write` per tag, before the packet
//! can leave the node). Formats: docs/spec/replay-cache.md.
//!
//! A `write` reaches the kernel's page cache, which survives the node
//! process being killed; `sync` (called periodically and at shutdown) covers
//! the machine losing power, for all but the last period's tags.

use std::{
    collections::HashMap,
    fs::{File, OpenOptions},
    io::{self, Write},
    path::{Path, PathBuf},
    sync::Mutex,
};

use nox_replay::{BloomParameters, ReplayCache, journal};

/// The replay directory of one node.
#[derive(Debug)]
pub struct ReplayStore {
    dir: PathBuf,
    journals: Mutex<HashMap<u32, File>>,
}

impl ReplayStore {
    /// Opens (creating) the directory.
    pub fn open(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self { dir: dir.to_path_buf(), journals: Mutex::new(HashMap::new()) })
    }

    fn snapshot_path(&self, epoch: u32) -> PathBuf {
        self.dir.join(format!("replay-{epoch:010}.snapshot"))
    }

    fn journal_path(&self, epoch: u32) -> PathBuf {
        self.dir.join(format!("replay-{epoch:010}.journal"))
    }

    /// The cache of `epoch`: its snapshot (if any) plus its journal, or a new
    /// cache. A corrupt snapshot is an error: starting with an empty cache
    /// would accept replays. A torn journal tail is cut off.
    pub fn load(&self, epoch: u32, params: BloomParameters) -> io::Result<(ReplayCache, usize)> {
        let snapshot = self.snapshot_path(epoch);
        let mut cache = match std::fs::read(&snapshot) {
            Ok(bytes) => {
                ReplayCache::from_bytes(&bytes).map_err(|e| io::Error::other(format!("{}: {e}", snapshot.display())))?
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => ReplayCache::new(epoch, params),
            Err(e) => return Err(e),
        };
        let path = self.journal_path(epoch);
        let mut recovered = 0;
        let existing = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
        if existing.is_empty() {
            file.write_all(&journal::encode_header(epoch))?;
        } else {
            let recovery =
                cache.apply_journal(&existing).map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
            recovered = recovery.records;
            if recovery.discarded_bytes > 0 {
                file.set_len(recovery.valid_len as u64)?;
            }
        }
        self.lock().insert(epoch, file);
        Ok((cache, recovered))
    }

    /// Appends the record of a tag just recorded in `epoch`'s cache.
    pub fn append(&self, epoch: u32, tag: &[u8; 32]) -> io::Result<()> {
        let record = journal::encode_record(epoch, tag);
        match self.lock().get_mut(&epoch) {
            Some(file) => file.write_all(&record),
            None => Err(io::Error::other(format!("no journal open for epoch {epoch}"))),
        }
    }

    /// Flushes every journal to stable storage.
    pub fn sync(&self) -> io::Result<()> {
        for file in self.lock().values() {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Writes `cache` as its epoch's snapshot (atomically) and starts its
    /// journal afresh.
    pub fn snapshot(&self, cache: &ReplayCache) -> io::Result<()> {
        let epoch = cache.epoch();
        let target = self.snapshot_path(epoch);
        let temporary = self.dir.join(format!(".replay-{epoch:010}.snapshot.tmp"));
        {
            let mut file = File::create(&temporary)?;
            cache.write_snapshot(&mut file)?;
            file.sync_all()?;
        }
        std::fs::rename(&temporary, &target)?;
        File::open(&self.dir)?.sync_all()?;
        let path = self.journal_path(epoch);
        let mut file = OpenOptions::new().create(true).write(true).truncate(true).open(&path)?;
        file.write_all(&journal::encode_header(epoch))?;
        file.sync_all()?;
        let file = OpenOptions::new().append(true).open(&path)?;
        self.lock().insert(epoch, file);
        Ok(())
    }

    /// Deletes a retired epoch's files: its key is gone, so its packets can
    /// no longer be processed and its tags are not needed.
    pub fn retire(&self, epoch: u32) {
        self.lock().remove(&epoch);
        let _ = std::fs::remove_file(self.snapshot_path(epoch));
        let _ = std::fs::remove_file(self.journal_path(epoch));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, File>> {
        self.journals.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_survive_a_restart_and_a_torn_tail() {
        let dir = std::env::temp_dir().join(format!("nox-replay-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let params = BloomParameters::for_capacity(10_000, 0.001).unwrap();
        let store = ReplayStore::open(&dir).unwrap();
        let (mut cache, recovered) = store.load(7, params).unwrap();
        assert_eq!(recovered, 0);
        for i in 0..100u8 {
            assert!(!cache.insert(&[i; 32]).is_replay());
            store.append(7, &[i; 32]).unwrap();
        }
        drop(store);
        // A torn write: half a record at the end.
        let journal = dir.join("replay-0000000007.journal");
        let mut file = OpenOptions::new().append(true).open(&journal).unwrap();
        file.write_all(&[1, 2, 3]).unwrap();
        let store = ReplayStore::open(&dir).unwrap();
        let (cache, recovered) = store.load(7, params).unwrap();
        assert_eq!(recovered, 100);
        assert!((0..100u8).all(|i| cache.check(&[i; 32])));
        assert!(!cache.check(&[200; 32]));
        // Snapshot, more tags, restart: both parts come back.
        store.snapshot(&cache).unwrap();
        store.append(7, &[201; 32]).unwrap();
        drop(store);
        let store = ReplayStore::open(&dir).unwrap();
        let (cache, recovered) = store.load(7, params).unwrap();
        assert_eq!(recovered, 1);
        assert!(cache.check(&[5; 32]) && cache.check(&[201; 32]));
        store.retire(7);
        assert!(!journal.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
