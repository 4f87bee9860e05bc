//! Ethereum JSON-RPC request validation: method allow-list, batch size, `eth_getLogs` range,
//! `eth_sendRawTransaction` shape. Pure: the forwarding itself lives in `lib.rs`.

use std::collections::HashSet;

use serde_json::Value;

use crate::config::JsonRpcConfig;
use crate::error::ExitError;
use crate::target::clip;

fn bad(msg: impl Into<String>) -> ExitError {
    ExitError::BadRequest(msg.into())
}

/// The validated policy of a configured forwarder.
#[derive(Debug, Clone)]
pub(crate) struct RpcPolicy {
    pub config: JsonRpcConfig,
    methods: HashSet<String>,
}

impl RpcPolicy {
    pub fn new(config: JsonRpcConfig) -> Self {
        let methods = config.methods.iter().cloned().collect();
        Self { config, methods }
    }

    /// Accept `body` (one request or a batch) or say why not.
    pub fn validate(&self, body: &[u8]) -> Result<(), ExitError> {
        if body.len() > self.config.max_request_bytes {
            return Err(ExitError::RequestTooLarge(format!(
                "JSON-RPC body of {} bytes exceeds the limit of {} bytes",
                body.len(),
                self.config.max_request_bytes
            )));
        }
        let value: Value = serde_json::from_slice(body).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        match &value {
            Value::Array(batch) => {
                if batch.is_empty() {
                    return Err(bad("empty JSON-RPC batch"));
                }
                if batch.len() > self.config.max_batch {
                    return Err(ExitError::RequestTooLarge(format!(
                        "batch of {} requests exceeds the limit of {}",
                        batch.len(),
                        self.config.max_batch
                    )));
                }
                batch.iter().try_for_each(|call| self.validate_call(call))
            }
            call => self.validate_call(call),
        }
    }

    fn validate_call(&self, call: &Value) -> Result<(), ExitError> {
        let object = call.as_object().ok_or_else(|| bad("a JSON-RPC request must be an object"))?;
        let method = object
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("a JSON-RPC request needs a string \"method\""))?;
        if !self.methods.contains(method) {
            return Err(ExitError::Forbidden(format!("JSON-RPC method {} is not allowed", clip(method, 64))));
        }
        let params = object.get("params");
        match method {
            "eth_getLogs" => self.check_logs(params),
            "eth_sendRawTransaction" => self.check_raw_tx(params),
            _ => Ok(()),
        }
    }

    fn check_logs(&self, params: Option<&Value>) -> Result<(), ExitError> {
        let filter = params
            .and_then(Value::as_array)
            .filter(|p| p.len() == 1)
            .and_then(|p| p[0].as_object())
            .ok_or_else(|| bad("eth_getLogs takes one filter object"))?;
        let from = filter.get("fromBlock");
        let to = filter.get("toBlock");
        if filter.contains_key("blockHash") {
            if from.is_some() || to.is_some() {
                return Err(bad("eth_getLogs: blockHash excludes fromBlock/toBlock"));
            }
            return Ok(());
        }
        let (Some(from), Some(to)) = (from.and_then(block_number), to.and_then(block_number)) else {
            return Err(bad(
                "eth_getLogs needs numeric fromBlock and toBlock (hex quantities) or a blockHash; tags such as \"latest\" are open-ended",
            ));
        };
        if to < from {
            return Err(bad(format!("eth_getLogs: toBlock {to} is before fromBlock {from}")));
        }
        let limit = self.config.max_log_block_range;
        if to - from >= limit {
            return Err(bad(format!(
                "eth_getLogs: range of {} blocks exceeds the limit of {limit}",
                (to - from) as u128 + 1
            )));
        }
        Ok(())
    }

    fn check_raw_tx(&self, params: Option<&Value>) -> Result<(), ExitError> {
        let raw = params
            .and_then(Value::as_array)
            .filter(|p| p.len() == 1)
            .and_then(|p| p[0].as_str())
            .ok_or_else(|| bad("eth_sendRawTransaction takes exactly one hex string"))?;
        let hex = raw.strip_prefix("0x").ok_or_else(|| bad("eth_sendRawTransaction: data must start with 0x"))?;
        if hex.is_empty() {
            return Err(bad("eth_sendRawTransaction: empty transaction"));
        }
        if hex.len() % 2 != 0 {
            return Err(bad("eth_sendRawTransaction: odd number of hex digits"));
        }
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("eth_sendRawTransaction: data is not hex"));
        }
        let limit = self.config.max_raw_tx_bytes;
        if hex.len() / 2 > limit {
            return Err(ExitError::RequestTooLarge(format!(
                "raw transaction of {} bytes exceeds the limit of {limit} bytes",
                hex.len() / 2
            )));
        }
        Ok(())
    }
}

/// A block number given as a hex quantity (`"0x1b4"`); tags and decimals are `None`.
fn block_number(value: &Value) -> Option<u64> {
    let hex = value.as_str()?.strip_prefix("0x")?;
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}
