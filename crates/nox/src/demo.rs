//! `nox demo` (the Sphinx core in memory) is `nox_testnet::sphinx_demo`; `nox testnet demo`
//! (the testnet's mixnet part, then private value between two wallets) is
//! `nox_testnet::testnet_demo`.

pub use nox_testnet::sphinx_demo::{DemoArgs, DemoError, Refusal, run};
pub use nox_testnet::testnet_demo::{
    MoneyReport, MoneyStep, TestnetDemoError, money_section, private_transfer, testnet_demo,
};
