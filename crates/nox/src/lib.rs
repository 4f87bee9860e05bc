//! The `nox` command's subcommands as a library, so that integration tests drive what the
//! binary runs: the client, wallet, transaction, ZK-setup and dashboard commands, and the
//! exit's glue. The local network harness is `nox-testnet`; the benchmarks are `nox-bench`.
#![forbid(unsafe_code)]

pub mod client_cmd;
/// What to tell the user when `--rpc` is unreachable, now `nox_client_io::daemon_hint`.
pub use nox_client_io::daemon_hint;
pub mod dashboard;
pub mod demo;
/// The exit's adapter (`ExitAdapter`), now the `nox-exit-adapter` crate (issue 34).
pub use nox_exit_adapter as exit_glue;
pub mod operator_cmd;
pub mod tx_cmd;
pub mod wallet_cmd;
pub mod watch_cmd;
pub mod zk_cmd;

/// A watch that turns true on SIGINT or SIGTERM (call inside the runtime).
pub fn stop_on_signal() -> tokio::sync::watch::Receiver<bool> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
        let _ = stop_tx.send(true);
    });
    stop_rx
}
