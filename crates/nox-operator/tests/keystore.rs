//! The operator keystore: Web3 Secret Storage v3 as other tools write it, round trips, a wrong
//! passphrase named as such, file mode 0600, no overwrite, no plain text on disk.

use nox_operator::OperatorError;
use nox_operator::keystore::{self, PassphraseSource};

/// The Web3 Secret Storage definition's PBKDF2-SHA-256 test vector (ethereum.org,
/// "Web3 secret storage definition", Test vectors): password `testpassword`.
const SPEC_VECTOR: &str = r#"{
  "crypto": {
    "cipher": "aes-128-ctr",
    "cipherparams": { "iv": "6087dab2f9fdbbfaddc31a909735c1e6" },
    "ciphertext": "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46",
    "kdf": "pbkdf2",
    "kdfparams": {
      "c": 262144,
      "dklen": 32,
      "prf": "hmac-sha256",
      "salt": "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd"
    },
    "mac": "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2"
  },
  "id": "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  "version": 3
}"#;

#[test]
fn opens_the_spec_test_vector() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vector.json");
    std::fs::write(&path, SPEC_VECTOR).unwrap();
    let signer = keystore::load(&path, "testpassword").unwrap();
    assert_eq!(hex::encode(signer.to_bytes()), "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d");
    assert_eq!(format!("{:x}", signer.address()), "008aeeda4d805471df9b2a5b0f38a0c3bcba786b");
    // The same vector with the wrong passphrase: named as such, not as a corrupt file.
    match keystore::load(&path, "testpassword!") {
        Err(OperatorError::WrongPassphrase(p)) => assert_eq!(p, path),
        other => panic!("wrong passphrase accepted or misreported: {other:?}"),
    }
}

#[test]
fn round_trip_mode_0600_and_no_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("operator.json");
    let signer = keystore::create(&path, "correct horse").unwrap();
    let opened = keystore::load(&path, "correct horse").unwrap();
    assert_eq!(opened.address(), signer.address());
    assert_eq!(opened.to_bytes(), signer.to_bytes());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["version"], 3);
    assert_eq!(json["crypto"]["cipher"], "aes-128-ctr");
    assert!(!text.contains(&hex::encode(signer.to_bytes())), "the key is on disk in plain text");
    // Nothing else was left next to it (the staging directory is gone).
    let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("operator.json")]);
}

#[test]
fn wrong_passphrase_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.json");
    keystore::create(&path, "one").unwrap();
    match keystore::load(&path, "two") {
        Err(OperatorError::WrongPassphrase(p)) => assert_eq!(p, path),
        other => panic!("wrong passphrase accepted or misreported: {other:?}"),
    }
    assert!(matches!(keystore::create(&path, "one"), Err(OperatorError::KeystoreExists(_))));
    assert!(matches!(keystore::load(&dir.path().join("none.json"), "one"), Err(OperatorError::Keystore { .. })));
    std::fs::write(dir.path().join("bad.json"), "{\"version\":3}").unwrap();
    assert!(matches!(keystore::load(&dir.path().join("bad.json"), "one"), Err(OperatorError::Keystore { .. })));
}

#[test]
fn passphrase_sources() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pass");
    std::fs::write(&file, "from file\nsecond line ignored\n").unwrap();
    let source = PassphraseSource::choose(Some(&file), |_| Some("env".into()));
    assert_eq!(source, PassphraseSource::File(file.clone()));
    assert_eq!(source.read(true).unwrap().as_str(), "from file");
    assert_eq!(PassphraseSource::choose(None, |_| Some("x".into())), PassphraseSource::Env);
    assert_eq!(PassphraseSource::choose(None, |_| None), PassphraseSource::Prompt);
    std::fs::write(&file, "\n").unwrap();
    assert!(matches!(PassphraseSource::File(file).read(false), Err(OperatorError::Passphrase(_))));
}
