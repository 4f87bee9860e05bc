//! The harness shared by the multi-process integration tests (`tests/*.rs`, `tests/money/`):
//! each test file says `mod common;` (the usual Cargo layout for shared integration-test code:
//! a directory module is not compiled as a test binary of its own); the money binary includes
//! it by path. One module per concern, all re-exported here:
//!
//! - [`process`]: the [`Processes`] guard (children killed and reaped, the test's directory
//!   removed, on every exit path), [`spawn_logged`] (a child's output in a log file), [`logs`]
//!   (those files in a failure message), [`collect`] (a piped output), [`wait_or_kill`];
//! - [`wait`]: waits for the condition itself with a deadline — [`wait_until`],
//!   [`wait_until_async`] (inside a runtime), [`accepts`] / [`wait_listening`] (a port);
//! - [`ports`]: [`port_base`] (the per-pid port range in a file's block), [`ephemeral_start`],
//!   [`free_port`];
//! - [`run`]: [`NOX`], [`run`] / [`run_ok`] (a command's output; a failure names the command and
//!   shows its output), [`nox`] / [`ok`] / [`nox_output`] (with the wallets' passphrase),
//!   [`nox_in`] (in a directory, for the operator commands), [`output_text`];
//! - [`testnet`]: [`Testnet`] (a `nox testnet up`, stopped with its extra children reaped and
//!   its directory removed on drop), [`testnet_dir`], [`authority`], [`topology`],
//!   [`node_dirs`], [`metrics_addr`], [`node_metric`], [`restart_node`];
//! - [`wallet`]: [`USER_KEY`], [`PASSPHRASE`], [`write_key`], [`rpc_daemon`] (a `nox client
//!   --rpc` the wallet reads through), [`fee_paid`], [`figures`], [`sent_from_to`],
//!   [`stake_and_balance`];
//! - [`mirror`]: [`serve_document`] and [`equivocating_mirror`] (a node's second view).

// Each test binary compiles this module and uses only a subset of it: the rest would be
// reported as dead code (and unused re-exports) once per binary.
#![allow(dead_code, unused_imports)]

pub mod mirror;
pub mod ports;
pub mod process;
pub mod run;
pub mod testnet;
pub mod wait;
pub mod wallet;

pub use mirror::*;
pub use ports::*;
pub use process::*;
pub use run::*;
pub use testnet::*;
pub use wait::*;
pub use wallet::*;
