//! Issue 29 item 7: every key file the testnet writes is 0600 — the deployer key (written with
//! the default mode before), the operators' and the relayers' keys — including when a
//! world-readable file is already in its place. Starts a real Anvil and deploys the contracts
//! (run under the e2e lock: `flock /tmp/nox-e2e.lock cargo test -p nox-testnet --test key_files`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nox_testnet::chain::{self, ChainSource};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).map(|m| m.permissions().mode() & 0o777).expect("stat")
}

/// Kills the Anvil the testnet started when the test ends, passed or not.
struct StopAnvil<'a>(&'a Path);

impl Drop for StopAnvil<'_> {
    fn drop(&mut self) {
        nox_testnet::net::kill_process(&chain::process_dir(self.0));
    }
}

#[test]
fn the_testnet_writes_every_key_file_0600() {
    let dir = std::env::temp_dir().join(format!("nox-it-key-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    // A world-readable deployer.key already there (as the old writer left it).
    let deployer = dir.join("deployer.key");
    std::fs::write(&deployer, "old").expect("write");
    std::fs::set_permissions(&deployer, std::fs::Permissions::from_mode(0o644)).expect("chmod");

    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port");
    let stop = StopAnvil(&dir);
    let info = chain::start(&dir, &ChainSource::Anvil { port, block_time: None }).expect("chain starts");
    assert!(info.managed);
    assert_eq!(mode(&deployer), 0o600, "deployer.key");
    assert_ne!(std::fs::read_to_string(&deployer).expect("read"), "old");

    let node = dir.join("node-0");
    std::fs::create_dir_all(node.join("keys")).expect("keys dir");
    let operator = chain::operator_key_file(&node);
    std::fs::write(&operator, "old").expect("write");
    std::fs::set_permissions(&operator, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let signer = chain::new_operator(&node).expect("operator");
    assert_eq!(mode(&operator), 0o600, "operator.key");
    assert_eq!(chain::operator_key(&node).expect("reads back").address(), signer.address());
    chain::new_relayer(&node).expect("relayer");
    let (relayer_key, _, _) = chain::relayer_files(&dir, &node);
    assert_eq!(mode(&relayer_key), 0o600, "relayer.key");
    // No temporary file left beside them.
    for d in [&dir, &node.join("keys")] {
        for entry in std::fs::read_dir(d).expect("list") {
            let name = entry.expect("entry").file_name().to_string_lossy().to_string();
            assert!(!name.ends_with(".tmp"), "{name} left in {}", d.display());
        }
    }
    drop(stop);
    let _ = std::fs::remove_dir_all(&dir);
}
