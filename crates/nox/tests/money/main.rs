//! The two longest end-to-end tests of money on real processes, in one test binary so that
//! cargo runs them at the same time (each waits mostly on the mixnet, block times and the
//! exits' inserter, not on the CPU; as separate binaries they ran one after the other, ~8.5 min
//! of a CI run). Each has its own testnet, directory and port block.
//!
//! - [`wallet`]: the paid action, the exit as the relayer (`nox tx send|swap|withdraw`), a
//!   replayed bundle refused, a restored wallet.
//! - [`private_transfer`]: two wallets, deposit → split → join → transfer → spend → withdraw,
//!   direct and paid through the mixnet (issue 30).
//!
//! Run one alone with `cargo test -p nox --test money private_transfer` (or `wallet`).

#[path = "../common/mod.rs"]
mod common;
mod private_transfer;
mod wallet;
