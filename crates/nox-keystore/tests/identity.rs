//! Long-term identity: generation, reload, permissions, corrupt files.

mod common;

use common::*;
use nox_keystore::{
    IDENTITY_FILE, KEY_FILE_LEN, KeystoreError, LINK_FILE, generate_identity, load_identity, load_or_generate_identity,
};
use nox_topology::{LayerCount, LinkPublicKey, node_id_of};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(7)
}

#[test]
fn generate_then_reload_gives_the_same_identity() {
    let tmp = TempDir::new("id");
    let dir = tmp.path().join("keys");
    let made = generate_identity(&dir, &mut rng()).unwrap();
    let loaded = load_identity(&dir).unwrap();
    assert_eq!(made.signing_key().to_bytes(), loaded.signing_key().to_bytes());
    assert_eq!(made.link_secret().as_bytes(), loaded.link_secret().as_bytes());
    let public = loaded.public();
    assert_eq!(public, made.public());
    assert_eq!(public.node_id, node_id_of(&public.identity_key));
    assert_eq!(public.link_key, LinkPublicKey::from_secret(loaded.link_secret().as_bytes()));
    // Secrets are not printed.
    assert!(!format!("{made:?}{:?}", made.link_secret()).contains(&hex::encode(made.link_secret().as_bytes())));
    let printed = public.to_string();
    assert!(
        printed.contains(&hex::encode(public.node_id.0)) && printed.contains(&hex::encode(public.link_key.to_bytes()))
    );
    // Another seed gives another identity.
    let other = generate_identity(&tmp.path().join("other"), &mut ChaCha20Rng::seed_from_u64(8)).unwrap();
    assert_ne!(other.public(), public);
}

#[test]
fn generation_refuses_to_overwrite() {
    let tmp = TempDir::new("overwrite");
    let first = generate_identity(tmp.path(), &mut rng()).unwrap();
    let err = generate_identity(tmp.path(), &mut ChaCha20Rng::seed_from_u64(9)).unwrap_err();
    assert!(matches!(err, KeystoreError::AlreadyExists(_)), "{err}");
    assert_eq!(load_identity(tmp.path()).unwrap().public(), first.public());
    assert_eq!(load_or_generate_identity(tmp.path(), &mut rng()).unwrap().public(), first.public());
    let fresh = TempDir::new("fresh");
    let made = load_or_generate_identity(fresh.path(), &mut rng()).unwrap();
    assert_eq!(load_identity(fresh.path()).unwrap().public(), made.public());
}

#[test]
fn files_and_directory_are_private() {
    let tmp = TempDir::new("perm");
    let dir = tmp.path().join("a/b");
    generate_identity(&dir, &mut rng()).unwrap();
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(IDENTITY_FILE)), 0o600);
    assert_eq!(mode(&dir.join(LINK_FILE)), 0o600);
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "no temporary files left: {names:?}");

    set_mode(&dir.join(LINK_FILE), 0o640);
    assert!(
        matches!(load_identity(&dir), Err(KeystoreError::InsecurePermissions { mode, .. }) if mode & 0o777 == 0o640)
    );
    set_mode(&dir.join(LINK_FILE), 0o600);
    set_mode(&dir, 0o755);
    assert!(matches!(load_identity(&dir), Err(KeystoreError::InsecurePermissions { .. })));
    assert!(matches!(generate_identity(&dir, &mut rng()), Err(KeystoreError::InsecurePermissions { .. })));
    set_mode(&dir, 0o700);
    assert!(load_identity(&dir).is_ok());

    // A symlink in place of a key file is refused.
    let elsewhere = tmp.path().join("elsewhere.key");
    std::fs::rename(dir.join(IDENTITY_FILE), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join(IDENTITY_FILE)).unwrap();
    assert!(matches!(load_identity(&dir), Err(KeystoreError::InsecurePermissions { .. })));
}

#[test]
fn damaged_files_give_typed_errors() {
    let tmp = TempDir::new("corrupt");
    let dir = tmp.path();
    generate_identity(dir, &mut rng()).unwrap();
    let path = dir.join(IDENTITY_FILE);
    let good = std::fs::read(&path).unwrap();
    assert_eq!(good.len(), KEY_FILE_LEN);
    let write = |bytes: &[u8]| std::fs::write(&path, bytes).unwrap();

    write(&good[..40]);
    assert!(matches!(load_identity(dir), Err(KeystoreError::BadLength { len: 40, .. })));
    write(&[]);
    assert!(matches!(load_identity(dir), Err(KeystoreError::BadLength { len: 0, .. })));
    write(&[good.as_slice(), &[0]].concat());
    assert!(matches!(load_identity(dir), Err(KeystoreError::BadLength { len: 62, .. })));
    for i in [8, 20, 50] {
        let mut bad = good.clone();
        bad[i] ^= 0x10;
        write(&bad);
        assert!(matches!(load_identity(dir), Err(KeystoreError::Corrupt(_))), "byte {i}");
    }
    let mut bad = good.clone();
    bad[0] = b'X';
    write(&bad);
    assert!(matches!(load_identity(dir), Err(KeystoreError::BadMagic(_))));
    // A link key file under the identity name.
    write(&std::fs::read(dir.join(LINK_FILE)).unwrap());
    assert!(matches!(load_identity(dir), Err(KeystoreError::WrongKind(_))));
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(load_identity(dir), Err(KeystoreError::NotFound(p)) if p == path));
    write(&good);
    set_mode(&path, 0o644);
    assert!(matches!(load_identity(dir), Err(KeystoreError::InsecurePermissions { .. })));
    set_mode(&path, 0o600);
    assert!(load_identity(dir).is_ok());
}

#[test]
fn descriptor_from_identity_is_self_signed_and_layered() {
    let tmp = TempDir::new("descriptor");
    let id = generate_identity(tmp.path(), &mut rng()).unwrap();
    let layers = LayerCount::new(3).unwrap();
    let mut r = rng();
    let key = nox_sphinx::SecretKey::generate(&mut r).public_key();
    let d = id
        .descriptor("127.0.0.1:9000".parse().unwrap(), layers, 2, vec![nox_topology::EpochKey { epoch: 1, key }])
        .unwrap();
    d.verify_signature().unwrap();
    assert_eq!(d.node_id(), id.node_id());
    assert_eq!(d.descriptor.layer, id.public().layer(layers));
}
