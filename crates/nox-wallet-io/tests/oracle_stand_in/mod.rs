//! The OP-stack `GasPriceOracle` stand-in on an Anvil (shared by `tests/l2fee.rs` here and
//! `crates/nox/tests/l2_tx.rs`, which includes this file by path).
//!
//! Anvil charges no L1 data fee and has no `GasPriceOracle` (docs/design/l2-fees.md; checked
//! again with Anvil 1.7.1's `--network optimism`: no oracle code, a receipt without `l1Fee`, the
//! sender charged exactly `gasUsed × effectiveGasPrice`). The predeploy is stood in for by
//! runtime code at 0x42…0F answering each view from the storage slot named by its selector
//! (`PUSH1 0 CALLDATALOAD PUSH1 0xe0 SHR SLOAD` → return the word), the slots set to the prices
//! of a recorded Base Sepolia receipt (nox-chain's l2fee_vectors.json).

use alloy::primitives::{B256, U256, keccak256};
use alloy::providers::{DynProvider, Provider};
use nox_chain::l2fee::{GAS_PRICE_ORACLE, OpFeeParams, OpUpgrade};

/// Returns `storage[msg.sig]` as one word.
const SLOT_PER_SELECTOR: &str = "0x60003560e01c5460005260206000f3";

/// The recorded Base Sepolia receipt's prices (Fjord).
pub fn recorded() -> OpFeeParams {
    OpFeeParams {
        upgrade: OpUpgrade::Fjord,
        l1_base_fee: U256::from(18_898_712_795u64),
        blob_base_fee: U256::from(0x48540a4664u64),
        base_fee_scalar: 1_101,
        blob_base_fee_scalar: 659_851,
    }
}

/// Puts the stand-in oracle at the predeploy's address with `p`'s prices.
pub async fn install_oracle(provider: &DynProvider, p: &OpFeeParams) {
    let _: serde_json::Value =
        provider.raw_request("anvil_setCode".into(), (GAS_PRICE_ORACLE, SLOT_PER_SELECTOR)).await.expect("setCode");
    let views: [(&str, U256); 6] = [
        ("isEcotone()", U256::from(1u64)),
        ("isFjord()", U256::from(u64::from(p.upgrade == OpUpgrade::Fjord))),
        ("l1BaseFee()", p.l1_base_fee),
        ("blobBaseFee()", p.blob_base_fee),
        ("baseFeeScalar()", U256::from(p.base_fee_scalar)),
        ("blobBaseFeeScalar()", U256::from(p.blob_base_fee_scalar)),
    ];
    for (view, value) in views {
        let selector = &keccak256(view.as_bytes())[..4];
        let slot = B256::left_padding_from(selector);
        let _: serde_json::Value = provider
            .raw_request("anvil_setStorageAt".into(), (GAS_PRICE_ORACLE, slot, B256::from(value)))
            .await
            .expect("setStorageAt");
    }
}
