//! Chain presets: the built-in `anvil` is the committed record; chain ids and files resolve;
//! an unknown name is refused; the `[chain]` section carries the record's registry and chain id.

use nox_operator::{DeploymentRecord, OperatorError, Preset};

fn committed() -> DeploymentRecord {
    DeploymentRecord::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deployments/31337.json"))
        .unwrap()
}

#[test]
fn builtin_anvil_is_the_committed_record() {
    let none = std::path::Path::new("/nonexistent");
    let anvil = Preset::resolve("anvil", none).unwrap();
    assert_eq!(anvil.record, committed());
    assert_eq!(anvil.record.chain_id, 31337);
    assert_eq!(Preset::resolve("31337", none).unwrap(), anvil);
    assert_eq!(anvil.rpc(None).unwrap(), "http://127.0.0.1:8545");
    assert_eq!(anvil.rpc(Some("http://10.0.0.1:8545")).unwrap(), "http://10.0.0.1:8545");
    let config = anvil.chain_config("http://x:1");
    assert_eq!(config.registry, anvil.record.contracts.registry);
    assert_eq!(config.chain_id, 31337);
    let toml = anvil.chain_toml("http://x:1");
    assert!(
        toml.contains(&format!("registry = \"{}\"", anvil.record.contracts.registry))
            && toml.contains("chain_id = 31337")
    );
    // The record round-trips through its committed JSON form.
    assert_eq!(DeploymentRecord::from_json(&anvil.record.to_json()).unwrap(), anvil.record);
}

#[test]
fn chain_ids_and_files_resolve_unknown_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut record = committed();
    record.chain_id = 10;
    let path = record.store(dir.path()).unwrap();
    assert_eq!(path, dir.path().join("10.json"));
    let by_id = Preset::resolve("10", dir.path()).unwrap();
    assert_eq!(by_id.record, record);
    assert!(matches!(by_id.rpc(None), Err(OperatorError::Record(_))), "a non-built-in preset has no default RPC");
    assert_eq!(Preset::resolve(path.to_str().unwrap(), std::path::Path::new("/nonexistent")).unwrap().record, record);
    assert!(matches!(Preset::resolve("mainnet-typo", dir.path()), Err(OperatorError::Record(_))));
    std::fs::write(dir.path().join("11.json"), "{\"chain_id\": 11}").unwrap();
    assert!(matches!(Preset::resolve("11", dir.path()), Err(OperatorError::Record(_))));
}

#[test]
fn mirrors_round_trip_and_bad_ones_are_refused() {
    // The committed record lists none, and writes no `mirrors` key (its bytes stay the same).
    assert!(committed().mirrors.is_empty());
    assert!(!committed().to_json().contains("mirrors"));
    let dir = tempfile::tempdir().unwrap();
    let mut record = committed();
    record.chain_id = 12;
    record.mirrors = vec!["http://198.51.100.1:8000".into(), "https://dir.example.org/".into()];
    let path = record.store(dir.path()).unwrap();
    assert_eq!(Preset::resolve("12", dir.path()).unwrap().record.mirrors, record.mirrors);
    for bad in ["198.51.100.1:8000", "http://", "ftp://x:1", "http://x:1/path", "http://u@x:1"] {
        let text = std::fs::read_to_string(&path).unwrap().replace("https://dir.example.org/", bad);
        let refused = DeploymentRecord::from_json(&text);
        assert!(matches!(&refused, Err(OperatorError::Record(m)) if m.contains(bad)), "{bad}: {refused:?}");
    }
}

#[test]
fn a_redeployment_keeps_the_recorded_mirrors_unless_given_new_ones() {
    use nox_operator::deploy::mirrors_for;
    let dir = tempfile::tempdir().unwrap();
    // No record yet, none given: none.
    assert_eq!(mirrors_for(dir.path(), 13, &[]).unwrap(), Vec::<String>::new());
    let mut record = committed();
    record.chain_id = 13;
    record.mirrors = vec!["http://198.51.100.7:8000".into()];
    record.store(dir.path()).unwrap();
    // A re-run without --mirror keeps what the record lists (not another chain's record).
    assert_eq!(mirrors_for(dir.path(), 13, &[]).unwrap(), record.mirrors);
    assert_eq!(mirrors_for(dir.path(), 14, &[]).unwrap(), Vec::<String>::new());
    // Given ones replace them; a bad one is refused by name.
    let given = vec!["https://dir.example.org".to_string()];
    assert_eq!(mirrors_for(dir.path(), 13, &given).unwrap(), given);
    let bad = vec!["http://ok.example:1".to_string(), "dir.example.org:80".to_string()];
    assert!(
        matches!(mirrors_for(dir.path(), 13, &bad), Err(OperatorError::Record(m)) if m.contains("dir.example.org:80"))
    );
    // A broken record is an error, not silently no mirrors.
    std::fs::write(dir.path().join("15.json"), "{").unwrap();
    assert!(matches!(mirrors_for(dir.path(), 15, &[]), Err(OperatorError::Record(_))));
}
