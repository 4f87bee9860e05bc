#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(not(unix))]
compile_error!("nox-keystore relies on Unix file modes (0600/0700) and directory fsync");

mod epochs;
mod error;
mod file;
mod identity;

pub use epochs::{EpochKeyStore, Rotation, epoch_file_name, sphinx_dir};
pub use error::KeystoreError;
pub use file::{KEY_FILE_CONTEXT, KEY_FILE_LEN, KEY_FILE_MAGIC, KeyKind, write_private_file};
pub use identity::{
    IDENTITY_FILE, LINK_FILE, LinkSecret, NodeIdentity, PublicIdentity, generate_identity, load_identity,
    load_or_generate_identity,
};
