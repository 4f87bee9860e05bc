#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]
#![deny(missing_docs)]

// The exports need `#[unsafe(no_mangle)]` (an unsafe attribute: the symbol
// names must not collide); nothing in the crate dereferences a raw pointer.
#[allow(unsafe_code)]
pub mod abi;
mod api;
mod client;
mod link;
mod pay;
mod private;

pub use api::{Module, NewSurb, RAW_HOP_LEN, SEED_LEN, WasmError};
pub use client::{NewClient, completed_bytes, now};
pub use link::{ClientLink, Fed, fed_bytes};
pub use pay::MAX_SAMPLE_ACTION_LEN;
pub use private::{KEY_COMPRESSED, KEY_UNCOMPRESSED, WALLET_SEED_LEN};
