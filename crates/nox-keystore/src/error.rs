//! Typed errors. `Clone` (I/O errors are shared behind an `Arc`); paths are the key files' or
//! directories' paths, never key material.

use std::path::PathBuf;
use std::sync::Arc;

/// Why a key could not be generated, stored, loaded or erased.
#[derive(Debug, Clone, thiserror::Error)]
pub enum KeystoreError {
    /// An operating-system error.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A key file that must not be replaced already exists.
    #[error("{0} already exists; refusing to overwrite a key")]
    AlreadyExists(PathBuf),
    /// A key file does not exist.
    #[error("{0} does not exist")]
    NotFound(PathBuf),
    /// A key file or directory is accessible to group or others, or is not a regular
    /// file/directory (e.g. a symlink).
    #[error("{path} has insecure type or permissions (mode {mode:o}); expected 0600 files in a 0700 directory")]
    InsecurePermissions {
        /// The file or directory.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// The file is shorter or longer than a key file.
    #[error("{path} has {len} bytes, a key file has {expected}")]
    BadLength {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: usize,
        /// The key-file length.
        expected: usize,
    },
    /// Not a NOX key file.
    #[error("{0} is not a NOX key file (bad magic)")]
    BadMagic(PathBuf),
    /// The checksum does not match: the file is corrupt.
    #[error("{0} is corrupt (checksum mismatch)")]
    Corrupt(PathBuf),
    /// The file holds another kind of key than its name says.
    #[error("{0} holds another kind of key")]
    WrongKind(PathBuf),
    /// A Sphinx key file holds a key of another scheme than the store's.
    #[error("{path} holds a {found} Sphinx key, this store is for {expected} keys")]
    WrongScheme {
        /// The file.
        path: PathBuf,
        /// The file's scheme.
        found: nox_sphinx::Scheme,
        /// The store's scheme.
        expected: nox_sphinx::Scheme,
    },
    /// A Sphinx key file's recorded epoch differs from its name.
    #[error("{path} records epoch {recorded}, its name says {named}")]
    EpochMismatch {
        /// The file.
        path: PathBuf,
        /// Epoch inside the file.
        recorded: u32,
        /// Epoch in the file name.
        named: u32,
    },
    /// The secret bytes are not a valid key (e.g. a non-canonical Sphinx scalar).
    #[error("{0} holds an invalid key")]
    InvalidKey(PathBuf),
}

impl KeystoreError {
    pub(crate) fn io(op: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            return Self::NotFound(path.to_path_buf());
        }
        Self::Io { op, path: path.to_path_buf(), source: Arc::new(source) }
    }
}
