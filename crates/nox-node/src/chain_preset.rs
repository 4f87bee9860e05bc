//! `[chain] preset = "NAME"` in node.toml (issue 33): the registry address and chain id come
//! from a chain preset — a built-in name or its chain id (`anvil`, `31337`, compiled from the
//! committed `deployments/<chain-id>.json`), a `deployments/<NAME>.json` beside the
//! configuration file or in the working directory, or a deployment record file — exactly as
//! `nox node --chain` and `nox client --chain` resolve them. `rpc_urls` defaults to the
//! preset's RPC URL; `confirmations` and `operator_key_file` are kept. A `registry` or
//! `chain_id` written beside the preset must agree with it.

use std::path::{Path, PathBuf};

use nox_operator::Preset;

use crate::ConfigError;

fn invalid(message: String) -> ConfigError {
    ConfigError::Invalid { section: "chain", message }
}

/// A scalar TOML value as written (strings unquoted).
fn show(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// Where `deployments/<name>.json` files are looked for: beside the configuration file, then in
/// the working directory.
fn deployment_dirs(config_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![config_dir.join("deployments")];
    let cwd = PathBuf::from("deployments");
    if dirs[0] != cwd {
        dirs.push(cwd);
    }
    dirs
}

/// Every preset name that would resolve: the built-in names and the record files found.
pub fn known_presets(config_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = nox_operator::preset::builtin_names().map(str::to_owned).collect();
    for dir in deployment_dirs(config_dir) {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut found: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".json")).map(str::to_owned))
            .filter(|n| !names.contains(n))
            .collect();
        found.sort();
        names.extend(found);
    }
    names
}

/// Resolves `name` (relative record paths are taken from the configuration's directory first).
pub fn resolve(name: &str, config_dir: &Path) -> Result<Preset, ConfigError> {
    for dir in deployment_dirs(config_dir) {
        if let Ok(preset) = Preset::resolve(name, &dir) {
            return Ok(preset);
        }
    }
    let beside = config_dir.join(name);
    if beside.is_file()
        && let Some(path) = beside.to_str()
    {
        return Preset::resolve(path, config_dir).map_err(|e| invalid(e.to_string()));
    }
    Err(invalid(format!(
        "no chain preset {name:?}; known presets: {} (a built-in name, a deployments/<name>.json beside the \
         configuration or in the working directory, or a deployment record file)",
        known_presets(config_dir).join(", ")
    )))
}

/// The configuration `text` as a table with its `[chain] preset` expanded ([`expand`]), or
/// `None` when it names no preset (or does not parse: the typed parse reports that, with the
/// line).
pub fn expanded(text: &str, config_dir: &Path) -> Result<Option<toml::Table>, ConfigError> {
    let Ok(mut table) = toml::from_str::<toml::Table>(text) else { return Ok(None) };
    let named = table.get("chain").and_then(|c| c.get("preset")).is_some();
    if !named {
        return Ok(None);
    }
    expand(&mut table, config_dir)?;
    Ok(Some(table))
}

/// The `[chain]` section of the TOML file `path` (a node.toml, a testnet's chain.toml), its
/// preset expanded; `None` if it has none. For tools that only need the registry (`nox watch`).
pub fn chain_section(path: &Path) -> Result<Option<nox_chain::ChainConfig>, ConfigError> {
    let read = |e: std::io::Error| ConfigError::Read { path: path.to_path_buf(), source: e };
    let parse = |message: String| ConfigError::Parse { path: path.to_path_buf(), message };
    let text = std::fs::read_to_string(path).map_err(read)?;
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| parse(e.to_string()))?;
    expand(&mut table, path.parent().unwrap_or(Path::new(".")))?;
    match table.remove("chain") {
        Some(chain) => chain.try_into().map(Some).map_err(|e: toml::de::Error| parse(e.to_string())),
        None => Ok(None),
    }
}

/// Rewrites a `[chain]` table holding `preset` into the plain `[chain]` section: `registry` and
/// `chain_id` from the preset, `rpc_urls` from the preset unless given.
pub fn expand(table: &mut toml::Table, config_dir: &Path) -> Result<(), ConfigError> {
    let Some(toml::Value::Table(chain)) = table.get_mut("chain") else { return Ok(()) };
    let Some(value) = chain.remove("preset") else { return Ok(()) };
    let name = value.as_str().ok_or_else(|| invalid("preset must be a string".into()))?;
    let preset = resolve(name, config_dir)?;
    let registry = preset.record.contracts.registry;
    let chain_id = preset.record.chain_id;
    if let Some(given) = chain.get("registry") {
        let same = given.as_str().and_then(|s| s.parse::<nox_chain::Address>().ok()) == Some(registry);
        if !same {
            return Err(invalid(format!("registry {} differs from preset {name:?}'s {registry}", show(given))));
        }
    }
    if let Some(given) = chain.get("chain_id")
        && given.as_integer().and_then(|i| u64::try_from(i).ok()) != Some(chain_id)
    {
        return Err(invalid(format!("chain_id {} differs from preset {name:?}'s {chain_id}", show(given))));
    }
    let id = i64::try_from(chain_id).map_err(|_| invalid(format!("chain id {chain_id} is out of range")))?;
    chain.insert("registry".into(), toml::Value::String(registry.to_string()));
    chain.insert("chain_id".into(), toml::Value::Integer(id));
    if !chain.contains_key("rpc_urls") {
        let rpc = preset.rpc(None).map_err(|_| {
            invalid(format!("preset {name:?} has no default RPC URL: set rpc_urls = [\"http://…\"] beside it"))
        })?;
        chain.insert("rpc_urls".into(), toml::Value::Array(vec![toml::Value::String(rpc)]));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "[node]\nkey_dir = \"/k\"\nlisten = \"127.0.0.1:1\"\n[topology]\nurl = \"http://127.0.0.1:2\"\n";

    fn load(text: &str, dir: &Path) -> Result<crate::NodeConfig, ConfigError> {
        let path = dir.join("node.toml");
        std::fs::write(&path, text).unwrap();
        crate::NodeConfig::load(&path, |_| None)
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nox-preset-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `preset = "anvil"` alone gives the committed deployment's registry and chain id and the
    /// preset's RPC URL; the chain id names the same preset; `rpc_urls` and the operator key
    /// file written beside it are kept.
    #[test]
    fn a_preset_name_alone_fills_the_chain_section() {
        let dir = temp("builtin");
        let record =
            nox_operator::DeploymentRecord::from_json(include_str!("../../../deployments/31337.json")).unwrap();
        let chain = load(&format!("{NODE}[chain]\npreset = \"anvil\"\n"), &dir).unwrap().chain.unwrap();
        assert_eq!((chain.registry, chain.chain_id), (record.contracts.registry, 31337));
        assert_eq!(chain.rpc_urls, vec!["http://127.0.0.1:8545".to_owned()]);
        let text = format!(
            "{NODE}[chain]\npreset = \"31337\"\nrpc_urls = [\"http://10.0.0.1:8545\"]\noperator_key_file = \"/op\"\n"
        );
        let chain = load(&text, &dir).unwrap().chain.unwrap();
        assert_eq!(chain.registry, record.contracts.registry);
        assert_eq!(chain.rpc_urls, vec!["http://10.0.0.1:8545".to_owned()]);
        assert_eq!(chain.operator_key_file, Some(PathBuf::from("/op")));
        // The same section for tools that read only `[chain]` (`nox watch --chain node.toml`).
        assert_eq!(chain_section(&dir.join("node.toml")).unwrap(), Some(chain));
    }

    /// A record in `deployments/` beside the configuration is a preset by its file name; with
    /// no default RPC URL, `rpc_urls` is required and the error says so.
    #[test]
    fn a_record_beside_the_config_is_a_preset() {
        let dir = temp("record");
        let mut record =
            nox_operator::DeploymentRecord::from_json(include_str!("../../../deployments/31337.json")).unwrap();
        record.chain_id = 4242;
        record.contracts.registry = nox_chain::Address::repeat_byte(0x42);
        record.store(&dir.join("deployments")).unwrap();
        let error = load(&format!("{NODE}[chain]\npreset = \"4242\"\n"), &dir).unwrap_err().to_string();
        assert!(error.contains("no default RPC URL"), "{error}");
        let text = format!("{NODE}[chain]\npreset = \"4242\"\nrpc_urls = [\"http://127.0.0.1:9\"]\n");
        let chain = load(&text, &dir).unwrap().chain.unwrap();
        assert_eq!((chain.registry, chain.chain_id), (nox_chain::Address::repeat_byte(0x42), 4242));
    }

    /// A bad preset name is refused with the list of known presets; a registry or chain id that
    /// contradicts the preset is refused.
    #[test]
    fn a_bad_preset_is_refused_with_the_known_names() {
        let dir = temp("bad");
        let error = load(&format!("{NODE}[chain]\npreset = \"anvil-typo\"\n"), &dir).unwrap_err().to_string();
        assert!(error.contains("no chain preset \"anvil-typo\""), "{error}");
        assert!(error.contains("known presets: anvil"), "{error}");
        let text = format!("{NODE}[chain]\npreset = \"anvil\"\nchain_id = 1\n");
        let error = load(&text, &dir).unwrap_err().to_string();
        assert!(error.contains("chain_id 1 differs"), "{error}");
        let text =
            format!("{NODE}[chain]\npreset = \"anvil\"\nregistry = \"0x0000000000000000000000000000000000000001\"\n");
        assert!(load(&text, &dir).unwrap_err().to_string().contains("differs from preset"));
    }
}
