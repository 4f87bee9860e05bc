//! The bytes of the replay state: [`ReplayStorage`] and its two implementations, the real
//! directory ([`DirStorage`], durable on `fdatasync`/rename) and [`MemStorage`] (synced and
//! unsynced bytes kept apart, so tests can simulate a power loss and inject sync failures).

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
