//! `init`: a node's keys (nox-keystore) and its configuration from a chain preset.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use nox_keystore::NodeIdentity;
use rand_core::SeedableRng;

use crate::error::OperatorError;
use crate::preset::Preset;

/// What `init` writes.
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// The node's directory (`keys/`, `node.toml`).
    pub dir: PathBuf,
    /// Link listen address (registered as the node's address).
    pub listen: SocketAddr,
    /// The directory serving descriptors (`http://IP:PORT`).
    pub directory_url: String,
    /// Layer count of the network.
    pub layers: u8,
    /// The chain's RPC URL.
    pub rpc_url: String,
    /// The operator's keystore and passphrase source, written as `[operator]` so that `nox node
    /// --config node.toml` unlocks it alone (absent: no `[operator]` section).
    pub operator: Option<OperatorKey>,
}

/// The operator key a node configuration names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorKey {
    /// The v3 keystore.
    pub keystore: PathBuf,
    /// The passphrase file; absent: the environment variable [`crate::keystore::PASSWORD_ENV`].
    pub password_file: Option<PathBuf>,
}

impl OperatorKey {
    /// The `[operator]` section, with absolute paths (the node may run from another directory).
    fn toml(&self) -> Result<String, OperatorError> {
        let absolute = |p: &Path| std::fs::canonicalize(p).map_err(|e| OperatorError::io(p, e));
        let mut section = format!("\n[operator]\nkeystore = {:?}\n", absolute(&self.keystore)?.display().to_string());
        match &self.password_file {
            Some(file) => section.push_str(&format!("password_file = {:?}\n", absolute(file)?.display().to_string())),
            None => section.push_str(&format!("password_env = {:?}\n", crate::keystore::PASSWORD_ENV)),
        }
        Ok(section)
    }
}

/// Creates (or keeps) the node's identity and link keys in `<dir>/keys` and writes
/// `<dir>/node.toml` (refusing to overwrite one) naming the operator's keystore if given. Returns the identity and the config path.
pub fn init(options: &InitOptions, preset: &Preset) -> Result<(NodeIdentity, PathBuf), OperatorError> {
    let keys = options.dir.join("keys");
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
    let identity =
        nox_keystore::load_or_generate_identity(&keys, &mut rng).map_err(|e| OperatorError::NodeKeys(e.to_string()))?;
    let config = options.dir.join("node.toml");
    if config.exists() {
        return Err(OperatorError::io(&config, "already exists: not overwriting"));
    }
    let operator = options.operator.as_ref().map(OperatorKey::toml).transpose()?.unwrap_or_default();
    // Absolute, so that the node (a service) may start from any working directory.
    let keys = std::fs::canonicalize(&keys).map_err(|e| OperatorError::io(&keys, e))?;
    std::fs::write(&config, node_toml(options, &keys, preset) + &operator)
        .map_err(|e| OperatorError::io(&config, e))?;
    Ok((identity, config))
}

/// Loads the node identity under `<dir>/keys` (as `init` wrote it) or `dir` itself.
pub fn load_node_identity(dir: &Path) -> Result<NodeIdentity, OperatorError> {
    let keys = dir.join("keys");
    let at = if keys.is_dir() { keys } else { dir.to_owned() };
    nox_keystore::load_identity(&at).map_err(|e| OperatorError::NodeKeys(format!("{}: {e}", at.display())))
}

fn node_toml(options: &InitOptions, keys: &Path, preset: &Preset) -> String {
    format!(
        "# Written by `nox operator init` from chain preset {:?}.\n[node]\nkey_dir = {:?}\nlisten = \"{}\"\nlayers = {}\n\n\
         [topology]\nurl = {:?}\n\n{}",
        preset.name,
        keys.display().to_string(),
        options.listen,
        options.layers,
        options.directory_url,
        preset.chain_toml(&options.rpc_url)
    )
}
