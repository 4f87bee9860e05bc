//! Ethereum JSON-RPC request validation. Pure: the forwarding itself lives in `lib.rs`.
//!
//! The body is parsed once, strictly ([`strict::parse`]: no duplicate or case-variant keys at
//! any depth), into typed calls: `jsonrpc` = `"2.0"`, an `id` (integer or short string), an
//! allowed `method`, and `params` (an array, checked per method by [`params::check`]). Any other
//! top-level member is refused, `"Method"` included. What goes upstream is **only** the
//! canonical re-serialisation of the validated calls, never the client's bytes: an upstream
//! whose parser differs from ours sees the same thing we checked. The upstream's answer is
//! checked against the request's ids before it goes back ([`reply`]).

mod params;
pub(crate) mod reply;
mod strict;
pub mod tx;

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;

use crate::config::JsonRpcConfig;
use crate::error::ExitError;
use crate::target::clip;

fn bad(msg: impl Into<String>) -> ExitError {
    ExitError::BadRequest(msg.into())
}

/// Longest accepted string `id`.
const MAX_ID_LEN: usize = 128;
/// Top-level members of a request object.
const MEMBERS: &[&str] = &["jsonrpc", "id", "method", "params"];

/// The validated policy of a configured forwarder.
#[derive(Debug, Clone)]
pub(crate) struct RpcPolicy {
    pub config: JsonRpcConfig,
    methods: HashSet<String>,
}

/// One validated call, in the canonical member order.
#[derive(Debug, Serialize)]
struct Call {
    jsonrpc: &'static str,
    id: Value,
    method: String,
    params: Value,
}

/// A validated request: what to forward and how many calls it holds.
#[derive(Debug)]
pub(crate) struct Validated {
    /// The canonical body to POST upstream.
    pub body: Vec<u8>,
    /// Calls in it (1 for a single request, the batch length otherwise).
    pub calls: usize,
    /// The ids the answer must carry.
    pub expected: reply::Expected,
}

impl RpcPolicy {
    pub fn new(config: JsonRpcConfig) -> Self {
        let methods = config.methods.iter().cloned().collect();
        Self { config, methods }
    }

    /// Accept `body` (one request or a batch) and return its canonical form, or say why not.
    pub fn validate(&self, body: &[u8]) -> Result<Validated, ExitError> {
        if body.len() > self.config.max_request_bytes {
            return Err(ExitError::RequestTooLarge(format!(
                "JSON-RPC body of {} bytes exceeds the limit of {} bytes",
                body.len(),
                self.config.max_request_bytes
            )));
        }
        let value = strict::parse(body).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        match value {
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
                let calls = batch.into_iter().map(|call| self.call(call)).collect::<Result<Vec<_>, _>>()?;
                let expected = reply::Expected::Batch(calls.iter().map(|call| call.id.clone()).collect());
                Ok(Validated { calls: calls.len(), body: encode(&calls)?, expected })
            }
            call => {
                let call = self.call(call)?;
                Ok(Validated { calls: 1, body: encode(&call)?, expected: reply::Expected::Single(call.id.clone()) })
            }
        }
    }

    fn call(&self, call: Value) -> Result<Call, ExitError> {
        let Value::Object(mut object) = call else {
            return Err(bad("a JSON-RPC request must be an object"));
        };
        if let Some(key) = object.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
            return Err(bad(format!(
                "unknown JSON-RPC request member {:?} (members are jsonrpc, id, method, params; names are case-sensitive)",
                clip(key, 32)
            )));
        }
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(bad("a JSON-RPC request needs \"jsonrpc\": \"2.0\""));
        }
        let id = object
            .remove("id")
            .ok_or_else(|| bad("a JSON-RPC request needs an \"id\" (notifications are not forwarded)"))?;
        let id_ok = match &id {
            Value::Number(n) => n.is_u64() || n.is_i64(),
            Value::String(s) => s.len() <= MAX_ID_LEN,
            _ => false,
        };
        if !id_ok {
            return Err(bad(format!("a JSON-RPC id must be an integer or a string of at most {MAX_ID_LEN} bytes")));
        }
        let method = match object.remove("method") {
            Some(Value::String(method)) => method,
            _ => return Err(bad("a JSON-RPC request needs a string \"method\"")),
        };
        if !self.methods.contains(&method) {
            return Err(ExitError::Forbidden(format!("JSON-RPC method {} is not allowed", clip(&method, 64))));
        }
        let params = object.remove("params").unwrap_or_else(|| Value::Array(Vec::new()));
        let params = params::check(&method, params, &self.config)?;
        Ok(Call { jsonrpc: "2.0", id, method, params })
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, ExitError> {
    serde_json::to_vec(value).map_err(|e| bad(format!("cannot re-encode the request: {e}")))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn policy() -> RpcPolicy {
        let mut config = JsonRpcConfig::default();
        config.methods.push("custom_method".into());
        RpcPolicy::new(config)
    }

    /// Member names close to the real ones: case variants, Go's folding look-alikes, extras.
    fn key() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "jsonrpc",
            "id",
            "method",
            "params",
            "Method",
            "PARAMS",
            "Id",
            "jſonrpc",
            "paramſ",
            "extra",
            "fromBlock",
            "FromBlock",
            "toBlock",
            "blockHash",
            "address",
            "topics",
            "gas",
            "Gas",
            "to",
            "data",
        ])
        .prop_map(str::to_owned)
    }

    fn scalar() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            r#""2.0""#,
            "1",
            "-3",
            "1.5",
            "null",
            "true",
            r#""eth_chainId""#,
            r#""eth_getLogs""#,
            r#""eth_call""#,
            r#""custom_method""#,
            r#""debug_traceTransaction""#,
            r#""0x1""#,
            r#""latest""#,
            r#""0x00000000000000000000000000000000000000aa""#,
            "[]",
        ])
        .prop_map(str::to_owned)
    }

    /// JSON text built by hand so that objects can repeat members (serde_json cannot).
    fn json() -> impl Strategy<Value = String> {
        scalar().prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((key(), inner), 0..6).prop_map(|members| {
                    let members: Vec<String> = members.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    /// A request that is often valid: the four members, then members drawn from `key()`
    /// (duplicates and case variants among them) before or after.
    fn request() -> impl Strategy<Value = String> {
        let method =
            prop::sample::select(vec!["eth_chainId", "eth_getLogs", "custom_method", "debug_traceTransaction"]);
        let params = prop_oneof![
            Just("[]".to_owned()),
            Just(r#"[{"fromBlock":"0x1","toBlock":"0x2"}]"#.to_owned()),
            json().prop_map(|j| format!("[{j}]")),
            json(),
        ];
        let extra = prop::collection::vec((key(), json()), 0..3);
        (method, params, extra, any::<bool>()).prop_map(|(method, params, extra, before)| {
            let base = format!(r#""jsonrpc":"2.0","id":1,"method":"{method}","params":{params}"#);
            let extra: Vec<String> = extra.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
            match (extra.is_empty(), before) {
                (true, _) => format!("{{{base}}}"),
                (false, true) => format!("{{{},{base}}}", extra.join(",")),
                (false, false) => format!("{{{base},{}}}", extra.join(",")),
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Whatever is forwarded is unambiguous (no repeated or case-variant members at any
        /// depth, only the four request members) and is a fixed point of validation: any
        /// parser, strict or lenient, first-wins or last-wins, reads what the exit checked.
        #[test]
        fn forwarded_bodies_are_canonical_fixed_points(body in prop_oneof![json(), request()], batch: bool) {
            let body = if batch { format!("[{body}]") } else { body };
            let policy = policy();
            if let Ok(validated) = policy.validate(body.as_bytes()) {
                let reparsed = strict::parse(&validated.body).expect("the canonical form is strict JSON");
                let calls = match &reparsed { Value::Array(calls) => calls.clone(), one => vec![one.clone()] };
                for call in &calls {
                    let keys: Vec<&str> = call.as_object().expect("an object").keys().map(String::as_str).collect();
                    prop_assert_eq!(keys, vec!["id", "jsonrpc", "method", "params"]);
                }
                let again = policy.validate(&validated.body).expect("the canonical form validates");
                prop_assert_eq!(again.body, validated.body);
            }
        }
    }
}
