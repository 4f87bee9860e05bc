//! The two longest end-to-end tests of money on real processes, in one test binary so that
//! cargo runs them at the same time (each waits mostly on the mixnet, block times and the
//! exits' inserter, not on the CPU; as separate binaries they ran one after the other, ~8.5 min
//! of a CI run). Each has its own testnet, directory and port block.
//!
//! - [`wallet`]: the paid action, the exit as the relayer (`nox tx send|swap|withdraw`), a
//!   replayed bundle refused, a restored wallet.
//! - [`demo`]: `nox testnet demo`'s money part (two wallets, a paid private transfer).
//! - [`private_transfer`]: two wallets, deposit → split → join → transfer → spend → withdraw,
//!   direct and paid through the mixnet (issue 30).
//!
//! Run one alone with `cargo test -p nox --test money private_transfer` (or `wallet`).
//!
//! **Ports.** `scripts/test.sh` runs this binary *beside* every other test binary of the
//! workspace (it is mostly waiting, and it is the longest: docs/ci.md). The other files of
//! `crates/nox/tests` share port blocks from 10 000 up to the ephemeral range (they run one
//! binary after another), so here [`common::port_base`] moves each block down by
//! [`MONEY_SHIFT`], below 10 000, where no other test binds a fixed port: the same calls
//! (`port_base(27_000, 100, 30)`) give ports that cannot collide with a concurrent binary.

#[path = "../common/mod.rs"]
mod shared;

mod demo;
mod private_transfer;
mod wallet;

/// The shared fixtures with this binary's [`common::port_base`].
mod common {
    pub use crate::shared::*;

    /// How far down the money binary's port blocks are moved: a file's block starting at
    /// `start` (≥ 26 000 here) starts at `start − MONEY_SHIFT` (≥ 1 000).
    pub const MONEY_SHIFT: u16 = 25_000;

    /// The shared [`crate::shared::port_base`], `MONEY_SHIFT` lower: below every fixed port of
    /// the other test binaries. Panics on a block that would not fit there (a new test's call).
    pub fn port_base(start: u16, slots: u32, stride: u16) -> u16 {
        let first = start.checked_sub(MONEY_SHIFT).filter(|&p| p > 1_024);
        let first = first.unwrap_or_else(|| panic!("port block {start}: below {MONEY_SHIFT} + 1024"));
        let last = u32::from(first) + (slots - 1) * u32::from(stride) + crate::TESTNET_SPAN;
        assert!(last < crate::OTHER_BINARIES_FIRST_PORT, "port block {start}: up to {last} once moved");
        crate::shared::port_base(first, slots, stride)
    }
}

/// Every `port_base` block of this binary: (start, slots, stride) as its tests call it.
const BLOCKS: [(u16, u32, u16); 3] = [(27_000, 100, 30), (28_000, 100, 30), (29_000, 100, 30)];

/// The lowest fixed port another test binary of `crates/nox/tests` uses (tty.rs' block).
const OTHER_BINARIES_FIRST_PORT: u32 = 10_000;

/// A testnet uses its base port up to base + 300 and its nodes (`nox testnet up`: nodes,
/// metrics at +100, Anvil at +200, WebSocket listeners at +300).
const TESTNET_SPAN: u32 = 320;

#[test]
fn the_money_ports_stay_below_the_other_binaries() {
    for (start, slots, stride) in BLOCKS {
        let base = u32::from(common::port_base(start, slots, stride));
        assert!(base > 1_024 && base + TESTNET_SPAN < OTHER_BINARIES_FIRST_PORT, "block {start}: {base}");
    }
    // A block that would reach the other binaries' ports once moved is refused.
    assert!(std::panic::catch_unwind(|| common::port_base(34_000, 100, 30)).is_err());
    assert!(std::panic::catch_unwind(|| common::port_base(20_000, 100, 30)).is_err());
    // The tests run at once in this process (same pid, same slot): their blocks are apart.
    for pair in BLOCKS.windows(2) {
        let a = common::port_base(pair[0].0, pair[0].1, pair[0].2);
        let b = common::port_base(pair[1].0, pair[1].1, pair[1].2);
        assert!(u32::from(b - a) > TESTNET_SPAN, "{a} {b}");
    }
}
