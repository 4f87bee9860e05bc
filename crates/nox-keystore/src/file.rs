//! Key files on disk: the 61-byte format, private directories, atomic writes, erasure.
//!
//! ```text
//! offset size field
//!      0    8 magic "NOXKEY01"
//!      8    1 kind: 1 identity (Ed25519 seed), 2 link (X25519 secret), 3 Sphinx ristretto255
//!               scalar, 4 / 5 / 6 Sphinx X25519-KEM / ML-KEM-768 / X-Wing seed
//!      9    4 epoch, u32 LE (0 for identity and link keys)
//!     13   32 secret
//!     45   16 check = BLAKE3-DK("NOX keystore v1 key file", bytes 0..45)[0..16]
//! ```

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use nox_sphinx::Scheme;
use zeroize::Zeroizing;

use crate::error::KeystoreError;

/// Length of a key file.
pub const KEY_FILE_LEN: usize = 61;
/// First bytes of every key file.
pub const KEY_FILE_MAGIC: &[u8; 8] = b"NOXKEY01";
/// BLAKE3 `derive_key` context of the check field.
pub const KEY_FILE_CONTEXT: &str = "NOX keystore v1 key file";
/// Suffix of temporary files (`.<name>.<pid>.<n>.tmp`); stale ones are erased on open.
pub(crate) const TMP_SUFFIX: &str = ".tmp";

/// What a key file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum KeyKind {
    /// Ed25519 identity seed.
    Identity = 1,
    /// X25519 link secret.
    Link = 2,
    /// Sphinx (ristretto255) secret scalar for one epoch.
    Sphinx = 3,
    /// Sphinx X25519-KEM secret for one epoch.
    SphinxX25519Kem = 4,
    /// Sphinx ML-KEM-768 key seed for one epoch.
    SphinxMlKem768 = 5,
    /// Sphinx X-Wing key seed for one epoch.
    SphinxXWing = 6,
}

impl KeyKind {
    /// The kind of a Sphinx key of `scheme`: a key file names its scheme, so a key is never
    /// read as another scheme's (every 32 bytes are a KEM seed).
    pub const fn sphinx(scheme: Scheme) -> Self {
        match scheme {
            Scheme::Ristretto255 => KeyKind::Sphinx,
            Scheme::X25519Kem => KeyKind::SphinxX25519Kem,
            Scheme::MlKem768 => KeyKind::SphinxMlKem768,
            Scheme::XWing => KeyKind::SphinxXWing,
        }
    }

    /// The scheme of a Sphinx kind; `None` for identity and link keys.
    pub const fn scheme(self) -> Option<Scheme> {
        match self {
            KeyKind::Identity | KeyKind::Link => None,
            KeyKind::Sphinx => Some(Scheme::Ristretto255),
            KeyKind::SphinxX25519Kem => Some(Scheme::X25519Kem),
            KeyKind::SphinxMlKem768 => Some(Scheme::MlKem768),
            KeyKind::SphinxXWing => Some(Scheme::XWing),
        }
    }

    fn from_byte(byte: u8) -> Option<Self> {
        [
            KeyKind::Identity,
            KeyKind::Link,
            KeyKind::Sphinx,
            KeyKind::SphinxX25519Kem,
            KeyKind::SphinxMlKem768,
            KeyKind::SphinxXWing,
        ]
        .into_iter()
        .find(|k| *k as u8 == byte)
    }
}

/// Encodes a key file. The result holds the secret and is zeroized on drop.
pub(crate) fn encode(kind: KeyKind, epoch: u32, secret: &[u8; 32]) -> Zeroizing<[u8; KEY_FILE_LEN]> {
    let mut out = Zeroizing::new([0u8; KEY_FILE_LEN]);
    out[..8].copy_from_slice(KEY_FILE_MAGIC);
    out[8] = kind as u8;
    out[9..13].copy_from_slice(&epoch.to_le_bytes());
    out[13..45].copy_from_slice(secret);
    let check = blake3::derive_key(KEY_FILE_CONTEXT, &out[..45]);
    out[45..].copy_from_slice(&check[..16]);
    out
}

/// Reads and checks a key file; returns its epoch and secret.
pub(crate) fn read_key(path: &Path, kind: KeyKind) -> Result<(u32, Zeroizing<[u8; 32]>), KeystoreError> {
    check_private(path, false)?;
    let mut file = File::open(path).map_err(|e| KeystoreError::io("open", path, e))?;
    let mut buf = Zeroizing::new([0u8; KEY_FILE_LEN + 1]);
    let mut len = 0;
    while len < buf.len() {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(KeystoreError::io("read", path, e)),
        }
    }
    if len != KEY_FILE_LEN {
        return Err(KeystoreError::BadLength { path: path.to_path_buf(), len, expected: KEY_FILE_LEN });
    }
    if &buf[..8] != KEY_FILE_MAGIC {
        return Err(KeystoreError::BadMagic(path.to_path_buf()));
    }
    let check = blake3::derive_key(KEY_FILE_CONTEXT, &buf[..45]);
    if check[..16] != buf[45..KEY_FILE_LEN] {
        return Err(KeystoreError::Corrupt(path.to_path_buf()));
    }
    if buf[8] != kind as u8 {
        // A Sphinx key of another scheme says which: the directory was switched to another
        // scheme (docs: one directory per scheme).
        if let (Some(expected), Some(found)) = (kind.scheme(), KeyKind::from_byte(buf[8]).and_then(KeyKind::scheme)) {
            return Err(KeystoreError::WrongScheme { path: path.to_path_buf(), found, expected });
        }
        return Err(KeystoreError::WrongKind(path.to_path_buf()));
    }
    let mut epoch = [0u8; 4];
    epoch.copy_from_slice(&buf[9..13]);
    let mut secret = Zeroizing::new([0u8; 32]);
    secret.copy_from_slice(&buf[13..45]);
    Ok((u32::from_le_bytes(epoch), secret))
}

/// Creates `dir` (and missing parents) with mode 0700, or checks that an existing one is a
/// directory with no group/other permissions.
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<(), KeystoreError> {
    match DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) => return Err(KeystoreError::io("create directory", dir, e)),
    }
    check_private(dir, true)
}

/// Refuses anything but a regular file (or directory) with no group/other permission bits.
pub(crate) fn check_private(path: &Path, dir: bool) -> Result<(), KeystoreError> {
    let meta = fs::symlink_metadata(path).map_err(|e| KeystoreError::io("stat", path, e))?;
    let right_type = if dir { meta.file_type().is_dir() } else { meta.file_type().is_file() };
    if !right_type || meta.mode() & 0o077 != 0 {
        return Err(KeystoreError::InsecurePermissions { path: path.to_path_buf(), mode: meta.mode() });
    }
    Ok(())
}

/// fsyncs a directory so a rename or unlink inside it is durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), KeystoreError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| KeystoreError::io("fsync directory", dir, e))
}

/// Writes `dir/name` atomically with mode 0600: temp file, write, fsync, rename, fsync dir.
/// Refuses to replace an existing file. On any error the temp file is erased.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), KeystoreError> {
    write_atomic_with(dir, name, bytes, |file, bytes| file.write_all(bytes))
}

/// A fresh temporary file beside `dir/name`, created new (`O_EXCL`) with mode 0600: the first
/// step of both atomic writers below.
fn create_private_temp(dir: &Path, name: &str) -> Result<(std::path::PathBuf, File), KeystoreError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}{TMP_SUFFIX}", std::process::id()));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| KeystoreError::io("create", &tmp, e))?;
    Ok((tmp, file))
}

/// Writes a secret file (a chain key, a wallet file, a relayer key…) at `path`, replacing any
/// file there, so that it is never readable by anyone but its owner and never half-written: a
/// temporary file beside it created new (`O_EXCL`, so never an existing file's mode) with mode
/// 0600, written, fsynced, renamed over `path`, and the directory fsynced. On any error the
/// temporary file is erased. Every key file NOX writes outside the node keystore goes through
/// this (issue 29 item 7).
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<(), KeystoreError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| KeystoreError::io("name", path, std::io::Error::from(ErrorKind::InvalidInput)))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let (tmp, mut file) = create_private_temp(dir, name)?;
    let written =
        file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|e| KeystoreError::io("write", &tmp, e)).and_then(
            |()| {
                drop(file);
                fs::rename(&tmp, path).map_err(|e| KeystoreError::io("rename", path, e))
            },
        );
    if let Err(e) = written {
        let _ = erase_file(&tmp);
        return Err(e);
    }
    sync_dir(dir)
}

/// [`write_atomic`] with the write step supplied (tests inject failures through it).
pub(crate) fn write_atomic_with(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    write: impl FnOnce(&mut File, &[u8]) -> std::io::Result<()>,
) -> Result<(), KeystoreError> {
    let target = dir.join(name);
    if fs::symlink_metadata(&target).is_ok() {
        return Err(KeystoreError::AlreadyExists(target));
    }
    let (tmp, mut file) = create_private_temp(dir, name)?;
    let written = write(&mut file, bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| KeystoreError::io("write", &tmp, e))
        .and_then(|()| {
            drop(file);
            fs::rename(&tmp, &target).map_err(|e| KeystoreError::io("rename", &target, e))
        });
    if let Err(e) = written {
        // Best effort: the write error is the one to report.
        let _ = erase_file(&tmp);
        return Err(e);
    }
    sync_dir(dir)
}

/// Overwrites a file with zeros, fsyncs it, unlinks it and fsyncs its directory.
///
/// On a journaling, copy-on-write or flash-translating store the old blocks may survive the
/// overwrite; see the crate README for what this does and does not guarantee.
pub(crate) fn erase_file(path: &Path) -> Result<(), KeystoreError> {
    let mut file = OpenOptions::new().write(true).open(path).map_err(|e| KeystoreError::io("open", path, e))?;
    let len = file.metadata().map_err(|e| KeystoreError::io("stat", path, e))?.len();
    let zeros = [0u8; 4096];
    let mut left = len;
    while left > 0 {
        let chunk = usize::try_from(left.min(zeros.len() as u64)).unwrap_or(zeros.len());
        file.write_all(&zeros[..chunk]).map_err(|e| KeystoreError::io("overwrite", path, e))?;
        left -= chunk as u64;
    }
    file.sync_all().map_err(|e| KeystoreError::io("fsync", path, e))?;
    drop(file);
    fs::remove_file(path).map_err(|e| KeystoreError::io("unlink", path, e))?;
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => sync_dir(dir),
        _ => Ok(()),
    }
}

/// Erases temporary files left by an interrupted write.
pub(crate) fn erase_stale_temps(dir: &Path) -> Result<(), KeystoreError> {
    let entries = fs::read_dir(dir).map_err(|e| KeystoreError::io("read directory", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| KeystoreError::io("read directory", dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if is_file && name.starts_with('.') && name.ends_with(TMP_SUFFIX) {
            erase_file(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn private_files_are_0600_and_replace_what_was_there() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("nox-keystore-private-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("deployer.key");
        // A world-readable file already there (as the old writers left them).
        fs::write(&path, b"old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        super::write_private_file(&path, b"new secret").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new secret");
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        super::write_private_file(&dir.join("fresh.key"), b"x").unwrap();
        assert_eq!(fs::metadata(dir.join("fresh.key")).unwrap().mode() & 0o777, 0o600);
        // Nothing left behind; a missing directory is an error, not a panic.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 2);
        assert!(super::write_private_file(&dir.join("no/such/dir.key"), b"x").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("nox-keystore-unit-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        ensure_private_dir(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn failed_write_leaves_no_file() {
        let dir = temp_dir("fail");
        let bytes = encode(KeyKind::Link, 0, &[7; 32]);
        let err = write_atomic_with(&dir, "link.key", &bytes[..], |f, b| {
            f.write_all(&b[..20])?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(matches!(err, KeystoreError::Io { op: "write", .. }), "{err}");
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));
        // A later write succeeds and is complete.
        write_atomic(&dir, "link.key", &bytes[..]).unwrap();
        assert_eq!(names(&dir), vec!["link.key"]);
        assert_eq!(read_key(&dir.join("link.key"), KeyKind::Link).unwrap().1.as_slice(), &[7; 32]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn existing_file_is_never_replaced() {
        let dir = temp_dir("exists");
        write_atomic(&dir, "k", &encode(KeyKind::Link, 0, &[1; 32])[..]).unwrap();
        let err = write_atomic(&dir, "k", &encode(KeyKind::Link, 0, &[2; 32])[..]).unwrap_err();
        assert!(matches!(err, KeystoreError::AlreadyExists(_)));
        assert_eq!(read_key(&dir.join("k"), KeyKind::Link).unwrap().1.as_slice(), &[1; 32]);
        assert_eq!(names(&dir), vec!["k"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_temps_are_erased() {
        let dir = temp_dir("stale");
        fs::write(dir.join(".sphinx-00000001.key.1.0.tmp"), [5u8; 30]).unwrap();
        fs::write(dir.join("keep.txt"), b"x").unwrap();
        erase_stale_temps(&dir).unwrap();
        assert_eq!(names(&dir), vec!["keep.txt"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
