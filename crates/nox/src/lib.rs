//! The `nox` command's subcommands as a library, so that integration tests
//! drive the same testnet tooling as the binary.
#![forbid(unsafe_code)]

pub mod anon_capture;
pub mod anon_delays;
pub mod anon_score;
pub mod bench;
pub mod bench_anonymity;
pub mod bench_attacks;
pub mod bench_common;
pub mod bench_defi;
pub mod bench_gate;
pub mod bench_http;
pub mod bench_inprocess;
pub mod bench_json;
pub mod bench_net;
pub mod bench_registry;
pub mod bench_soak;
pub mod bench_streams;
pub mod bench_surb;
pub mod bench_sweeps;
pub mod client_cmd;
pub mod dashboard;
pub mod dashboard_metrics;
pub mod dashboard_state;
pub mod demo;
pub mod demo_requests;
pub mod exit_glue;
pub mod exit_streams;
pub mod machine;
pub mod progress;
pub mod test_servers;
pub mod testnet;
pub mod testnet_chain;
pub mod testnet_directory;
pub mod tx_cmd;
pub mod wallet_cmd;
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
