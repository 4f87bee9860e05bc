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
    /// Run the paid relayer (`[exit.services.relay]`) with the operator's keystore, so the
    /// fees the exit earns are credited to the operator (`nox operator claim`). Needs
    /// `operator`.
    pub relay: Option<RelayOptions>,
    /// Serve clients' chain reads through the exit (`[exit.services.json_rpc]`) from this
    /// upstream JSON-RPC URL.
    pub serve_rpc: Option<String>,
}

/// The files an exit's relayer checks proofs and inserts notes with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayOptions {
    /// The pool's transfer verifying key (`nox_relayer::encode_verifying_key` hex).
    pub verifying_key: PathBuf,
    /// Whether the relayer also inserts the pool's queued notes (`nox_relayer::inserter`).
    pub inserter: bool,
    /// The insertion circuit's proving key (compressed arkworks); absent: the TESTNET key, which
    /// the inserter derives at start — refused unless the deployment's verifiers are the
    /// testnet ones.
    pub insert_proving_key: Option<PathBuf>,
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
    let exit = exit_toml(options, preset)?;
    // Absolute, so that the node (a service) may start from any working directory.
    let keys = std::fs::canonicalize(&keys).map_err(|e| OperatorError::io(&keys, e))?;
    std::fs::write(&config, node_toml(options, &keys, preset) + &exit + &operator)
        .map_err(|e| OperatorError::io(&config, e))?;
    Ok((identity, config))
}

/// Loads the node identity under `<dir>/keys` (as `init` wrote it) or `dir` itself.
pub fn load_node_identity(dir: &Path) -> Result<NodeIdentity, OperatorError> {
    let keys = dir.join("keys");
    let at = if keys.is_dir() { keys } else { dir.to_owned() };
    nox_keystore::load_identity(&at).map_err(|e| OperatorError::NodeKeys(format!("{}: {e}", at.display())))
}

/// `[exit.services]` with the relayer (and its inserter) and the chain-read service, as asked.
fn exit_toml(options: &InitOptions, preset: &Preset) -> Result<String, OperatorError> {
    let absolute =
        |p: &Path| std::fs::canonicalize(p).map(|p| p.display().to_string()).map_err(|e| OperatorError::io(p, e));
    let mut section = String::new();
    if options.relay.is_none() && options.serve_rpc.is_none() {
        return Ok(section);
    }
    section.push_str("\n[exit.services]\n");
    if let Some(upstream) = &options.serve_rpc {
        // The chain id lets the exit forward signed transactions of this chain (and only it).
        section.push_str(&format!(
            "\n[exit.services.json_rpc]\nupstream = {upstream:?}\nchain_id = {}\n",
            preset.record.chain_id
        ));
    }
    if let Some(relay) = &options.relay {
        let key = options.operator.as_ref().ok_or_else(|| {
            OperatorError::Record("--relay needs --keystore: the relayer signs with the operator's key".into())
        })?;
        let pool = preset.record.contracts.pool.as_ref().ok_or_else(|| {
            OperatorError::Record(format!("--relay: chain preset {:?} has no shielded pool", preset.name))
        })?;
        section.push_str(&format!(
            "\n[exit.services.relay]\nrpc_url = {:?}\nkeystore = {:?}\n",
            options.rpc_url,
            absolute(&key.keystore)?
        ));
        if let Some(file) = &key.password_file {
            section.push_str(&format!("password_file = {:?}\n", absolute(file)?));
        }
        let journal = absolute(&options.dir)? + "/relayer-nonces.json";
        section.push_str(&format!(
            "journal = {journal:?}\nverifying_key = {:?}\nchain_id = {}\nexecutor = \"{}\"\npool = \"{}\"\n",
            absolute(&relay.verifying_key)?,
            preset.record.chain_id,
            preset.record.contracts.executor,
            pool.pool
        ));
        match (relay.inserter, &relay.insert_proving_key) {
            (false, _) => section.push_str("\n[exit.services.relay.inserter]\nenabled = false\n"),
            (true, Some(pk)) => section.push_str(&format!(
                "\n[exit.services.relay.inserter]\nfrom_block = {}\nproving_key = {:?}\n",
                preset.record.start_block,
                absolute(pk)?
            )),
            (true, None) if preset.record.testnet_verifier_keys => section
                .push_str(&format!("\n[exit.services.relay.inserter]\nfrom_block = {}\n", preset.record.start_block)),
            (true, None) => {
                return Err(OperatorError::Record(format!(
                    "--relay: chain preset {:?} does not use the testnet verifier keys: give the insertion proving \
                     key of its ceremony (--insert-proving-key) or --no-inserter",
                    preset.name
                )));
            }
        }
    }
    Ok(section)
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
