//! Pricing (docs/spec/relay.md §4): the fees the relayer bids, the gas limit it sets, the fee it
//! requires, and the value of a fee paid in a token. Pure integer arithmetic, rounded against
//! the relayer's loss: costs up, values down.

use alloy_primitives::U256;

/// Basis points in one.
pub const BPS: u32 = 10_000;

/// The EIP-1559 fees of one transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeePlan {
    /// The next block's base fee, wei per gas (informational: the check uses `max_fee_per_gas`).
    pub base_fee: u128,
    /// Priority fee bid.
    pub priority_fee: u128,
    /// Max fee per gas set: the most the transaction can cost per gas.
    pub max_fee_per_gas: u128,
}

fn scale_up(x: u128, bps: u32) -> u128 {
    let num = U256::from(x) * U256::from(BPS + bps);
    u128::try_from(num.div_ceil(U256::from(BPS))).unwrap_or(u128::MAX)
}

impl FeePlan {
    /// Bid `priority_fee` on top of the next base fee, with room for the base fee to rise by
    /// `headroom_bps` before the transaction stops being includable.
    pub fn new(next_base_fee: u128, priority_fee: u128, headroom_bps: u32) -> Self {
        let max_fee_per_gas = scale_up(next_base_fee, headroom_bps).saturating_add(priority_fee);
        Self { base_fee: next_base_fee, priority_fee, max_fee_per_gas }
    }

    /// A replacement: both fees raised by at least `bump_bps` (nodes require ≥ 10 % for a
    /// replacement) and at least to `current` (a fresh plan at the current base fee).
    pub fn bumped(&self, bump_bps: u32, current: &FeePlan) -> Self {
        let priority_fee = scale_up(self.priority_fee, bump_bps).max(self.priority_fee + 1).max(current.priority_fee);
        let max_fee_per_gas =
            scale_up(self.max_fee_per_gas, bump_bps).max(self.max_fee_per_gas + 1).max(current.max_fee_per_gas);
        Self { base_fee: current.base_fee, priority_fee, max_fee_per_gas: max_fee_per_gas.max(priority_fee) }
    }
}

/// The gas limit for a bundle whose gas apart from the action's call is `payment` (the
/// executor, the payment plugin, the transaction's intrinsic gas) and whose action is bound to
/// `action_gas`: `(payment + ⌈action_gas · 64/63⌉) · (1 + extra_bps) + 10 000`. The executor
/// forwards exactly `action_gas` to the action and reverts the whole bundle unless it could
/// (EIP-150 gives a call at most 63/64 of the gas left, so `action_gas · 64/63` must be left at
/// the call); a quote prices this limit with the relayer's measured `payment_gas`.
pub fn gas_limit(payment: u64, action_gas: u64, extra_bps: u32) -> u64 {
    let action = (u128::from(action_gas) * 64).div_ceil(63);
    let limit = scale_up(u128::from(payment) + action, extra_bps) + 10_000;
    u64::try_from(limit).unwrap_or(u64::MAX)
}

/// The gas limit a relayer sets for a bundle that used `simulated` gas (a simulation with an
/// ample limit, in which the action was given all of its `action_gas`), given its quoted
/// `payment_gas`: the larger of the quote's limit (`gas_limit(payment_gas, action_gas)`, right
/// whatever part of its gas the action used) and `simulated + ⌈action_gas/63⌉` with the same
/// margins (right when the action used all of it and the payment cost more than quoted). The
/// exact transaction is simulated again at this limit before it is sent: a limit that starves
/// the action reverts there (`ActionGasNotGiven`), never on chain with the fee credited.
pub fn bundle_gas_limit(simulated: u64, payment_gas: u64, action_gas: u64, extra_bps: u32) -> u64 {
    let reserve = u64::try_from(u128::from(action_gas).div_ceil(63)).unwrap_or(u64::MAX);
    let measured = u64::try_from(scale_up(u128::from(simulated) + u128::from(reserve), extra_bps) + 10_000);
    gas_limit(payment_gas, action_gas, extra_bps).max(measured.unwrap_or(u64::MAX))
}

/// The insertion share of one private transaction: the gas of inserting its **two** output
/// notes when `batch_gas` inserts `batch_notes` notes at once, `⌈batch_gas × 2 / batch_notes⌉`
/// (rounded up: against the relayer's loss). The relayer adds it to the gas it prices, because its
/// inserter pays `insertBatch` so that the user never touches the chain (issue 35).
pub fn insertion_gas(batch_gas: u64, batch_notes: u32) -> u64 {
    let share = (u128::from(batch_gas) * 2).div_ceil(u128::from(batch_notes.max(1)));
    u64::try_from(share).unwrap_or(u64::MAX)
}

/// The smallest fee value (wei) accepted for `gas_limit` at `max_fee_per_gas` with `margin_bps`:
/// `ceil(gas_limit × max_fee × (1 + margin))`. The margin holds at the most the relayer can pay.
pub fn required_wei(gas_limit: u64, max_fee_per_gas: u128, margin_bps: u32) -> U256 {
    let cost = U256::from(gas_limit) * U256::from(max_fee_per_gas);
    (cost * U256::from(BPS + margin_bps)).div_ceil(U256::from(BPS))
}

/// `wei` with `margin_bps` on top, rounded up: the part of a required fee that an L1 data fee
/// (charged beside the gas, on the OP stack) adds.
pub fn with_margin(wei: U256, margin_bps: u32) -> U256 {
    (wei * U256::from(BPS + margin_bps)).div_ceil(U256::from(BPS))
}

/// An L1 data fee of `fee` wei as gas at `max_fee_per_gas` (a quote's `l1_data_gas`), rounded
/// up; 0 gas per wei (a zero max fee) prices it as 0.
pub fn l1_fee_gas(fee: U256, max_fee_per_gas: u128) -> u64 {
    if max_fee_per_gas == 0 {
        return 0;
    }
    u64::try_from(fee.div_ceil(U256::from(max_fee_per_gas))).unwrap_or(u64::MAX)
}

/// The calldata of a representative bundle, for pricing its L1 data fee before any bundle
/// arrives (a quote, docs/design/l2-fees.md): `execute` of a shielded payment through `pool`
/// — a proof, root, nullifiers and commitments as field elements (pseudo-random, as real
/// ones are: incompressible), two 104-byte note ciphertexts, a fee and a deadline — with an
/// action carrying `action_bytes` of calldata (pseudo-random). The zero padding of the ABI is
/// real, so its FastLZ length is a real bundle's (the OP stack's Fjord fee counts that).
pub fn reference_bundle_calldata(pool: alloy_primitives::Address, action_bytes: usize) -> Vec<u8> {
    use alloy_primitives::{Bytes, keccak256};
    use alloy_sol_types::{SolCall, SolValue};
    let mut seed = keccak256(b"nox reference bundle");
    let mut next = || {
        seed = keccak256(seed);
        let mut word = seed.0;
        word[0] &= 0x1f; // below the BN254 scalar field, like every public input
        U256::from_be_bytes(word)
    };
    let mut stream = |n: usize| {
        let mut out = Vec::with_capacity(n + 32);
        while out.len() < n {
            out.extend_from_slice(&next().to_be_bytes::<32>());
        }
        out.truncate(n);
        Bytes::from(out)
    };
    let notes = [stream(104), stream(104)];
    let action_data = stream(action_bytes);
    let mut next = || {
        seed = keccak256(seed);
        let mut word = seed.0;
        word[0] &= 0x1f;
        U256::from_be_bytes(word)
    };
    let t = crate::abi::Transaction {
        proof: std::array::from_fn(|_| next()),
        root: next(),
        nullifiers: [next(), next()],
        commitments: [next(), next()],
        asset: alloy_primitives::Address::ZERO,
        publicIn: U256::ZERO,
        publicOut: U256::ZERO,
        fee: U256::from(1_234_567_890_123_456u64),
        recipient: alloy_primitives::Address::ZERO,
        deadline: U256::from(1_800_000_000u64),
        notes,
    };
    let bundle = crate::abi::Bundle {
        payment: pool,
        paymentData: Bytes::from(t.abi_encode()),
        asset: alloy_primitives::Address::ZERO,
        fee: U256::from(1_234_567_890_123_456u64),
        action: crate::abi::Action {
            target: if action_bytes == 0 { alloy_primitives::Address::ZERO } else { pool },
            value: U256::ZERO,
            gas: U256::from(if action_bytes == 0 { 0u64 } else { 100_000 }),
            data: action_data,
        },
    };
    crate::abi::executeCall { bundle }.abi_encode()
}

/// Bytes a signed EIP-1559 transaction adds around its calldata (type, RLP headers, chain id,
/// nonce, fees, gas limit, `to`, value, empty access list, signature): what
/// [`data_fee_sample`] appends to stand for the relayer's signed envelope.
pub const SIGNED_ENVELOPE_BYTES: usize = 117;

/// The bytes on which the client computes its own figure of a bundle's L1 data fee, before
/// anything is proved: a paid bundle's `execute` calldata through `pool` with `action_data_len`
/// bytes of action calldata — the shape the relayer prices
/// ([`reference_bundle_calldata`]; proof, field elements and note
/// ciphertexts incompressible, as real ones are) — and [`SIGNED_ENVELOPE_BYTES`] of
/// incompressible bytes for the signed envelope. Its length is the signed transaction's to a
/// few bytes; the fee formulas (OP stack: calldata gas or FastLZ length; Arbitrum: length) see
/// the same compressibility as the real transaction's.
pub fn data_fee_sample(pool: alloy_primitives::Address, action_data_len: usize) -> Vec<u8> {
    let mut bytes = reference_bundle_calldata(pool, action_data_len);
    let mut word = alloy_primitives::keccak256(b"nox signed envelope");
    let mut envelope = Vec::with_capacity(SIGNED_ENVELOPE_BYTES + 32);
    while envelope.len() < SIGNED_ENVELOPE_BYTES {
        word = alloy_primitives::keccak256(word);
        envelope.extend_from_slice(word.as_slice());
    }
    envelope.truncate(SIGNED_ENVELOPE_BYTES);
    bytes.extend_from_slice(&envelope);
    bytes
}

/// A fee token's price at the moment of pricing: what selling an amount of it would yield in
/// wei, and the least amount whose sale yields a given number of wei. The relayer values every
/// token fee through this (admission, quotes, fee bumps). The shipped source is a Uniswap v2
/// pair's reserves ([`Reserves`], read at pricing time); an oracle or a TWAP answers the same
/// two questions (the relayer's `PriceFeed` says where a price comes from).
pub trait TokenPrice: Send + Sync {
    /// Wei the relayer gets for `amount` of the token, rounded down.
    fn value_in_wei(&self, amount: U256) -> U256;
    /// The least amount of the token worth at least `wei`, or `None` if none is.
    fn asset_for_wei(&self, wei: U256) -> Option<U256>;
}

impl TokenPrice for Reserves {
    fn value_in_wei(&self, amount: U256) -> U256 {
        Reserves::value_in_wei(self, amount)
    }
    fn asset_for_wei(&self, wei: U256) -> Option<U256> {
        Reserves::asset_for_wei(self, wei)
    }
}

/// A constant-product pool's reserves, the fee asset first (Uniswap v2, 0.3 % fee).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserves {
    /// Reserve of the fee asset.
    pub asset: U256,
    /// Reserve of WETH.
    pub weth: U256,
}

impl Reserves {
    /// Wei the relayer would get by selling `amount` of the asset into the pool
    /// (`UniswapV2Library.getAmountOut`): the value of a fee, rounded down.
    pub fn value_in_wei(&self, amount: U256) -> U256 {
        if amount.is_zero() || self.asset.is_zero() || self.weth.is_zero() {
            return U256::ZERO;
        }
        let in_with_fee = amount * U256::from(997u64);
        in_with_fee * self.weth / (self.asset * U256::from(1000u64) + in_with_fee)
    }

    /// Amount of the asset whose sale yields at least `wei` (`getAmountIn`), or `None` if the
    /// pool cannot yield that much.
    pub fn asset_for_wei(&self, wei: U256) -> Option<U256> {
        if wei.is_zero() {
            return Some(U256::ZERO);
        }
        if wei >= self.weth || self.asset.is_zero() {
            return None;
        }
        let num = self.asset * wei * U256::from(1000u64);
        let den = (self.weth - wei) * U256::from(997u64);
        Some(num / den + U256::from(1u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_insertion_share_is_two_notes_of_a_batch_rounded_up() {
        assert_eq!(insertion_gas(432_620, 16), 54_078); // 2 × 27,038.75, rounded up
        assert_eq!(insertion_gas(419_832, 2), 419_832); // a batch of two: the whole batch
        assert_eq!(insertion_gas(433_000, 1), 866_000);
        assert_eq!(insertion_gas(1, 0), 2); // a zero batch size is read as one
        assert_eq!(insertion_gas(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn an_l1_data_fee_is_priced_with_the_margin_and_as_gas_rounded_up() {
        assert_eq!(with_margin(U256::from(1_000u64), 1_000), U256::from(1_100u64));
        assert_eq!(with_margin(U256::from(1u64), 1), U256::from(2u64));
        // 2.05e13 wei of data fee at 0.0015 gwei per gas: 13,687,604 gas (rounded up).
        assert_eq!(l1_fee_gas(U256::from(20_531_405_242_323u64), 1_500_000), 13_687_604);
        assert_eq!(l1_fee_gas(U256::from(1u64), 0), 0);
        // The quote's gas, priced at the max fee, covers the fee.
        let gas = l1_fee_gas(U256::from(999_999u64), 7);
        assert!(U256::from(gas) * U256::from(7u64) >= U256::from(999_999u64));
    }

    #[test]
    fn plan_and_requirement() {
        let p = FeePlan::new(1_000_000_000, 100_000_000, 2_500);
        assert_eq!(p.max_fee_per_gas, 1_350_000_000);
        assert_eq!(required_wei(100_000, p.max_fee_per_gas, 1_000), U256::from(148_500_000_000_000u64));
        // The requirement rounds up.
        assert_eq!(required_wei(1, 1, 1), U256::from(2u64));
    }

    #[test]
    fn bumps_are_at_least_the_replacement_minimum() {
        let p = FeePlan::new(1_000, 10, 0);
        let b = p.bumped(1_250, &p);
        assert!(b.priority_fee * 10 >= p.priority_fee * 11);
        assert!(b.max_fee_per_gas * 10 >= p.max_fee_per_gas * 11);
        // A base fee that rose past the bump wins.
        let risen = FeePlan::new(5_000, 10, 0);
        assert!(p.bumped(1_250, &risen).max_fee_per_gas >= risen.max_fee_per_gas);
        // Zero fees still move.
        let zero = FeePlan::new(0, 0, 0);
        assert!(zero.bumped(1_250, &zero).priority_fee > 0);
    }

    #[test]
    fn gas_limit_gives_the_action_its_bound_gas() {
        // 63 000 bound gas needs 64 000 left at the call.
        assert_eq!(gas_limit(100_000, 63_000, 0), 174_000);
        assert!(gas_limit(400_000, 200_000, 2_000) >= (400_000 + 200_000 * 64 / 63) * 12 / 10);
        // Whatever the action used of its bound gas, the limit leaves it all at the call.
        for used in [0u64, 50_000, 200_000] {
            let limit = bundle_gas_limit(300_000 + used, 320_000, 200_000, 0);
            let payment = 300_000;
            assert!(limit - payment > 200_000 * 64 / 63, "used {used}: limit {limit}");
        }
        // A payment dearer than quoted still fits when the action uses all its gas.
        assert!(bundle_gas_limit(700_000, 300_000, 200_000, 0) >= 700_000 + 200_000 / 63);
    }

    proptest! {
        #[test]
        fn selling_the_quoted_amount_yields_the_wei(
            asset in 1_000u64..u64::MAX, weth in 1_000u64..u64::MAX, wei in 1u64..u64::MAX
        ) {
            let r = Reserves { asset: U256::from(asset), weth: U256::from(weth) };
            match r.asset_for_wei(U256::from(wei)) {
                Some(amount) => prop_assert!(r.value_in_wei(amount) >= U256::from(wei)),
                None => prop_assert!(U256::from(wei) >= r.weth),
            }
        }
    }
}
