//! The L1 data fee of a rollup transaction (issue 33; docs/design/l2-fees.md).
//!
//! On an L2 a transaction pays its execution gas (`gasUsed × effectiveGasPrice`, what an L1
//! charges) **and** a data fee for posting its bytes to L1, which on OP-stack chains and
//! Arbitrum is usually the larger part. A relayer that prices gas alone loses money on every
//! bundle there. This module computes that fee:
//!
//! - the pure arithmetic ([`OpFeeParams::fee`], [`fastlz_len`], [`ArbFeeParams::fee`]) on
//!   the transaction's signed bytes and the chain's posted L1 prices, no I/O;
//! - the reads of those prices from the chain ([`read_pricing`]): the OP-stack
//!   `GasPriceOracle` predeploy ([`GAS_PRICE_ORACLE`]) and Arbitrum's `ArbGasInfo`
//!   precompile ([`ARB_GAS_INFO`]).
//!
//! Which model applies is configured, or detected from the chain id ([`FeeModel::for_chain`]);
//! an unknown chain is priced as an L1 (no data fee) and the caller says so in its log.

use alloy::primitives::{Address, U256, address};
use alloy::providers::Provider;
use alloy::sol;
use serde::{Deserialize, Serialize};

use crate::ChainError;

/// The OP-stack `GasPriceOracle` predeploy (same address on every OP-stack chain).
pub const GAS_PRICE_ORACLE: Address = address!("420000000000000000000000000000000000000F");
/// Arbitrum's `ArbGasInfo` precompile.
pub const ARB_GAS_INFO: Address = address!("000000000000000000000000000000000000006C");
/// Arbitrum's `NodeInterface` (a virtual contract answered by the node's `eth_call`).
pub const NODE_INTERFACE: Address = address!("00000000000000000000000000000000000000C8");

sol! {
    /// The OP-stack fee oracle's views this module reads (Ecotone and later).
    #[sol(rpc)]
    interface IGasPriceOracle {
        function l1BaseFee() external view returns (uint256);
        function blobBaseFee() external view returns (uint256);
        function baseFeeScalar() external view returns (uint32);
        function blobBaseFeeScalar() external view returns (uint32);
        function isEcotone() external view returns (bool);
        function isFjord() external view returns (bool);
        function getL1Fee(bytes memory data) external view returns (uint256);
    }

    /// Arbitrum's gas price views.
    #[sol(rpc)]
    interface IArbGasInfo {
        function getPricesInWei() external view returns (uint256, uint256, uint256, uint256, uint256, uint256);
    }

    /// Arbitrum's node interface: the L1 part of a transaction's gas, priced by the node itself.
    #[sol(rpc)]
    interface INodeInterface {
        function gasEstimateL1Component(address to, bool contractCreation, bytes calldata data)
            external payable returns (uint64 gasEstimateForL1, uint256 baseFee, uint256 l1BaseFeeEstimate);
    }
}

/// How a chain charges for a transaction's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeeModel {
    /// Execution gas only (Ethereum and its testnets, Anvil).
    L1,
    /// OP stack (Optimism, Base, …): a data fee in wei from the `GasPriceOracle`, charged on
    /// top of the gas (the receipt's `l1Fee`).
    OpStack,
    /// Arbitrum: the data fee is charged as extra gas at the L2 base fee (the receipt's
    /// `gasUsedForL1`), so the gas limit must hold it too.
    Arbitrum,
}

impl FeeModel {
    /// The model of a known chain id, `None` for a chain this module does not know (the caller
    /// prices it as [`FeeModel::L1`] and logs that it did).
    pub fn for_chain(chain_id: u64) -> Option<Self> {
        match chain_id {
            // Ethereum, Sepolia, Holesky, Hoodi; Anvil/Hardhat, Geth --dev.
            1 | 11_155_111 | 17_000 | 560_048 | 31_337 | 1_337 => Some(Self::L1),
            // OP, OP Sepolia, Base, Base Sepolia, Zora, Mode, Unichain (+ Sepolia), Ink, World Chain.
            10 | 11_155_420 | 8_453 | 84_532 | 7_777_777 | 34_443 | 130 | 1_301 | 57_073 | 480 => Some(Self::OpStack),
            // Arbitrum One, Nova, Arbitrum Sepolia.
            42_161 | 42_170 | 421_614 => Some(Self::Arbitrum),
            _ => None,
        }
    }
}

/// Which OP-stack upgrade sets the data-fee formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpUpgrade {
    /// Ecotone (blobs, March 2024): the size is the EIP-2028 calldata gas of the signed
    /// transaction over 16 (4 per zero byte, 16 per other byte), no fixed overhead any more.
    Ecotone,
    /// Fjord (July 2024): the size is estimated from the transaction's FastLZ-compressed
    /// length by a linear regression, at least 100 bytes.
    Fjord,
}

/// The L1 prices an OP-stack chain charges data at (the `L1Block` values the oracle serves;
/// receipts repeat them as `l1GasPrice`, `l1BlobBaseFee`, `l1BaseFeeScalar`,
/// `l1BlobBaseFeeScalar`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpFeeParams {
    /// The formula in force.
    pub upgrade: OpUpgrade,
    /// L1 base fee, wei per gas.
    pub l1_base_fee: U256,
    /// L1 blob base fee, wei per blob gas.
    pub blob_base_fee: U256,
    /// Scalar on the base-fee part (× 10⁻⁶).
    pub base_fee_scalar: u32,
    /// Scalar on the blob part (× 10⁻⁶).
    pub blob_base_fee_scalar: u32,
}

/// Fjord's size regression: `size × 10⁶ = max(100 × 10⁶, −42 585 600 + 836 500 × fastlz)`.
const FJORD_INTERCEPT: i128 = -42_585_600;
const FJORD_FASTLZ_COEF: i128 = 836_500;
const FJORD_MIN_SIZE_SCALED: i128 = 100_000_000;

impl OpFeeParams {
    /// `16 × baseFeeScalar × l1BaseFee + blobBaseFeeScalar × blobBaseFee`: the price of one
    /// byte of estimated size, × 16 × 10⁶.
    fn scaled_price(&self) -> U256 {
        U256::from(16u64) * U256::from(self.base_fee_scalar) * self.l1_base_fee
            + U256::from(self.blob_base_fee_scalar) * self.blob_base_fee
    }

    /// The data fee (wei) of a transaction whose **signed** EIP-2718 bytes are `tx`, as the
    /// chain charges it (rounded down, as the chain does).
    pub fn fee(&self, tx: &[u8]) -> U256 {
        match self.upgrade {
            OpUpgrade::Ecotone => self.fee_of_l1_gas(calldata_gas(tx)),
            OpUpgrade::Fjord => {
                let scaled = FJORD_INTERCEPT + FJORD_FASTLZ_COEF * i128::from(fastlz_len(tx));
                let size = u128::try_from(scaled.max(FJORD_MIN_SIZE_SCALED)).unwrap_or(0);
                U256::from(size) * self.scaled_price() / U256::from(1_000_000_000_000u64)
            }
        }
    }

    /// The fee from the `l1GasUsed` a receipt reports (Ecotone: the calldata gas; Fjord: the
    /// estimated size × 16): `l1GasUsed × scaled price / (16 × 10⁶)`. Equal to [`Self::fee`]
    /// whenever the receipt's `l1GasUsed` is the one the fee was computed from.
    pub fn fee_of_l1_gas(&self, l1_gas_used: u64) -> U256 {
        U256::from(l1_gas_used) * self.scaled_price() / U256::from(16_000_000u64)
    }
}

/// EIP-2028 calldata gas of `bytes`: 4 per zero byte, 16 per other byte.
pub fn calldata_gas(bytes: &[u8]) -> u64 {
    bytes.iter().map(|b| if *b == 0 { 4u64 } else { 16 }).sum()
}

/// The length of `input` compressed by FastLZ level 1 as the OP stack's Fjord fee counts it
/// (the `LibZip.flzCompress` encoding; only the length is computed, nothing is written).
pub fn fastlz_len(input: &[u8]) -> u32 {
    const HASH_SIZE: usize = 8192;
    const MAX_DISTANCE: usize = 8191;
    let n = input.len();
    let u24 = |i: usize| u32::from(input[i]) | (u32::from(input[i + 1]) << 8) | (u32::from(input[i + 2]) << 16);
    let hash = |v: u32| (v.wrapping_mul(2_654_435_769) >> 19) as usize & (HASH_SIZE - 1);
    // Literal runs of up to 32 bytes, each with a one-byte header.
    let literals = |run: usize| 33 * (run / 32) + if run.is_multiple_of(32) { 0 } else { run % 32 + 1 };
    let mut out = 0usize;
    let mut table = vec![0usize; HASH_SIZE];
    let limit = n.saturating_sub(13);
    let mut anchor = 0usize;
    let mut ip = 2usize;
    while ip < limit {
        // Find a 3-byte match within the window.
        let mut reference;
        loop {
            let seq = u24(ip);
            let h = hash(seq);
            reference = table[h];
            table[h] = ip;
            let distance = ip - reference;
            if ip >= limit {
                break;
            }
            ip += 1;
            if distance <= MAX_DISTANCE && seq == u24(reference) {
                break;
            }
        }
        if ip >= limit {
            break;
        }
        ip -= 1;
        if ip > anchor {
            out += literals(ip - anchor);
        }
        // Extend the match past its first 3 bytes (the count includes the first mismatch).
        let bound = (limit + 9).saturating_sub(ip + 3);
        let mut len = 0usize;
        let mut end = bound;
        while len < end {
            if input[reference + 3 + len] != input[ip + 3 + len] {
                end = 0;
            }
            len += 1;
        }
        // A match: 2 or 3 bytes, plus 3 per 262 bytes of a long one.
        let coded = len - 1;
        out += 3 * (coded / 262) + if coded % 262 >= 6 { 3 } else { 2 };
        ip += len;
        table[hash(u24(ip))] = ip;
        ip += 1;
        table[hash(u24(ip))] = ip;
        ip += 1;
        anchor = ip;
    }
    out += literals(n - anchor);
    u32::try_from(out).unwrap_or(u32::MAX)
}

/// Arbitrum's L1 price of data (`ArbGasInfo.getPricesInWei`, second value): wei per byte of
/// L1 calldata (16 × the L1 price per calldata unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArbFeeParams {
    /// Wei per L1 calldata byte.
    pub wei_per_l1_byte: U256,
}

impl ArbFeeParams {
    /// An upper bound of the data fee (wei) of a transaction of `tx` signed bytes: Arbitrum
    /// charges the Brotli-compressed size, never more than the raw size for the incompressible
    /// proof and ciphertext bytes of a bundle (plus Brotli's few bytes of framing: 16 are
    /// added). The node's own figure for a given transaction is
    /// `NodeInterface.gasEstimateL1Component` ([`arbitrum_l1_gas`]).
    pub fn fee(&self, tx: &[u8]) -> U256 {
        U256::from(tx.len() as u64 + 16) * self.wei_per_l1_byte
    }

    /// The gas a data fee of `fee` wei takes at the L2 base fee `l2_base_fee` (Arbitrum adds it
    /// to the transaction's gas: `gasUsedForL1`), rounded up.
    pub fn gas_for(fee: U256, l2_base_fee: u128) -> u64 {
        if l2_base_fee == 0 {
            return 0;
        }
        u64::try_from(fee.div_ceil(U256::from(l2_base_fee))).unwrap_or(u64::MAX)
    }
}

/// The data pricing in force on a chain, read at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L1Pricing {
    /// No data fee.
    None,
    /// OP stack.
    Op(OpFeeParams),
    /// Arbitrum.
    Arbitrum(ArbFeeParams),
}

impl L1Pricing {
    /// The data fee (wei) of a transaction whose signed EIP-2718 bytes are `tx`.
    pub fn fee(&self, tx: &[u8]) -> U256 {
        match self {
            Self::None => U256::ZERO,
            Self::Op(p) => p.fee(tx),
            Self::Arbitrum(p) => p.fee(tx),
        }
    }
}

fn rpc(what: &str) -> impl Fn(alloy::contract::Error) -> ChainError + '_ {
    move |e| ChainError::Rpc(format!("{what}: {e}"))
}

/// Reads the data pricing of `model` from the chain behind `provider` (the OP oracle's five
/// views, or `ArbGasInfo`). An OP-stack chain before Ecotone is refused
/// ([`ChainError::Config`]): every OP-stack chain has been past it since March 2024.
pub async fn read_pricing<P: Provider>(provider: &P, model: FeeModel) -> Result<L1Pricing, ChainError> {
    match model {
        FeeModel::L1 => Ok(L1Pricing::None),
        FeeModel::OpStack => {
            let oracle = IGasPriceOracle::new(GAS_PRICE_ORACLE, provider);
            if !oracle.isEcotone().call().await.map_err(rpc("GasPriceOracle.isEcotone"))? {
                return Err(ChainError::Config(
                    "the OP-stack chain is before Ecotone: its data fee is not modelled".into(),
                ));
            }
            let fjord = oracle.isFjord().call().await.map_err(rpc("GasPriceOracle.isFjord"))?;
            Ok(L1Pricing::Op(OpFeeParams {
                upgrade: if fjord { OpUpgrade::Fjord } else { OpUpgrade::Ecotone },
                l1_base_fee: oracle.l1BaseFee().call().await.map_err(rpc("GasPriceOracle.l1BaseFee"))?,
                blob_base_fee: oracle.blobBaseFee().call().await.map_err(rpc("GasPriceOracle.blobBaseFee"))?,
                base_fee_scalar: oracle.baseFeeScalar().call().await.map_err(rpc("GasPriceOracle.baseFeeScalar"))?,
                blob_base_fee_scalar: oracle
                    .blobBaseFeeScalar()
                    .call()
                    .await
                    .map_err(rpc("GasPriceOracle.blobBaseFeeScalar"))?,
            }))
        }
        FeeModel::Arbitrum => {
            let prices = IArbGasInfo::new(ARB_GAS_INFO, provider)
                .getPricesInWei()
                .call()
                .await
                .map_err(rpc("ArbGasInfo.getPricesInWei"))?;
            Ok(L1Pricing::Arbitrum(ArbFeeParams { wei_per_l1_byte: prices._1 }))
        }
    }
}

/// The OP oracle's own figure for `unsigned_tx` (the unsigned RLP transaction; the oracle adds
/// 68 bytes for the signature): a cross-check of [`OpFeeParams::fee`].
pub async fn op_oracle_fee<P: Provider>(provider: &P, unsigned_tx: Vec<u8>) -> Result<U256, ChainError> {
    IGasPriceOracle::new(GAS_PRICE_ORACLE, provider)
        .getL1Fee(unsigned_tx.into())
        .call()
        .await
        .map_err(rpc("GasPriceOracle.getL1Fee"))
}

/// Arbitrum's node's own figure for a call to `to` with `data`: `(gas for L1, L2 base fee)`.
pub async fn arbitrum_l1_gas<P: Provider>(provider: &P, to: Address, data: Vec<u8>) -> Result<(u64, U256), ChainError> {
    let r = INodeInterface::new(NODE_INTERFACE, provider)
        .gasEstimateL1Component(to, false, data.into())
        .call()
        .await
        .map_err(rpc("NodeInterface.gasEstimateL1Component"))?;
    Ok((r.gasEstimateForL1, r.baseFee))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const VECTORS: &str = include_str!("l2fee_vectors.json");

    fn num(v: &Value) -> U256 {
        let s = v.as_str().expect("a string");
        match s.strip_prefix("0x") {
            Some(hex) => U256::from_str_radix(hex, 16).expect("hex"),
            None => U256::from_str_radix(s, 10).expect("decimal"),
        }
    }

    #[test]
    fn fastlz_lengths_match_the_reference_vectors() {
        let v: Value = serde_json::from_str(VECTORS).expect("vectors");
        let cases = v["flz"].as_array().expect("flz cases");
        assert_eq!(cases.len(), 6);
        for c in cases {
            let bytes = hex::decode(c["hex"].as_str().expect("hex")).expect("hex");
            assert_eq!(u64::from(fastlz_len(&bytes)), c["len"].as_u64().expect("len"), "{} bytes", bytes.len());
        }
    }

    #[test]
    fn fastlz_of_incompressible_bytes_is_the_size_plus_one_header_per_32() {
        // A keccak stream: no 3-byte repeats within the window worth a match.
        let mut data = Vec::new();
        let mut block = [7u8; 32];
        while data.len() < 2_048 {
            block = alloy::primitives::keccak256(block).0;
            data.extend_from_slice(&block);
        }
        let len = fastlz_len(&data) as usize;
        assert!(len >= data.len() && len <= data.len() + data.len() / 32 + 1, "{len}");
    }

    #[test]
    fn real_op_receipts_charge_what_the_formula_says() {
        let v: Value = serde_json::from_str(VECTORS).expect("vectors");
        for r in v["op_receipts"].as_array().expect("receipts") {
            let upgrade = match r["upgrade"].as_str() {
                Some("fjord") => OpUpgrade::Fjord,
                _ => OpUpgrade::Ecotone,
            };
            let p = OpFeeParams {
                upgrade,
                l1_base_fee: num(&r["l1GasPrice"]),
                blob_base_fee: num(&r["l1BlobBaseFee"]),
                base_fee_scalar: u32::try_from(num(&r["l1BaseFeeScalar"])).expect("u32"),
                blob_base_fee_scalar: u32::try_from(num(&r["l1BlobBaseFeeScalar"])).expect("u32"),
            };
            let l1_gas_used = u64::try_from(num(&r["l1GasUsed"])).expect("u64");
            assert_eq!(p.fee_of_l1_gas(l1_gas_used), num(&r["l1Fee"]), "{}", r["source"]);
        }
    }

    #[test]
    fn a_small_fjord_transaction_pays_the_100_byte_minimum() {
        // The Base Sepolia receipt above is a plain transfer (≈ 110 signed bytes): l1GasUsed
        // 1,600 = 100 × 16, the Fjord minimum; the formula on any short transaction gives it.
        let p = OpFeeParams {
            upgrade: OpUpgrade::Fjord,
            l1_base_fee: U256::from(18_898_712_795u64),
            blob_base_fee: U256::from(0x48540a4664u64),
            base_fee_scalar: 0x44d,
            blob_base_fee_scalar: 0xa118b,
        };
        assert_eq!(p.fee(&[0x02; 110]), U256::from(20_531_405_242_323u64));
        assert_eq!(p.fee(&[0x02; 110]), p.fee_of_l1_gas(1_600));
        // A large incompressible transaction pays ≈ 0.8365 × its size.
        let big: Vec<u8> = (0..4_000u32).flat_map(|i| alloy::primitives::keccak256(i.to_be_bytes()).0).collect();
        let est = p.fee(&big);
        let size_fee = p.fee_of_l1_gas(16 * big.len() as u64);
        assert!(est < size_fee && est * U256::from(100u64) > size_fee * U256::from(80u64));
    }

    #[test]
    fn ecotone_prices_calldata_gas() {
        let p = OpFeeParams {
            upgrade: OpUpgrade::Ecotone,
            l1_base_fee: U256::from(35_790_527u64),
            blob_base_fee: U256::from(1u64),
            base_fee_scalar: 1_368,
            blob_base_fee_scalar: 0,
        };
        // 100 non-zero bytes: 1,600 calldata gas, the l1GasUsed of the recorded receipt.
        assert_eq!(p.fee(&[1u8; 100]), U256::from(0x4ab5901u64));
        // Zero bytes cost a quarter.
        assert_eq!(calldata_gas(&[0, 0, 1]), 24);
    }

    #[test]
    fn chains_are_detected_and_unknown_ones_are_not_guessed() {
        assert_eq!(FeeModel::for_chain(1), Some(FeeModel::L1));
        assert_eq!(FeeModel::for_chain(31_337), Some(FeeModel::L1));
        assert_eq!(FeeModel::for_chain(10), Some(FeeModel::OpStack));
        assert_eq!(FeeModel::for_chain(8_453), Some(FeeModel::OpStack));
        assert_eq!(FeeModel::for_chain(42_161), Some(FeeModel::Arbitrum));
        assert_eq!(FeeModel::for_chain(999_999_999), None);
    }

    #[test]
    fn arbitrum_fee_in_gas_rounds_up() {
        let p = ArbFeeParams { wei_per_l1_byte: U256::from(1_000u64) };
        assert_eq!(p.fee(&[0u8; 84]), U256::from(100_000u64));
        assert_eq!(ArbFeeParams::gas_for(U256::from(100_001u64), 10), 10_001);
        assert_eq!(ArbFeeParams::gas_for(U256::from(5u64), 0), 0);
    }
}
