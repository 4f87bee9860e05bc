//! The operator's Ethereum key in a Web3 Secret Storage v3 keystore (the JSON format geth, cast
//! and foundry read and write), through alloy's signer (`eth-keystore`: scrypt, AES-128-CTR,
//! Keccak-256 MAC). The key is never written in plain text: a new keystore is encrypted in
//! memory, written 0600 into a private temporary directory next to its destination, and renamed
//! into place.

use std::path::{Path, PathBuf};

use alloy::signers::local::{LocalSignerError, PrivateKeySigner};
use zeroize::Zeroizing;

use crate::error::OperatorError;

/// The environment variable a passphrase may come from.
pub const PASSWORD_ENV: &str = "NOX_OPERATOR_PASSWORD";

/// Where the passphrase comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassphraseSource {
    /// A file's first line (`--password-file`).
    File(PathBuf),
    /// [`PASSWORD_ENV`].
    Env,
    /// The terminal, without echo (asked twice for a new keystore).
    Prompt,
    /// Given directly (tests, library callers).
    Given(String),
}

impl PassphraseSource {
    /// `--password-file` if given, else [`PASSWORD_ENV`] if set, else the terminal prompt.
    pub fn choose(password_file: Option<&Path>, env: impl Fn(&str) -> Option<String>) -> Self {
        match password_file {
            Some(f) => Self::File(f.to_owned()),
            None if env(PASSWORD_ENV).is_some() => Self::Env,
            None => Self::Prompt,
        }
    }

    /// Reads the passphrase (`confirm`: ask twice on a terminal, for a new keystore).
    pub fn read(&self, confirm: bool) -> Result<Zeroizing<String>, OperatorError> {
        let pass = match self {
            Self::Given(p) => Zeroizing::new(p.clone()),
            Self::Env => Zeroizing::new(
                std::env::var(PASSWORD_ENV)
                    .map_err(|_| OperatorError::Passphrase(format!("{PASSWORD_ENV} is not set")))?,
            ),
            Self::File(path) => {
                let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| OperatorError::io(path, e))?);
                Zeroizing::new(text.lines().next().unwrap_or("").to_owned())
            }
            Self::Prompt => {
                let first = Zeroizing::new(rpassword::prompt_password("keystore passphrase: ").map_err(|e| {
                    OperatorError::Passphrase(format!(
                        "no terminal to ask on ({e}): use --password-file or {PASSWORD_ENV}"
                    ))
                })?);
                if confirm {
                    let again = Zeroizing::new(
                        rpassword::prompt_password("again: ").map_err(|e| OperatorError::Passphrase(e.to_string()))?,
                    );
                    if *again != *first {
                        return Err(OperatorError::Passphrase("the two passphrases differ".into()));
                    }
                }
                first
            }
        };
        if pass.is_empty() {
            return Err(OperatorError::Passphrase("empty passphrase".into()));
        }
        Ok(pass)
    }
}

/// Opens the keystore at `path`. A wrong passphrase is [`OperatorError::WrongPassphrase`].
pub fn load(path: &Path, passphrase: &str) -> Result<PrivateKeySigner, OperatorError> {
    if !path.is_file() {
        return Err(OperatorError::Keystore { path: path.to_owned(), reason: "no such file".into() });
    }
    PrivateKeySigner::decrypt_keystore(path, passphrase).map_err(|e| match e {
        LocalSignerError::EthKeystoreError(eth_keystore::KeystoreError::MacMismatch) => {
            OperatorError::WrongPassphrase(path.to_owned())
        }
        other => OperatorError::Keystore { path: path.to_owned(), reason: other.to_string() },
    })
}

/// Encrypts `signer`'s key into a new keystore file at `path` (0600; refuses to overwrite).
pub fn save(path: &Path, signer: &PrivateKeySigner, passphrase: &str) -> Result<(), OperatorError> {
    if path.exists() {
        return Err(OperatorError::KeystoreExists(path.to_owned()));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| OperatorError::io(&parent, e))?;
    // A private directory (0700) for the brief moment the file exists under eth-keystore's
    // default mode; it is made 0600 before it is renamed to where others could see it.
    let staging = parent.join(format!(".nox-keystore-{}", std::process::id()));
    create_private_dir(&staging)?;
    let result = (|| {
        let key = Zeroizing::new(signer.to_bytes().0);
        let mut rng = rand_core_06::OsRng;
        PrivateKeySigner::encrypt_keystore(&staging, &mut rng, &key[..], passphrase, Some("key.json"))
            .map_err(|e| OperatorError::Keystore { path: path.to_owned(), reason: e.to_string() })?;
        let staged = staging.join("key.json");
        set_mode(&staged, 0o600)?;
        std::fs::rename(&staged, path).map_err(|e| OperatorError::io(path, e))
    })();
    let _ = std::fs::remove_dir_all(&staging);
    result
}

/// Creates a keystore holding a fresh random key.
pub fn create(path: &Path, passphrase: &str) -> Result<PrivateKeySigner, OperatorError> {
    let signer = PrivateKeySigner::random();
    save(path, &signer, passphrase)?;
    Ok(signer)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<(), OperatorError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir).map_err(|e| OperatorError::io(dir, e))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<(), OperatorError> {
    std::fs::create_dir(dir).map_err(|e| OperatorError::io(dir, e))
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<(), OperatorError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|e| OperatorError::io(path, e))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> Result<(), OperatorError> {
    Ok(())
}
