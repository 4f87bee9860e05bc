//! The relay request and its answers (docs/spec/relay.md): what a client puts in the body of a
//! `Relay` message (kind `0x04`) and what the exit puts in the body of an `Ok` response.
//! Pure: no I/O.

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use serde::{Deserialize, Serialize};

use crate::abi;

/// Operation byte: ask for the current price.
pub const OP_QUOTE: u8 = 0x01;
/// Operation byte: submit a bundle.
pub const OP_SUBMIT: u8 = 0x02;
/// Flag: submit even if the action reverts in simulation (the fee is paid either way).
pub const FLAG_PAY_ON_REVERT: u8 = 0x01;
/// Flag: simulate and price only, never submit.
pub const FLAG_SIMULATE_ONLY: u8 = 0x02;
/// Longest accepted `execute` calldata.
pub const MAX_CALLDATA: usize = 32 * 1024;
/// Bytes of a submit request before the calldata.
pub const SUBMIT_HEADER_LEN: usize = 1 + 1 + 8 + 20 + 20;

/// Why a relay request body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The body is empty.
    #[error("empty relay request")]
    Empty,
    /// The first byte is not a known operation.
    #[error("unknown relay operation 0x{0:02x}")]
    UnknownOp(u8),
    /// A quote request carries bytes after the operation.
    #[error("a quote request is exactly one byte")]
    QuoteTrailing,
    /// The submit header is cut short.
    #[error("submit request shorter than its {SUBMIT_HEADER_LEN}-byte header")]
    Truncated,
    /// Flag bits that this version does not define.
    #[error("unknown flag bits 0x{0:02x}")]
    UnknownFlags(u8),
    /// The calldata exceeds [`MAX_CALLDATA`].
    #[error("calldata of {0} bytes exceeds {MAX_CALLDATA}")]
    CalldataTooLong(usize),
    /// The calldata is not exactly one ABI-encoded `BatchExecutor.execute(Bundle)` call.
    #[error("calldata is not a canonical BatchExecutor.execute(bundle) call: {0}")]
    NotExecute(String),
}

/// What the client asks of the relayer.
#[derive(Clone, Debug, PartialEq)]
pub enum RelayRequest {
    /// The relayer's current price and addresses.
    Quote,
    /// A bundle to simulate, price and (unless `simulate_only`) submit.
    Submit(Box<Submission>),
}

/// A bundle as submitted: the exact calldata the relayer would send to `executor`.
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// Submit even if the action reverts in simulation.
    pub pay_on_revert: bool,
    /// Simulate and price only.
    pub simulate_only: bool,
    /// The chain the client built the bundle for.
    pub chain_id: u64,
    /// The executor the client addressed.
    pub executor: Address,
    /// The relayer the client's payment credits.
    pub relayer: Address,
    /// The decoded bundle.
    pub bundle: abi::Bundle,
    /// `execute(bundle)` calldata, exactly as received (and as it will be sent).
    pub calldata: Vec<u8>,
}

impl Submission {
    /// A submission of `bundle` (the calldata is its canonical encoding).
    pub fn new(chain_id: u64, executor: Address, relayer: Address, bundle: abi::Bundle) -> Self {
        let calldata = abi::executeCall { bundle: bundle.clone() }.abi_encode();
        Self { pay_on_revert: false, simulate_only: false, chain_id, executor, relayer, bundle, calldata }
    }
}

impl RelayRequest {
    /// The request body.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Self::Quote => vec![OP_QUOTE],
            Self::Submit(s) => {
                let mut out = Vec::with_capacity(SUBMIT_HEADER_LEN + s.calldata.len());
                out.push(OP_SUBMIT);
                let mut flags = 0;
                if s.pay_on_revert {
                    flags |= FLAG_PAY_ON_REVERT;
                }
                if s.simulate_only {
                    flags |= FLAG_SIMULATE_ONLY;
                }
                out.push(flags);
                out.extend_from_slice(&s.chain_id.to_be_bytes());
                out.extend_from_slice(s.executor.as_slice());
                out.extend_from_slice(s.relayer.as_slice());
                out.extend_from_slice(&s.calldata);
                out
            }
        }
    }

    /// Decodes a request body. Accepts exactly what [`RelayRequest::encode`] produces from a
    /// valid request: the calldata must re-encode to itself (no trailing or non-canonical bytes).
    pub fn decode(body: &[u8]) -> Result<Self, WireError> {
        let (&op, rest) = body.split_first().ok_or(WireError::Empty)?;
        match op {
            OP_QUOTE if rest.is_empty() => Ok(Self::Quote),
            OP_QUOTE => Err(WireError::QuoteTrailing),
            OP_SUBMIT => {
                if body.len() < SUBMIT_HEADER_LEN {
                    return Err(WireError::Truncated);
                }
                let flags = body[1];
                if flags & !(FLAG_PAY_ON_REVERT | FLAG_SIMULATE_ONLY) != 0 {
                    return Err(WireError::UnknownFlags(flags));
                }
                let chain_id = u64::from_be_bytes(body[2..10].try_into().map_err(|_| WireError::Truncated)?);
                let executor = Address::from_slice(&body[10..30]);
                let relayer = Address::from_slice(&body[30..50]);
                let calldata = &body[SUBMIT_HEADER_LEN..];
                if calldata.len() > MAX_CALLDATA {
                    return Err(WireError::CalldataTooLong(calldata.len()));
                }
                let call = abi::executeCall::abi_decode_validate(calldata)
                    .map_err(|e| WireError::NotExecute(e.to_string()))?;
                if call.abi_encode() != calldata {
                    return Err(WireError::NotExecute("non-canonical encoding".into()));
                }
                Ok(Self::Submit(Box::new(Submission {
                    pay_on_revert: flags & FLAG_PAY_ON_REVERT != 0,
                    simulate_only: flags & FLAG_SIMULATE_ONLY != 0,
                    chain_id,
                    executor,
                    relayer,
                    bundle: call.bundle,
                    calldata: calldata.to_vec(),
                })))
            }
            other => Err(WireError::UnknownOp(other)),
        }
    }
}

/// The relayer's price: what a client needs to choose a fee before proving.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quote {
    /// Chain id.
    pub chain_id: u64,
    /// The executor bundles must be addressed to.
    pub executor: Address,
    /// The account that submits (the payment must credit it).
    pub relayer: Address,
    /// The payment plugin accepted (the shielded pool).
    pub pool: Address,
    /// The block the price was read at.
    pub block: u64,
    /// The next block's base fee, wei per gas.
    pub base_fee: U256,
    /// The priority fee the relayer bids, wei per gas.
    pub priority_fee: U256,
    /// The max fee per gas it sets (the price the margin is checked at).
    pub max_fee_per_gas: U256,
    /// Margin over cost, basis points.
    pub margin_bps: u32,
    /// Gas added above the simulated use (besides the 1/64 reserve), basis points: the gas
    /// limit is [`crate::price::gas_limit`] of `payment_gas` and the action's bound gas.
    pub gas_extra_bps: u32,
    /// Fee asked per gas unit of the gas limit, per asset (cost × (1 + margin)).
    pub prices: Vec<AssetPrice>,
    /// Gas the executor and the payment take besides the action (measured by the relayer).
    pub payment_gas: u64,
    /// The insertion share priced into every payment: gas the relayer's inserter spends on the
    /// payment's two output notes (`insertBatch` gas × 2 / notes per batch), added to the gas
    /// limit in [`Quote::fee_for_action`]. Absent (an older relayer): 0.
    #[serde(default)]
    pub insertion_gas: u64,
    /// The L1 data fee of the bundle on an L2 (OP stack, Arbitrum; docs/design/l2-fees.md),
    /// as gas at `max_fee_per_gas`: the fee the chain charges for posting a bundle of the
    /// relayer's reference bundle (`price::reference_bundle_calldata`) to L1, divided by the
    /// max fee, rounded up. Added to the gas in [`Quote::fee_for_action`]. 0 on an L1 (and
    /// then not sent: an older client, which refuses unknown fields, still reads the quote).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub l1_data_gas: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The fee a relayer asks in one asset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssetPrice {
    /// The asset (zero address: ETH).
    pub asset: Address,
    /// Base units of the asset per million gas of the gas limit.
    pub per_million_gas: U256,
}

impl Quote {
    /// The fee (in `asset`) this quote asks for a bundle whose action takes `action_gas` (0 for
    /// a payment-only bundle): the gas limit [`crate::price::gas_limit`] plus the insertion
    /// share plus the L1 data fee's gas (`l1_data_gas`, 0 on an L1), or `None` if the asset is
    /// not priced.
    pub fn fee_for_action(&self, asset: Address, action_gas: u64) -> Option<U256> {
        let limit = crate::price::gas_limit(self.payment_gas, action_gas, self.gas_extra_bps);
        self.fee_for(asset, limit.saturating_add(self.insertion_gas).saturating_add(self.l1_data_gas))
    }

    /// The fee (in `asset`) this quote asks for a transaction with gas limit `gas`, or `None`
    /// if the asset is not priced.
    pub fn fee_for(&self, asset: Address, gas: u64) -> Option<U256> {
        let p = self.prices.iter().find(|p| p.asset == asset)?;
        let million = U256::from(1_000_000u64);
        // A quote comes from an untrusted exit: an absurd price saturates rather than wraps.
        Some(p.per_million_gas.saturating_mul(U256::from(gas)).div_ceil(million))
    }
}

/// Why the relayer refused a bundle (`outcome: refused`). Cheap refusals come before any chain
/// call; the others after a view call or the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The request body does not decode.
    Malformed,
    /// Built for another chain.
    WrongChain,
    /// Not addressed to this relayer's executor.
    WrongExecutor,
    /// The payment credits another relayer.
    WrongRelayer,
    /// A payment plugin this relayer does not accept.
    UnsupportedPayment,
    /// A fee asset this relayer does not price.
    UnsupportedAsset,
    /// The action asks the relayer to send ETH.
    ActionValue,
    /// The proof does not verify for these public values.
    BadProof,
    /// The deadline is too close or past.
    Expired,
    /// A bundle spending one of the payment's notes (either nullifier) is already in flight
    /// here.
    Replayed,
    /// One of the payment's nullifiers is spent on chain.
    Spent,
    /// The proof's root is not in the pool's window.
    UnknownRoot,
    /// The whole bundle reverts (the payment fails).
    PaymentReverts,
    /// The action reverts and the client did not ask to pay anyway.
    ActionReverts,
    /// The fee does not cover cost × (1 + margin) at the price the relayer bids.
    Unprofitable,
    /// Too many bundles in flight.
    Busy,
    /// The relayer's chain node failed.
    Chain,
    /// Mined, but reverted on chain.
    Reverted,
    /// The payment's deadline lies further ahead than the relayer's horizon (a refused bundle
    /// would otherwise stay resendable for its whole life).
    DeadlineTooFar,
    /// Too many simulations of this payment, or of simulate-only requests at this relayer,
    /// lately: retry later.
    Throttled,
    /// The fee asset has no usable price now (its time-weighted mean is not available yet).
    PriceUnavailable,
    /// The action calls an address with no code with calldata: it would "succeed" doing
    /// nothing (a typo'd target), the fee paid for nothing. A payment-only bundle has no
    /// calldata (target 0).
    NoCode,
}

/// The answer to a submission.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum Outcome {
    /// Mined.
    Included {
        /// Transaction hash.
        tx_hash: B256,
        /// Block number.
        block: u64,
        /// Gas used.
        gas_used: u64,
        /// Gas limit set.
        gas_limit: u64,
        /// Price paid per gas.
        effective_gas_price: U256,
        /// Whether the action succeeded (the fee is paid either way).
        action_success: bool,
        /// Fee received.
        fee: U256,
        /// Its asset.
        asset: Address,
        /// Fee bumps it took.
        bumps: u32,
        /// Milliseconds from the request's arrival to its broadcast: admission (proof check),
        /// pool views, both simulations, pricing, signing and journaling.
        prepare_ms: u64,
        /// Milliseconds from the broadcast to the receipt.
        inclusion_ms: u64,
    },
    /// Simulated and priced, not sent (the `simulate_only` flag).
    Simulated {
        /// Gas used in simulation.
        gas_used: u64,
        /// The gas limit the relayer would set.
        gas_limit: u64,
        /// Whether the action succeeds.
        action_success: bool,
        /// The smallest fee the relayer would accept, in the bundle's asset.
        required_fee: U256,
        /// Milliseconds from the request's arrival to the answer.
        prepare_ms: u64,
    },
    /// Sent but not mined within the relayer's wait; it keeps tracking it.
    Pending {
        /// The latest transaction hash.
        tx_hash: B256,
        /// Why the wait ended.
        detail: String,
    },
    /// Refused.
    Refused {
        /// The class of refusal.
        reason: Reason,
        /// A human-readable explanation (never the relayer's internals).
        detail: String,
        /// For `unprofitable`: the smallest fee that would have been accepted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        required_fee: Option<U256>,
    },
}

impl Outcome {
    /// A refusal without a required fee.
    pub fn refused(reason: Reason, detail: impl Into<String>) -> Self {
        Self::Refused { reason, detail: detail.into(), required_fee: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Bytes;

    fn bundle() -> abi::Bundle {
        abi::Bundle {
            payment: Address::repeat_byte(1),
            paymentData: Bytes::from(vec![7; 100]),
            asset: Address::ZERO,
            fee: U256::from(5u64),
            action: abi::Action {
                target: Address::repeat_byte(2),
                value: U256::ZERO,
                gas: U256::from(50_000u64),
                data: Bytes::from(vec![1, 2, 3]),
            },
        }
    }

    #[test]
    fn submit_round_trips() {
        let mut s = Submission::new(31337, Address::repeat_byte(3), Address::repeat_byte(4), bundle());
        s.pay_on_revert = true;
        let req = RelayRequest::Submit(Box::new(s));
        assert_eq!(RelayRequest::decode(&req.encode()).unwrap(), req);
        assert_eq!(RelayRequest::decode(&RelayRequest::Quote.encode()).unwrap(), RelayRequest::Quote);
    }

    #[test]
    fn malformed_bodies_are_refused() {
        let good = RelayRequest::Submit(Box::new(Submission::new(1, Address::ZERO, Address::ZERO, bundle()))).encode();
        assert_eq!(RelayRequest::decode(&[]), Err(WireError::Empty));
        assert_eq!(RelayRequest::decode(&[9]), Err(WireError::UnknownOp(9)));
        assert_eq!(RelayRequest::decode(&[OP_QUOTE, 0]), Err(WireError::QuoteTrailing));
        assert_eq!(RelayRequest::decode(&good[..20]), Err(WireError::Truncated));
        let mut flags = good.clone();
        flags[1] = 0x80;
        assert_eq!(RelayRequest::decode(&flags), Err(WireError::UnknownFlags(0x80)));
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(matches!(RelayRequest::decode(&trailing), Err(WireError::NotExecute(_))));
        let mut selector = good.clone();
        selector[SUBMIT_HEADER_LEN] ^= 1;
        assert!(matches!(RelayRequest::decode(&selector), Err(WireError::NotExecute(_))));
        let cut = &good[..good.len() - 1];
        assert!(matches!(RelayRequest::decode(cut), Err(WireError::NotExecute(_))));
        let mut long = good[..SUBMIT_HEADER_LEN].to_vec();
        long.resize(SUBMIT_HEADER_LEN + MAX_CALLDATA + 1, 0);
        assert_eq!(RelayRequest::decode(&long), Err(WireError::CalldataTooLong(MAX_CALLDATA + 1)));
    }

    #[test]
    fn outcomes_serialize_with_their_tag() {
        let o = Outcome::refused(Reason::WrongRelayer, "x");
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(json, r#"{"outcome":"refused","reason":"wrong_relayer","detail":"x"}"#);
        assert_eq!(serde_json::from_str::<Outcome>(&json).unwrap(), o);
        assert!(serde_json::from_str::<Outcome>(r#"{"outcome":"refused","reason":"nope","detail":""}"#).is_err());
    }

    #[test]
    fn quote_fee_rounds_up() {
        let q = Quote {
            chain_id: 1,
            executor: Address::ZERO,
            relayer: Address::ZERO,
            pool: Address::ZERO,
            block: 1,
            base_fee: U256::ZERO,
            priority_fee: U256::ZERO,
            max_fee_per_gas: U256::ZERO,
            margin_bps: 1000,
            gas_extra_bps: 0,
            prices: vec![AssetPrice { asset: Address::ZERO, per_million_gas: U256::from(3u64) }],
            payment_gas: 0,
            insertion_gas: 0,
            l1_data_gas: 0,
        };
        assert_eq!(q.fee_for(Address::ZERO, 1), Some(U256::from(1u64)));
        assert_eq!(q.fee_for(Address::ZERO, 1_000_000), Some(U256::from(3u64)));
        assert_eq!(q.fee_for(Address::repeat_byte(1), 1), None);
    }

    /// A private transaction's fee covers its gas limit and the insertion share of its two
    /// outputs: a quote that forgot the share would underprice every payment by it.
    #[test]
    fn fee_for_action_includes_the_insertion_share() {
        let mut q = Quote {
            chain_id: 1,
            executor: Address::ZERO,
            relayer: Address::ZERO,
            pool: Address::ZERO,
            block: 1,
            base_fee: U256::ZERO,
            priority_fee: U256::ZERO,
            max_fee_per_gas: U256::ZERO,
            margin_bps: 0,
            gas_extra_bps: 0,
            prices: vec![AssetPrice { asset: Address::ZERO, per_million_gas: U256::from(1_000_000u64) }],
            payment_gas: 300_000,
            insertion_gas: 0,
            l1_data_gas: 0,
        };
        // One wei per gas: the fee is the gas. Payment-only (action gas 0).
        let without = q.fee_for_action(Address::ZERO, 0).unwrap();
        assert_eq!(without, U256::from(310_000u64));
        q.insertion_gas = crate::price::insertion_gas(433_000, 16);
        assert_eq!(q.insertion_gas, 54_125);
        assert_eq!(q.fee_for_action(Address::ZERO, 0).unwrap(), U256::from(310_000u64 + 54_125));
        // An older relayer's quote (no field) reads as no share.
        let mut json = serde_json::to_value(&q).unwrap();
        json.as_object_mut().unwrap().remove("insertion_gas");
        assert_eq!(serde_json::from_value::<Quote>(json).unwrap().insertion_gas, 0);
        // On an L2 the data fee's gas is priced too; on an L1 (0) the field is not sent.
        assert!(!serde_json::to_string(&q).unwrap().contains("l1_data_gas"));
        q.l1_data_gas = 2_000_000;
        assert_eq!(q.fee_for_action(Address::ZERO, 0).unwrap(), U256::from(310_000u64 + 54_125 + 2_000_000));
        let back: Quote = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back.l1_data_gas, 2_000_000);
    }
}
