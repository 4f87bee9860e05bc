//! The paid private transaction's host-independent pieces (issue 31), the same encodings
//! `nox tx send` uses natively (`nox-pay`, `nox-relayer`'s ABI, `nox-chain`'s pool sync):
//!
//! - [`Module::pay_execution_hash`]: the raw execution hash `keccak256(target ‖ data ‖ fee ‖
//!   gas)` a payment binds (`BatchExecutor.executionHash`);
//! - [`Module::pay_data_fee_sample`]: the bytes the caller's own figure of a bundle's L1 data
//!   fee is computed on (`nox_relayer::price::data_fee_sample`, as `nox tx` does; issue 33);
//! - [`Module::pay_bundle`]: `BatchExecutor.execute(Bundle)` calldata from a prepared
//!   transaction's description and its proof (`nox_pay::Payment::bundle`);
//! - [`Module::wallet_sync`]: the pool's `eth_getLogs` entries decoded
//!   (`nox_pool_events::wallet_event`, as `nox_chain::pool_sync::decode`) and applied to the
//!   wallet's view.
//!
//! Nothing here does I/O: the host fetches the logs (through the mixnet) and sends the calldata.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::{SolCall, SolValue};
use nox_relayer::abi;
use nox_wallet::PoolEvent;
use nox_zk::field;
use serde::Deserialize;

use crate::api::{Module, WasmError, bad};

/// What the relayer is paid to do (JSON): call `target` with `data` (hex) and exactly `gas`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionJson {
    target: String,
    #[serde(default)]
    data: String,
    #[serde(default)]
    gas: u64,
    /// The fee (decimal, base units), for the execution hash only.
    #[serde(default)]
    fee: Option<String>,
    /// The shielded pool (the bundle's payment plugin), for the bundle only.
    #[serde(default)]
    pool: Option<String>,
}

/// The fields of [`crate::private`]'s description a bundle needs (the rest is ignored).
#[derive(Deserialize)]
struct Described {
    root: String,
    nullifiers: [String; 2],
    commitments: [String; 2],
    asset: String,
    public_in: String,
    public_out: String,
    fee: String,
    recipient: String,
    deadline: u64,
    notes: [String; 2],
}

/// One `eth_getLogs` entry (JSON-RPC field names; others ignored).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogJson {
    address: String,
    topics: Vec<String>,
    data: String,
    #[serde(default)]
    removed: bool,
}

fn hex_vec(what: &str, s: &str) -> Result<Vec<u8>, WasmError> {
    hex::decode(s.strip_prefix("0x").unwrap_or(s)).map_err(|_| bad(format!("{what}: not hex")))
}

fn fixed<const N: usize>(what: &str, s: &str) -> Result<[u8; N], WasmError> {
    hex_vec(what, s)?.try_into().map_err(|_| bad(format!("{what}: must be {N} bytes")))
}

fn address(what: &str, s: &str) -> Result<Address, WasmError> {
    Ok(Address::from(fixed::<20>(what, s)?))
}

fn decimal(what: &str, s: &str) -> Result<u128, WasmError> {
    s.parse().map_err(|_| bad(format!("{what}: not a decimal amount below 2^128")))
}

/// The longest action calldata [`Module::pay_data_fee_sample`] takes (a block's gas limit holds
/// no more calldata than this).
pub const MAX_SAMPLE_ACTION_LEN: usize = 1 << 21;

/// [`Module::pay_data_fee_sample`]'s argument.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleJson {
    pool: String,
    action_len: usize,
}

fn parse_action(json: &[u8]) -> Result<ActionJson, WasmError> {
    serde_json::from_slice(json).map_err(|e| bad(format!("action: {e}")))
}

/// Decodes one pool log as `nox_chain::pool_sync::decode` does, with the same decoder
/// (`nox_pool_events::wallet_event`; `None`: an event a wallet does not need).
fn decode(topics: &[alloy_primitives::B256], data: &[u8]) -> Result<Option<PoolEvent>, WasmError> {
    nox_pool_events::wallet_event(topics, data).map_err(|e| bad(format!("pool event: {e}")))
}

impl Module {
    /// The raw execution hash a payment for `action_json` (`{"target", "data", "gas", "fee"}`)
    /// binds: `keccak256(target ‖ data ‖ fee ‖ gas)`, as `BatchExecutor.executionHash` and
    /// `nox_pay::Action::execution_hash` compute it.
    pub fn pay_execution_hash(&self, action_json: &[u8]) -> Result<Vec<u8>, WasmError> {
        let a = parse_action(action_json)?;
        let target = fixed::<20>("target", &a.target)?;
        let data = hex_vec("data", &a.data)?;
        let fee = decimal("fee", a.fee.as_deref().unwrap_or("0"))?;
        Ok(field::execution_hash(&target, &data, fee, a.gas).0.to_vec())
    }

    /// The bytes whose L1 data fee is the caller's own figure of a paid bundle's through `pool`
    /// whose action carries `action_len` bytes (`{"pool", "action_len"}`): the relayer's reference
    /// bundle shape plus a signed envelope (`nox_relayer::price::data_fee_sample`). The host asks
    /// the chain's fee oracle for their fee. An action longer than [`MAX_SAMPLE_ACTION_LEN`] is
    /// refused.
    pub fn pay_data_fee_sample(&self, json: &[u8]) -> Result<Vec<u8>, WasmError> {
        let a: SampleJson = serde_json::from_slice(json).map_err(|e| bad(format!("data fee sample: {e}")))?;
        let pool = fixed::<20>("pool", &a.pool)?;
        if a.action_len > MAX_SAMPLE_ACTION_LEN {
            return Err(bad(format!("action_len: {} is above {MAX_SAMPLE_ACTION_LEN}", a.action_len)));
        }
        Ok(nox_relayer::price::data_fee_sample(Address::from(pool), a.action_len))
    }

    /// `BatchExecutor.execute(Bundle)` calldata for a proved transaction: `description` is
    /// [`Module::wallet_prepare`]'s, `proof` the 256 bytes [`Module::transfer_prove`] returned,
    /// `action_json` `{"pool", "target", "data", "gas"}`. The bundle's asset and fee are the
    /// transaction's (`nox_pay::Payment::bundle`).
    pub fn pay_bundle(&self, description: &[u8], proof: &[u8], action_json: &[u8]) -> Result<Vec<u8>, WasmError> {
        let d: Described = serde_json::from_slice(description).map_err(|e| bad(format!("description: {e}")))?;
        let a = parse_action(action_json)?;
        if proof.len() != 256 {
            return Err(bad(format!("proof must be 256 bytes, got {}", proof.len())));
        }
        let mut words = [U256::ZERO; 8];
        for (w, chunk) in words.iter_mut().zip(proof.chunks_exact(32)) {
            *w = U256::from_be_slice(chunk);
        }
        let w32 = |what: &str, s: &str| fixed::<32>(what, s).map(U256::from_be_bytes);
        let asset = address("asset", &d.asset)?;
        let fee = decimal("fee", &d.fee)?;
        let t = abi::Transaction {
            proof: words,
            root: w32("root", &d.root)?,
            nullifiers: [w32("nullifier", &d.nullifiers[0])?, w32("nullifier", &d.nullifiers[1])?],
            commitments: [w32("commitment", &d.commitments[0])?, w32("commitment", &d.commitments[1])?],
            asset,
            publicIn: U256::from(decimal("public_in", &d.public_in)?),
            publicOut: U256::from(decimal("public_out", &d.public_out)?),
            fee: U256::from(fee),
            recipient: address("recipient", &d.recipient)?,
            deadline: U256::from(d.deadline),
            notes: [Bytes::from(hex_vec("note", &d.notes[0])?), Bytes::from(hex_vec("note", &d.notes[1])?)],
        };
        let pool = address("pool", a.pool.as_deref().ok_or_else(|| bad("action: pool missing"))?)?;
        let bundle = abi::Bundle {
            payment: pool,
            paymentData: Bytes::from(t.abi_encode()),
            asset,
            fee: U256::from(fee),
            action: abi::Action {
                target: address("target", &a.target)?,
                value: U256::ZERO,
                gas: U256::from(a.gas),
                data: Bytes::from(hex_vec("data", &a.data)?),
            },
        };
        Ok(abi::executeCall { bundle }.abi_encode())
    }

    /// Applies the pool's logs (`eth_getLogs` entries of the pool `pool`, in chain order, JSON)
    /// to the wallet's view `view_json` (empty: a new view) with `seed`'s keys, and records
    /// `last_block` as synced. Returns the new view's JSON (`PoolView::to_json`). A removed
    /// (reorganised) log, or one from another address, is refused: the view is not changed.
    pub fn wallet_sync(
        &self,
        seed: &[u8],
        view_json: &[u8],
        logs_json: &[u8],
        pool: &[u8],
        last_block: u64,
    ) -> Result<Vec<u8>, WasmError> {
        let seed = crate::private::seed_of(seed)?;
        let mut view = crate::private::view_of(view_json)?;
        let pool: [u8; 20] = pool.try_into().map_err(|_| bad("pool must be 20 bytes"))?;
        let logs: Vec<LogJson> = serde_json::from_slice(logs_json).map_err(|e| bad(format!("logs: {e}")))?;
        let mut events = Vec::new();
        for log in &logs {
            if log.removed {
                return Err(bad("a removed (reorganised) log: sync again"));
            }
            if fixed::<20>("log address", &log.address)? != pool {
                return Err(bad(format!("a log from {} is not the pool's", log.address)));
            }
            let topics = log
                .topics
                .iter()
                .map(|t| fixed::<32>("topic", t).map(alloy_primitives::B256::from))
                .collect::<Result<Vec<_>, _>>()?;
            let data = hex_vec("log data", &log.data)?;
            if let Some(event) = decode(&topics, &data)? {
                events.push(event);
            }
        }
        view.apply_all(&seed, &events)?;
        view.last_block = view.last_block.max(last_block);
        Ok(view.to_json()?)
    }
}
