//! The relayer's account key: a plain hex file (the testnet's) or a Web3 Secret Storage v3
//! keystore (an operator's own, so the fees its exit earns are the operator's to claim), with
//! the passphrase from a file or `NOX_OPERATOR_PASSWORD`; every wrong setting is named.

use std::path::PathBuf;

use nox_relayer::{Policy, RelayerConfig, RelayerError};

const KEY: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

fn config(key_file: Option<PathBuf>, keystore: Option<PathBuf>, password_file: Option<PathBuf>) -> RelayerConfig {
    RelayerConfig {
        rpc_url: "http://127.0.0.1:1".into(),
        key_file,
        keystore,
        password_file,
        journal: "/nonexistent/journal".into(),
        verifying_key: "/nonexistent/vk".into(),
        chain_id: 31337,
        executor: Default::default(),
        pool: Default::default(),
        tokens: Vec::new(),
        policy: Policy::default(),
    }
}

fn refused(c: &RelayerConfig) -> String {
    match c.signer() {
        Err(RelayerError::Config(m)) => m,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn key_file_keystore_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let expected: nox_chain::PrivateKeySigner = KEY.parse().unwrap();

    let hex = dir.path().join("relayer.key");
    std::fs::write(&hex, format!("{KEY}\n")).unwrap();
    assert_eq!(config(Some(hex.clone()), None, None).signer().unwrap().address(), expected.address());

    let keystore = dir.path().join("operator.json");
    nox_operator::keystore::save(&keystore, &expected, "correct horse").unwrap();
    let pass = dir.path().join("pass");
    std::fs::write(&pass, "correct horse\nignored second line\n").unwrap();
    let from_store = config(None, Some(keystore.clone()), Some(pass.clone())).signer().unwrap();
    assert_eq!(from_store.address(), expected.address());

    std::fs::write(&pass, "wrong\n").unwrap();
    let m = refused(&config(None, Some(keystore.clone()), Some(pass.clone())));
    assert!(m.contains("operator.json"), "{m}");
    // No password file and no environment variable: the two ways are named.
    if std::env::var(nox_relayer::PASSWORD_ENV).is_err() {
        let m = refused(&config(None, Some(keystore.clone()), None));
        assert!(m.contains("password_file") && m.contains(nox_relayer::PASSWORD_ENV), "{m}");
    }
    let m = refused(&config(Some(hex), Some(keystore), Some(pass)));
    assert!(m.contains("not both"), "{m}");
    let m = refused(&config(None, None, None));
    assert!(m.contains("no key"), "{m}");
    let m = refused(&config(Some(dir.path().join("missing.key")), None, None));
    assert!(m.contains("missing.key"), "{m}");
}
