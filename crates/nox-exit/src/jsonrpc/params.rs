//! Typed parameters of the methods the exit knows: each parameter is checked for its type
//! (address, hash, quantity, block, call object, log filter) and the exit's bounds, and objects
//! may only hold the members named here, spelt exactly. What is forwarded is the checked
//! value, re-serialised.

use serde_json::{Map, Value};

use crate::config::{BLOCK_TAGS, JsonRpcConfig};
use crate::error::ExitError;
use crate::target::clip;

use super::tx;

fn bad(msg: impl Into<String>) -> ExitError {
    ExitError::BadRequest(msg.into())
}

fn forbidden(msg: impl Into<String>) -> ExitError {
    ExitError::Forbidden(msg.into())
}

/// Largest `blockCount` of `eth_feeHistory` (geth's own limit) and most reward percentiles.
const MAX_FEE_HISTORY_BLOCKS: u64 = 1024;
const MAX_FEE_HISTORY_PERCENTILES: usize = 100;
/// Most entries in a call object's access list, and storage keys per entry.
const MAX_ACCESS_LIST: usize = 256;

/// How a method's block parameter is policed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockUse {
    /// The method reads state at that block: `state_block_tags`, numbers and hashes only with
    /// `historical_state`.
    State,
    /// The method reads a block itself (cheap at any height): any tag or number.
    Block,
}

/// Methods with a parameter schema here.
pub(crate) const TYPED_METHODS: &[&str] = &[
    "eth_chainId",
    "eth_blockNumber",
    "eth_gasPrice",
    "eth_maxPriorityFeePerGas",
    "net_version",
    "web3_clientVersion",
    "eth_getBalance",
    "eth_getCode",
    "eth_getTransactionCount",
    "eth_getStorageAt",
    "eth_call",
    "eth_estimateGas",
    "eth_feeHistory",
    "eth_getTransactionByHash",
    "eth_getTransactionReceipt",
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getLogs",
    "eth_sendRawTransaction",
];

/// Check `params` of `method` and return the value to forward. A method without a schema here
/// (one the operator added) keeps its parameters as parsed: strict JSON, re-serialised, but
/// its objects are not typed.
pub(crate) fn check(method: &str, params: Value, config: &JsonRpcConfig) -> Result<Value, ExitError> {
    let mut list = match params {
        Value::Array(list) => list,
        Value::Object(_) if !TYPED_METHODS.contains(&method) => return Ok(params),
        _ => return Err(bad(format!("{}: params must be an array", clip(method, 64)))),
    };
    let arity = |min: usize, max: usize, list: &[Value]| {
        if (min..=max).contains(&list.len()) {
            Ok(())
        } else if min == max {
            Err(bad(format!("{method} takes {min} parameter(s), got {}", list.len())))
        } else {
            Err(bad(format!("{method} takes {min} to {max} parameters, got {}", list.len())))
        }
    };
    match method {
        "eth_chainId"
        | "eth_blockNumber"
        | "eth_gasPrice"
        | "eth_maxPriorityFeePerGas"
        | "net_version"
        | "web3_clientVersion" => arity(0, 0, &list)?,
        "eth_getBalance" | "eth_getCode" | "eth_getTransactionCount" => {
            arity(1, 2, &list)?;
            address(&list[0], "address")?;
            if let Some(b) = list.get(1) {
                block(b, BlockUse::State, config)?;
            }
        }
        "eth_getStorageAt" => {
            arity(2, 3, &list)?;
            address(&list[0], "address")?;
            slot(&list[1])?;
            if let Some(b) = list.get(2) {
                block(b, BlockUse::State, config)?;
            }
        }
        "eth_call" | "eth_estimateGas" => {
            arity(1, 3, &list)?;
            call_object(method, &mut list[0], config)?;
            if let Some(b) = list.get(1) {
                block(b, BlockUse::State, config)?;
            }
            if let Some(overrides) = list.get(2) {
                state_overrides(method, overrides, config)?;
            }
        }
        "eth_feeHistory" => {
            arity(2, 3, &list)?;
            let count = match &list[0] {
                Value::Number(n) => n.as_u64(),
                other => Some(quantity(other, "blockCount")?).and_then(|q| u64::try_from(q).ok()),
            };
            if !count.is_some_and(|c| (1..=MAX_FEE_HISTORY_BLOCKS).contains(&c)) {
                return Err(bad(format!("eth_feeHistory: blockCount must be 1 to {MAX_FEE_HISTORY_BLOCKS}")));
            }
            block(&list[1], BlockUse::Block, config)?;
            if let Some(p) = list.get(2) {
                let p = p.as_array().ok_or_else(|| bad("eth_feeHistory: rewardPercentiles must be an array"))?;
                let valid = p.len() <= MAX_FEE_HISTORY_PERCENTILES
                    && p.iter().all(|x| x.as_f64().is_some_and(|x| (0.0..=100.0).contains(&x)));
                if !valid {
                    return Err(bad(format!(
                        "eth_feeHistory: at most {MAX_FEE_HISTORY_PERCENTILES} rewardPercentiles, each 0 to 100"
                    )));
                }
            }
        }
        "eth_getTransactionByHash" | "eth_getTransactionReceipt" => {
            arity(1, 1, &list)?;
            hash(&list[0], "transaction hash")?;
        }
        "eth_getBlockByNumber" => {
            arity(2, 2, &list)?;
            block_number_or_tag(&list[0], "block")?;
            boolean(&list[1], "full transactions flag")?;
        }
        "eth_getBlockByHash" => {
            arity(2, 2, &list)?;
            hash(&list[0], "block hash")?;
            boolean(&list[1], "full transactions flag")?;
        }
        "eth_getLogs" => {
            if list.len() != 1 {
                return Err(bad("eth_getLogs takes one filter object"));
            }
            log_filter(&list[0], config)?;
        }
        "eth_sendRawTransaction" => {
            if list.len() != 1 {
                return Err(bad("eth_sendRawTransaction takes exactly one hex string"));
            }
            let raw = list[0].as_str().ok_or_else(|| bad("eth_sendRawTransaction takes exactly one hex string"))?;
            tx::check_hex(raw, config)?;
        }
        _ => {}
    }
    Ok(Value::Array(list))
}

/// The hex digits after `0x`, or why not.
fn hex_digits<'a>(value: &'a Value, what: &str) -> Result<&'a str, ExitError> {
    let text = value.as_str().ok_or_else(|| bad(format!("{what} must be a 0x-prefixed hex string")))?;
    let digits = text.strip_prefix("0x").ok_or_else(|| bad(format!("{what} must start with 0x")))?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad(format!("{what} is not hex")));
    }
    Ok(digits)
}

/// Hex data (`0x` + an even number of digits), at most `max_bytes` if given.
fn data(value: &Value, what: &str, max_bytes: Option<usize>) -> Result<(), ExitError> {
    let digits = hex_digits(value, what)?;
    if digits.len() % 2 != 0 {
        return Err(bad(format!("{what}: odd number of hex digits")));
    }
    if let Some(max) = max_bytes.filter(|max| digits.len() / 2 > *max) {
        return Err(bad(format!("{what} is longer than {max} bytes")));
    }
    Ok(())
}

/// A storage slot: up to 32 bytes of hex; odd digit counts (`0x0`) are accepted, as geth does.
fn slot(value: &Value) -> Result<(), ExitError> {
    if hex_digits(value, "storage slot")?.len() > 64 {
        return Err(bad("storage slot is longer than 32 bytes"));
    }
    Ok(())
}

fn fixed(value: &Value, what: &str, bytes: usize) -> Result<(), ExitError> {
    let digits = hex_digits(value, what)?;
    if digits.len() != 2 * bytes {
        return Err(bad(format!("{what} must be {bytes} bytes (0x + {} hex digits)", 2 * bytes)));
    }
    Ok(())
}

fn address(value: &Value, what: &str) -> Result<(), ExitError> {
    fixed(value, what, 20)
}

fn hash(value: &Value, what: &str) -> Result<(), ExitError> {
    fixed(value, what, 32)
}

fn boolean(value: &Value, what: &str) -> Result<(), ExitError> {
    value.as_bool().map(|_| ()).ok_or_else(|| bad(format!("{what} must be true or false")))
}

/// A hex quantity (`0x0`, `0x1b4`; no leading zeros, at most 256 bits); its value if it fits
/// 128 bits, saturated otherwise.
fn quantity(value: &Value, what: &str) -> Result<u128, ExitError> {
    let digits = hex_digits(value, what)?;
    if digits.is_empty() || digits.len() > 64 || (digits.len() > 1 && digits.starts_with('0')) {
        return Err(bad(format!("{what} must be a hex quantity (0x0, 0x1b4: no leading zeros, at most 256 bits)")));
    }
    Ok(u128::from_str_radix(digits, 16).unwrap_or(u128::MAX))
}

/// A block number (a quantity within u64) or a tag.
fn block_number_or_tag(value: &Value, what: &str) -> Result<Option<u64>, ExitError> {
    if let Some(tag) = value.as_str().filter(|t| !t.starts_with("0x")) {
        if BLOCK_TAGS.contains(&tag) {
            return Ok(None);
        }
        return Err(bad(format!("{what}: unknown block tag {}", clip(tag, 32))));
    }
    let number = quantity(value, what)?;
    u64::try_from(number).map(Some).map_err(|_| bad(format!("{what}: block number above 2^64")))
}

/// A block parameter: a tag, a number, or an EIP-1898 object (`blockNumber`, or `blockHash`
/// with an optional `requireCanonical`).
fn block(value: &Value, usage: BlockUse, config: &JsonRpcConfig) -> Result<(), ExitError> {
    let historical = || {
        forbidden(format!(
            "this exit serves state at the block tags {} only (block numbers and hashes need historical_state)",
            config.state_block_tags.join(", ")
        ))
    };
    if let Value::Object(object) = value {
        only_members(object, "block parameter", &["blockNumber", "blockHash", "requireCanonical"])?;
        match (object.get("blockNumber"), object.get("blockHash")) {
            (Some(number), None) if !object.contains_key("requireCanonical") => {
                quantity(number, "blockNumber")?;
            }
            (None, Some(h)) => {
                hash(h, "blockHash")?;
                if let Some(flag) = object.get("requireCanonical") {
                    boolean(flag, "requireCanonical")?;
                }
            }
            _ => return Err(bad("block parameter: give blockNumber, or blockHash with optional requireCanonical")),
        }
        return if usage == BlockUse::State && !config.historical_state { Err(historical()) } else { Ok(()) };
    }
    match block_number_or_tag(value, "block")? {
        None if usage == BlockUse::State => {
            let tag = value.as_str().unwrap_or_default();
            if config.state_block_tags.iter().any(|t| t == tag) { Ok(()) } else { Err(historical()) }
        }
        Some(_) if usage == BlockUse::State && !config.historical_state => Err(historical()),
        _ => Ok(()),
    }
}

/// Refuse members outside `allowed` (names are case-sensitive: `Gas` is not `gas`).
fn only_members(object: &Map<String, Value>, what: &str, allowed: &[&str]) -> Result<(), ExitError> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(bad(format!(
            "{what}: unknown member {:?} (accepted: {}; names are case-sensitive)",
            clip(key, 32),
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

fn access_list(value: &Value) -> Result<(), ExitError> {
    let entries = value.as_array().ok_or_else(|| bad("accessList must be an array"))?;
    if entries.len() > MAX_ACCESS_LIST {
        return Err(bad(format!("accessList longer than {MAX_ACCESS_LIST} entries")));
    }
    for entry in entries {
        let entry = entry.as_object().ok_or_else(|| bad("accessList entries must be objects"))?;
        only_members(entry, "accessList entry", &["address", "storageKeys"])?;
        address(entry.get("address").unwrap_or(&Value::Null), "accessList address")?;
        let keys =
            entry.get("storageKeys").and_then(Value::as_array).ok_or_else(|| bad("storageKeys must be an array"))?;
        if keys.len() > MAX_ACCESS_LIST {
            return Err(bad(format!("more than {MAX_ACCESS_LIST} storageKeys in one accessList entry")));
        }
        keys.iter().try_for_each(|k| hash(k, "storage key"))?;
    }
    Ok(())
}

const CALL_MEMBERS: &[&str] = &[
    "from",
    "to",
    "gas",
    "gasPrice",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
    "value",
    "data",
    "input",
    "nonce",
    "type",
    "accessList",
    "chainId",
];

/// The call object of `eth_call` / `eth_estimateGas`. `gas` is set to the cap if absent.
fn call_object(method: &str, value: &mut Value, config: &JsonRpcConfig) -> Result<(), ExitError> {
    let object = value.as_object_mut().ok_or_else(|| bad(format!("{method}: the call must be an object")))?;
    only_members(object, "call object", CALL_MEMBERS)?;
    for (key, field) in object.iter() {
        match key.as_str() {
            "from" => address(field, "from")?,
            "to" if field.is_null() => {}
            "to" => address(field, "to")?,
            "data" | "input" => data(field, key, Some(config.max_request_bytes))?,
            "accessList" => access_list(field)?,
            _ => {
                quantity(field, key)?;
            }
        }
    }
    if let (Some(d), Some(i)) = (object.get("data"), object.get("input"))
        && d != i
    {
        return Err(bad("call object: data and input differ"));
    }
    if matches!((object.get("gasPrice"), object.get("maxFeePerGas")), (Some(_), Some(_))) {
        return Err(bad("call object: gasPrice excludes maxFeePerGas/maxPriorityFeePerGas"));
    }
    let cap = config.gas_cap;
    match object.get("gas") {
        None => {
            object.insert("gas".into(), Value::String(format!("{cap:#x}")));
        }
        Some(gas) => {
            let gas = quantity(gas, "gas")?;
            if gas > u128::from(cap) {
                return Err(forbidden(format!("{method}: gas {gas} exceeds this exit's cap of {cap}")));
            }
        }
    }
    Ok(())
}

const OVERRIDE_MEMBERS: &[&str] = &["balance", "nonce", "code", "state", "stateDiff"];

fn state_overrides(method: &str, value: &Value, config: &JsonRpcConfig) -> Result<(), ExitError> {
    if !config.state_overrides {
        return Err(forbidden(format!("{method}: state overrides are not accepted by this exit")));
    }
    let accounts = value.as_object().ok_or_else(|| bad("state overrides must be an object keyed by address"))?;
    for (account, fields) in accounts {
        address(&Value::String(account.clone()), "state override address")?;
        let fields = fields.as_object().ok_or_else(|| bad("a state override must be an object"))?;
        only_members(fields, "state override", OVERRIDE_MEMBERS)?;
        if fields.contains_key("state") && fields.contains_key("stateDiff") {
            return Err(bad("state override: state excludes stateDiff"));
        }
        for (key, field) in fields {
            match key.as_str() {
                "code" => data(field, "code", Some(config.max_request_bytes))?,
                "state" | "stateDiff" => {
                    let slots = field.as_object().ok_or_else(|| bad(format!("{key} must be an object")))?;
                    for (slot, word) in slots {
                        hash(&Value::String(slot.clone()), "storage slot")?;
                        hash(word, "storage value")?;
                    }
                }
                _ => {
                    quantity(field, key)?;
                }
            }
        }
    }
    Ok(())
}

/// An `eth_getLogs` filter: one block by `blockHash`, or a numeric range of at most
/// `max_log_block_range` blocks; at most `max_log_addresses` addresses and 4 topic positions
/// of at most `max_log_topics` alternatives each.
fn log_filter(value: &Value, config: &JsonRpcConfig) -> Result<(), ExitError> {
    let filter = value.as_object().ok_or_else(|| bad("eth_getLogs takes one filter object"))?;
    only_members(filter, "eth_getLogs filter", &["fromBlock", "toBlock", "blockHash", "address", "topics"])?;
    let from = filter.get("fromBlock");
    let to = filter.get("toBlock");
    if let Some(h) = filter.get("blockHash") {
        if from.is_some() || to.is_some() {
            return Err(bad("eth_getLogs: blockHash excludes fromBlock/toBlock"));
        }
        hash(h, "blockHash")?;
    } else {
        let number = |v: Option<&Value>| v.map(|v| block_number_or_tag(v, "eth_getLogs block")).transpose();
        let (Some(Some(from)), Some(Some(to))) = (number(from)?, number(to)?) else {
            return Err(bad(
                "eth_getLogs needs numeric fromBlock and toBlock (hex quantities) or a blockHash; tags such as \"latest\" are open-ended",
            ));
        };
        if to < from {
            return Err(bad(format!("eth_getLogs: toBlock {to} is before fromBlock {from}")));
        }
        let limit = config.max_log_block_range;
        if to - from >= limit {
            return Err(bad(format!(
                "eth_getLogs: range of {} blocks exceeds the limit of {limit}",
                u128::from(to - from) + 1
            )));
        }
    }
    match filter.get("address") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            if list.len() > config.max_log_addresses {
                return Err(bad(format!(
                    "eth_getLogs: {} addresses exceed the limit of {}",
                    list.len(),
                    config.max_log_addresses
                )));
            }
            list.iter().try_for_each(|a| address(a, "eth_getLogs address"))?;
        }
        Some(one) => address(one, "eth_getLogs address")?,
    }
    match filter.get("topics") {
        None | Some(Value::Null) => {}
        Some(Value::Array(positions)) => {
            if positions.len() > 4 {
                return Err(bad("eth_getLogs: at most 4 topic positions"));
            }
            for position in positions {
                match position {
                    Value::Null => {}
                    Value::Array(alternatives) => {
                        if alternatives.len() > config.max_log_topics {
                            return Err(bad(format!(
                                "eth_getLogs: {} alternatives in one topic position exceed the limit of {}",
                                alternatives.len(),
                                config.max_log_topics
                            )));
                        }
                        alternatives.iter().filter(|t| !t.is_null()).try_for_each(|t| hash(t, "topic"))?;
                    }
                    one => hash(one, "topic")?,
                }
            }
        }
        Some(_) => return Err(bad("eth_getLogs: topics must be an array")),
    }
    Ok(())
}
