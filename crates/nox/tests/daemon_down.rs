//! `nox wallet` and `nox tx` pointed at a `--rpc` endpoint where no `nox client --rpc` daemon
//! listens (issue 35): the error names the daemon and the command that starts it, on the same
//! address. No network: the endpoint is a closed loopback port.

mod common;

use common::{free_port, nox_output as nox, testnet_dir};

const POOL: &str = "0x00000000000000000000000000000000000000aa";

#[test]
fn a_daemon_that_is_not_running_is_named_with_how_to_start_it() {
    let dir = testnet_dir("nox-daemon-down", "wallet");
    let _ = std::fs::remove_dir_all(&dir);
    let wallet = dir.join("w");
    let wallet = wallet.to_str().unwrap();
    let made = nox(&["wallet", "new", "--wallet", wallet]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let port = free_port();
    let rpc = format!("http://127.0.0.1:{port}");
    let out = nox(&["wallet", "balance", "--wallet", wallet, "--rpc", &rpc, "--pool", POOL]);
    assert!(!out.status.success(), "a balance with no daemon cannot succeed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("nothing listens at --rpc {rpc}")), "{stderr}");
    assert!(stderr.contains("`nox client --rpc` daemon"), "names the daemon: {stderr}");
    assert!(stderr.contains(&format!("nox client --testnet <testnet dir> --rpc 127.0.0.1:{port}")), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
