//! An operator ready to send (issue 34: moved out of the `nox operator` command): the keystore
//! unlocked, a provider signing with it on the preset's chain (the endpoint's chain id checked
//! against the record), and a runtime to drive it; and the small steps every operator command
//! shares (the preset and its RPC URL, the node's public keys, a key imported or created).
//! The caller parses arguments, asks for confirmation and prints.

use std::path::Path;

use alloy::providers::DynProvider;
use nox_chain::{Address, PrivateKeySigner, U256};

use crate::keystore::{self, PassphraseSource};
use crate::{DeploymentRecord, OperatorError, Preset, ops};

/// Where the passphrase of the keystore comes from: `password_file`'s first line, else
/// `NOX_OPERATOR_PASSWORD`, else a prompt.
pub fn passphrase(password_file: Option<&Path>) -> PassphraseSource {
    PassphraseSource::choose(password_file, |n| std::env::var(n).ok())
}

/// The operator key in `keystore`, unlocked with the passphrase from [`passphrase`].
pub fn open_key(keystore: &Path, password_file: Option<&Path>) -> Result<PrivateKeySigner, OperatorError> {
    let pass = passphrase(password_file).read(false)?;
    keystore::load(keystore, &pass)
}

/// Writes a new keystore at `keystore` (the passphrase asked twice on a terminal): the key in
/// `import` (a hex private key file) if given, else a fresh one.
pub fn new_key(
    keystore: &Path,
    password_file: Option<&Path>,
    import: Option<&Path>,
) -> Result<PrivateKeySigner, OperatorError> {
    let pass = passphrase(password_file).read(true)?;
    match import {
        Some(f) => {
            let text = zeroize::Zeroizing::new(
                std::fs::read_to_string(f)
                    .map_err(|e| OperatorError::Io { path: f.to_owned(), reason: e.to_string() })?,
            );
            let signer = nox_chain::deploy::signer(&text)?;
            keystore::save(keystore, &signer, &pass)?;
            Ok(signer)
        }
        None => keystore::create(keystore, &pass),
    }
}

/// A single-threaded runtime for one command.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// The preset `chain` (looked up in `deployments` after the built-in names) and the RPC URL to
/// use: `rpc` if given, else the preset's.
pub fn resolve(chain: &str, deployments: &Path, rpc: Option<&str>) -> Result<(Preset, String), OperatorError> {
    let preset = Preset::resolve(chain, deployments)?;
    let rpc = preset.rpc(rpc)?;
    Ok((preset, rpc))
}

/// The node's identity and link public keys, from its directory (or key directory).
pub fn node_keys(dir: &Path) -> Result<([u8; 32], [u8; 32]), OperatorError> {
    let identity = crate::init::load_node_identity(dir)?;
    let public = identity.public();
    Ok((public.identity_key.to_bytes(), public.link_key.to_bytes()))
}

/// An operator ready to send. Every signing subcommand starts here.
pub struct Session {
    /// The chain's preset (its deployment record).
    pub preset: Preset,
    /// The operator's key.
    pub signer: PrivateKeySigner,
    /// A provider signing with it.
    pub provider: DynProvider,
    rt: tokio::runtime::Runtime,
}

impl Session {
    /// Unlocks `keystore` and connects to the preset's chain (see [`resolve`]).
    pub fn open(
        keystore: &Path,
        password_file: Option<&Path>,
        chain: &str,
        deployments: &Path,
        rpc: Option<&str>,
    ) -> Result<Self, OperatorError> {
        let (preset, rpc) = resolve(chain, deployments, rpc)?;
        let signer = open_key(keystore, password_file)?;
        let rt = runtime().map_err(|e| OperatorError::Passphrase(e.to_string()))?;
        let provider = rt.block_on(ops::connect(&rpc, &preset.record, &signer))?;
        Ok(Self { preset, signer, provider, rt })
    }

    /// The deployment record.
    pub fn record(&self) -> &DeploymentRecord {
        &self.preset.record
    }

    /// The operator's address.
    pub fn operator(&self) -> Address {
        self.signer.address()
    }

    /// Runs `f` on the session's runtime.
    pub fn block_on<T>(
        &self,
        f: impl std::future::Future<Output = Result<T, OperatorError>>,
    ) -> Result<T, OperatorError> {
        self.rt.block_on(f)
    }

    /// The registry's minimum stake.
    pub async fn min_stake(&self) -> Result<U256, OperatorError> {
        nox_chain::bindings::NodeRegistry::new(self.record().contracts.registry, &self.provider)
            .minStake()
            .call()
            .await
            .map_err(|e| OperatorError::Chain(nox_chain::ChainError::Contract(e.to_string())))
    }
}
