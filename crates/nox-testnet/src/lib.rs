//! A local NOX network of real processes for `nox testnet`, the integration tests and the
//! benchmarks: node processes on loopback with their keys, signed topology and configs in one
//! state directory ([`net`]), the chain next to them (Anvil, the contracts, every node
//! registered: [`chain`]), the directory authority ([`directory`]), the demo's requests
//! ([`demo_requests`]) and the test servers its exits are allowed to reach ([`servers`]), and with `--tls` the
//! throwaway CA behind the entries' and gateways' `wss://` certificates ([`tls`]); with `--hosts`,
//! every node in a network namespace of its own ([`hosts`]) behind an emulated WAN ([`wan`]).
//! `nox demo`, the Sphinx core walked through in memory, is here too ([`sphinx_demo`]), and
//! `nox testnet demo` with its private transfer between two wallets ([`testnet_demo`]).
//!
//! Nodes and the directory are the `nox` binary (the running executable, or the one passed in):
//! this crate starts, stops, kills and reads them; it holds no protocol logic of its own.
#![forbid(unsafe_code)]

pub mod chain;
pub mod demo_requests;
pub mod directory;
pub mod hosts;
pub mod net;
pub mod servers;
pub mod sphinx_demo;
pub mod testnet_demo;
pub mod tls;
pub mod wan;

pub use net::*;
