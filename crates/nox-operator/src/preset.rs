//! Chain presets: a name (`anvil`), a chain id or a record file, resolved to a deployment record
//! (chain id, addresses, start block) and a default RPC URL, so nodes and clients start from a
//! name alone. The built-in presets are the committed `deployments/*.json`, compiled in.

use std::path::{Path, PathBuf};

use crate::deploy::DeploymentRecord;
use crate::error::OperatorError;

/// A resolved preset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preset {
    /// Its name (`anvil`, the chain id, or the file).
    pub name: String,
    /// The RPC URL used when none is given.
    pub default_rpc: Option<String>,
    /// Where NOX lives on the chain.
    pub record: DeploymentRecord,
}

/// Built-in presets: (name, chain id, default RPC URL, committed record).
const BUILTIN: &[(&str, u64, &str, &str)] =
    &[("anvil", 31337, "http://127.0.0.1:8545", include_str!("../../../deployments/31337.json"))];

/// The names of the built-in presets.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|b| b.0)
}

impl Preset {
    /// Resolves `spec`: a built-in name or its chain id (`anvil`, `31337`), then
    /// `<deployments>/<spec>.json`, then `spec` as a record file.
    pub fn resolve(spec: &str, deployments: &Path) -> Result<Self, OperatorError> {
        for (name, chain_id, rpc, text) in BUILTIN {
            if spec == *name || spec == chain_id.to_string() {
                let record = DeploymentRecord::from_json(text)?;
                return Ok(Self { name: (*name).to_owned(), default_rpc: Some((*rpc).to_owned()), record });
            }
        }
        let candidates = [deployments.join(format!("{spec}.json")), PathBuf::from(spec)];
        for path in candidates {
            if path.is_file() {
                return Ok(Self { name: spec.to_owned(), default_rpc: None, record: DeploymentRecord::load(&path)? });
            }
        }
        Err(OperatorError::Record(format!(
            "no chain preset {spec:?}: built-in {:?}, or a file {}/<chain-id>.json, or a record path",
            builtin_names().collect::<Vec<_>>(),
            deployments.display()
        )))
    }

    /// The RPC URL: `given`, else the preset's default.
    pub fn rpc(&self, given: Option<&str>) -> Result<String, OperatorError> {
        given
            .map(str::to_owned)
            .or_else(|| self.default_rpc.clone())
            .ok_or_else(|| OperatorError::Record(format!("preset {:?} has no default RPC URL: give --rpc", self.name)))
    }

    /// The `[chain]` section of node and client configurations.
    pub fn chain_config(&self, rpc_url: &str) -> nox_chain::ChainConfig {
        nox_chain::ChainConfig {
            rpc_urls: vec![rpc_url.to_owned()],
            registry: self.record.contracts.registry,
            chain_id: self.record.chain_id,
            confirmations: 0,
            operator_key_file: None,
        }
    }

    /// [`Preset::chain_config`] as TOML.
    pub fn chain_toml(&self, rpc_url: &str) -> String {
        format!(
            "[chain]\nrpc_urls = [{rpc_url:?}]\nregistry = \"{}\"\nchain_id = {}\n",
            self.record.contracts.registry, self.record.chain_id
        )
    }
}

/// `nox node --chain <preset> [--rpc URL]`: the `[chain]` section from the preset (looked up in
/// `./deployments` after the built-in names), keeping `current`'s operator key file and
/// confirmations.
pub fn chain_from_preset(
    spec: &str,
    rpc: Option<&str>,
    current: Option<nox_chain::ChainConfig>,
) -> Result<nox_chain::ChainConfig, OperatorError> {
    let preset = Preset::resolve(spec, Path::new("deployments"))?;
    let mut chain = preset.chain_config(&preset.rpc(rpc)?);
    if let Some(current) = current {
        chain.operator_key_file = current.operator_key_file;
        chain.confirmations = current.confirmations;
    }
    Ok(chain)
}
