//! `eth_sendRawTransaction`: decode the signed transaction and refuse, before the upstream
//! sees it, what it would refuse anyway or what this exit must not relay.
//!
//! Accepted: legacy with an EIP-155 chain id, EIP-2930 (type 1) and EIP-1559 (type 2). Refused:
//! legacy without a chain id (replayable on every chain), EIP-4844 blob transactions (type 3,
//! their network form carries up to ~768 KiB of blobs), EIP-7702 (type 4) and unknown types,
//! a chain id other than the configured one, non-canonical RLP (alloy-rlp's strict header and
//! integer decoding: no leading zeros, shortest length forms, single bytes encoded as
//! themselves), trailing bytes, missing or extra fields, a gas limit below 21,000, a priority
//! fee above the fee cap, init code above 49,152 bytes (EIP-3860), and signatures out of range
//! (`r` or `s` zero or not below the curve order, `s` in the upper half (EIP-2), a parity other
//! than 0/1). The signature itself is not verified: recovering the sender costs an elliptic-
//! curve operation per request and the upstream does it anyway.

use alloy_rlp::{Decodable, Header};

use crate::config::JsonRpcConfig;
use crate::error::ExitError;

/// secp256k1's group order n, big-endian.
const SECP256K1_N: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xba, 0xae, 0xdc,
    0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
];
/// n / 2, big-endian: the largest `s` accepted (EIP-2).
const SECP256K1_HALF_N: [u8; 32] = [
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x5d, 0x57, 0x6e,
    0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
];
/// The intrinsic gas of the cheapest transaction.
const MIN_GAS: u64 = 21_000;
/// EIP-3860's limit on init code.
const MAX_INIT_CODE: usize = 49_152;

/// A transaction's type, as the exit sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxType {
    /// Legacy with an EIP-155 chain id.
    Legacy,
    /// EIP-2930 (type 1).
    AccessList,
    /// EIP-1559 (type 2).
    DynamicFee,
}

/// What the exit learnt from a transaction it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxSummary {
    /// Its type.
    pub tx_type: TxType,
    /// Its chain id.
    pub chain_id: u64,
    /// Its gas limit.
    pub gas_limit: u64,
}

/// Why a raw transaction is refused (becomes a `BadRequest`, or `Forbidden` for the chain).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxError {
    /// The bytes are not one canonical RLP transaction.
    #[error("malformed transaction: {0}")]
    Malformed(String),
    /// A type this exit does not relay.
    #[error("transaction type {0} is not relayed by this exit ({1})")]
    Type(u8, &'static str),
    /// Legacy transaction without an EIP-155 chain id.
    #[error("legacy transaction without an EIP-155 chain id (v = {0}) is replayable on any chain and is refused")]
    NoChainId(u64),
    /// Signed for another chain.
    #[error("transaction is for chain {got}, this exit relays chain {expected}")]
    WrongChain {
        /// Its chain id.
        got: u64,
        /// The configured one.
        expected: u64,
    },
    /// A field value the upstream would refuse.
    #[error("invalid transaction: {0}")]
    Invalid(String),
}

fn malformed(e: impl std::fmt::Display) -> TxError {
    TxError::Malformed(e.to_string())
}

/// Check the hex text of the parameter, then the transaction it encodes.
pub(crate) fn check_hex(raw: &str, config: &JsonRpcConfig) -> Result<TxSummary, ExitError> {
    let bad = |msg: &str| ExitError::BadRequest(format!("eth_sendRawTransaction: {msg}"));
    let hex = raw.strip_prefix("0x").ok_or_else(|| bad("data must start with 0x"))?;
    if hex.is_empty() {
        return Err(bad("empty transaction"));
    }
    if hex.len() % 2 != 0 {
        return Err(bad("odd number of hex digits"));
    }
    let limit = config.max_raw_tx_bytes;
    if hex.len() / 2 > limit {
        return Err(ExitError::RequestTooLarge(format!(
            "raw transaction of {} bytes exceeds the limit of {limit} bytes",
            hex.len() / 2
        )));
    }
    let bytes = decode_hex(hex).ok_or_else(|| bad("data is not hex"))?;
    let Some(expected) = config.chain_id else {
        return Err(ExitError::Forbidden(
            "eth_sendRawTransaction: this exit has no chain id configured and relays no transactions".into(),
        ));
    };
    decode(&bytes, expected).map_err(|e| match e {
        TxError::WrongChain { .. } => ExitError::Forbidden(format!("eth_sendRawTransaction: {e}")),
        other => ExitError::BadRequest(format!("eth_sendRawTransaction: {other}")),
    })
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let nibble = |b: u8| (b as char).to_digit(16);
    hex.as_bytes().chunks_exact(2).map(|pair| Some((nibble(pair[0])? * 16 + nibble(pair[1])?) as u8)).collect()
}

/// Decode a signed transaction in its network (EIP-2718) form and check it for `chain_id`.
pub fn decode(raw: &[u8], chain_id: u64) -> Result<TxSummary, TxError> {
    let (&first, rest) = raw.split_first().ok_or_else(|| malformed("empty"))?;
    let (tx_type, mut body) = match first {
        0xc0..=0xff => (TxType::Legacy, raw),
        0x01 => (TxType::AccessList, rest),
        0x02 => (TxType::DynamicFee, rest),
        0x03 => return Err(TxError::Type(3, "EIP-4844 blob transactions are not relayed")),
        0x04 => return Err(TxError::Type(4, "EIP-7702 set-code transactions are not relayed")),
        0x00..=0x7f => return Err(TxError::Type(first, "unknown type")),
        _ => return Err(malformed("neither an RLP list nor a typed transaction")),
    };
    let header = Header::decode(&mut body).map_err(malformed)?;
    if !header.list {
        return Err(malformed("the transaction is not an RLP list"));
    }
    if body.len() != header.payload_length {
        return Err(malformed(if body.len() > header.payload_length {
            "trailing bytes after the transaction"
        } else {
            "truncated"
        }));
    }
    let mut fields = Fields(body);
    let summary = match tx_type {
        TxType::Legacy => {
            let _nonce = fields.u64("nonce")?;
            let _gas_price = fields.uint("gasPrice")?;
            let gas_limit = fields.u64("gasLimit")?;
            let creates = fields.to()?;
            let _value = fields.uint("value")?;
            let data = fields.bytes("data")?;
            let v = fields.u64("v")?;
            fields.signature()?;
            let tx_chain = match v {
                27 | 28 => return Err(TxError::NoChainId(v)),
                v if v >= 35 => (v - 35) / 2,
                v => return Err(TxError::Invalid(format!("v = {v} is neither 27/28 nor EIP-155"))),
            };
            check_common(tx_chain, chain_id, gas_limit, creates, data)?;
            TxSummary { tx_type, chain_id: tx_chain, gas_limit }
        }
        TxType::AccessList | TxType::DynamicFee => {
            let tx_chain = fields.u64("chainId")?;
            let _nonce = fields.u64("nonce")?;
            if tx_type == TxType::DynamicFee {
                let priority = fields.uint("maxPriorityFeePerGas")?;
                let max_fee = fields.uint("maxFeePerGas")?;
                if cmp_be(priority, max_fee).is_gt() {
                    return Err(TxError::Invalid("maxPriorityFeePerGas is above maxFeePerGas".into()));
                }
            } else {
                let _gas_price = fields.uint("gasPrice")?;
            }
            let gas_limit = fields.u64("gasLimit")?;
            let creates = fields.to()?;
            let _value = fields.uint("value")?;
            let data = fields.bytes("data")?;
            fields.access_list()?;
            let parity = fields.u64("yParity")?;
            if parity > 1 {
                return Err(TxError::Invalid(format!("yParity {parity} is not 0 or 1")));
            }
            fields.signature()?;
            check_common(tx_chain, chain_id, gas_limit, creates, data)?;
            TxSummary { tx_type, chain_id: tx_chain, gas_limit }
        }
    };
    if !fields.0.is_empty() {
        return Err(malformed("extra fields after the signature"));
    }
    Ok(summary)
}

fn check_common(tx_chain: u64, chain_id: u64, gas_limit: u64, creates: bool, data: &[u8]) -> Result<(), TxError> {
    if tx_chain != chain_id {
        return Err(TxError::WrongChain { got: tx_chain, expected: chain_id });
    }
    if gas_limit < MIN_GAS {
        return Err(TxError::Invalid(format!("gas limit {gas_limit} is below the intrinsic {MIN_GAS}")));
    }
    if creates && data.len() > MAX_INIT_CODE {
        return Err(TxError::Invalid(format!("init code of {} bytes exceeds {MAX_INIT_CODE} (EIP-3860)", data.len())));
    }
    Ok(())
}

/// Big-endian comparison of minimal unsigned integers (no leading zeros).
fn cmp_be(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The fields of a transaction list, read in order.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn missing(&self, name: &str) -> Result<(), TxError> {
        if self.0.is_empty() { Err(malformed(format!("missing field {name}"))) } else { Ok(()) }
    }

    /// A byte string (not a list).
    fn bytes(&mut self, name: &str) -> Result<&'a [u8], TxError> {
        self.missing(name)?;
        let header = Header::decode(&mut self.0).map_err(|e| malformed(format!("{name}: {e}")))?;
        if header.list {
            return Err(malformed(format!("{name} is a list, expected a byte string")));
        }
        let (value, rest) =
            self.0.split_at_checked(header.payload_length).ok_or_else(|| malformed(format!("{name}: truncated")))?;
        self.0 = rest;
        Ok(value)
    }

    /// A canonical unsigned integer of at most 256 bits, as its minimal big-endian bytes.
    fn uint(&mut self, name: &str) -> Result<&'a [u8], TxError> {
        let value = self.bytes(name)?;
        if value.len() > 32 {
            return Err(malformed(format!("{name} is wider than 256 bits")));
        }
        if value.first() == Some(&0) {
            return Err(malformed(format!("{name} has a leading zero byte (non-canonical integer)")));
        }
        Ok(value)
    }

    fn u64(&mut self, name: &str) -> Result<u64, TxError> {
        self.missing(name)?;
        u64::decode(&mut self.0).map_err(|e| malformed(format!("{name}: {e}")))
    }

    /// `to`: empty (contract creation, returns `true`) or 20 bytes.
    fn to(&mut self) -> Result<bool, TxError> {
        match self.bytes("to")?.len() {
            0 => Ok(true),
            20 => Ok(false),
            n => Err(malformed(format!("to is {n} bytes, expected 20 or empty"))),
        }
    }

    fn list(&mut self, name: &str) -> Result<Fields<'a>, TxError> {
        self.missing(name)?;
        let header = Header::decode(&mut self.0).map_err(|e| malformed(format!("{name}: {e}")))?;
        if !header.list {
            return Err(malformed(format!("{name} is not a list")));
        }
        let (inner, rest) =
            self.0.split_at_checked(header.payload_length).ok_or_else(|| malformed(format!("{name}: truncated")))?;
        self.0 = rest;
        Ok(Fields(inner))
    }

    fn access_list(&mut self) -> Result<(), TxError> {
        let mut entries = self.list("accessList")?;
        while !entries.0.is_empty() {
            let mut entry = entries.list("accessList entry")?;
            if entry.bytes("accessList address")?.len() != 20 {
                return Err(malformed("accessList address is not 20 bytes"));
            }
            let mut keys = entry.list("storageKeys")?;
            while !keys.0.is_empty() {
                if keys.bytes("storage key")?.len() != 32 {
                    return Err(malformed("storage key is not 32 bytes"));
                }
            }
            if !entry.0.is_empty() {
                return Err(malformed("extra fields in an accessList entry"));
            }
        }
        Ok(())
    }

    /// `r` and `s`: non-zero, `r < n`, `s <= n/2`.
    fn signature(&mut self) -> Result<(), TxError> {
        let r = self.uint("r")?;
        let s = self.uint("s")?;
        if r.is_empty() || s.is_empty() {
            return Err(TxError::Invalid("signature value r or s is zero".into()));
        }
        if cmp_be(r, trim(&SECP256K1_N)).is_ge() {
            return Err(TxError::Invalid("signature r is not below the curve order".into()));
        }
        if cmp_be(s, trim(&SECP256K1_HALF_N)).is_gt() {
            return Err(TxError::Invalid("signature s is in the upper half of the curve order (EIP-2)".into()));
        }
        Ok(())
    }
}

fn trim(be: &[u8]) -> &[u8] {
    let zeros = be.iter().take_while(|b| **b == 0).count();
    &be[zeros..]
}
