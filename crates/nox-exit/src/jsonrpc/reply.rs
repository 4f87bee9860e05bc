//! The upstream's answer, checked against the request before it goes back to the client.
//!
//! JSON-RPC 2.0 ties a response to its request only by `id`. An upstream that answers with
//! another id (a request `-5` answered as `1`), answers a batch with one object, or drops or
//! repeats a call would make the client take one call's result for another's (a balance for a
//! nonce, one transaction's receipt for another's). So the exit forwards an answer only when it
//! matches exactly what was asked:
//!
//! - a single request: one response object whose `id` equals the request's `id` in type and
//!   value (`-5` is not `5`, `"1"` is not `1`, `1.0` is not `1`);
//! - a batch: an array answering exactly the request ids, each as often as it was asked, in any
//!   order (the exit forwards no notifications, so every call has an id).
//!
//! Each response object must be `"jsonrpc": "2.0"` with exactly one of `result` and `error`, and
//! the answer is read with the same strict reader as requests (no repeated or case-variant keys:
//! `{"id":1,"id":-5}` reads differently in different clients). Pure: no I/O.

use std::collections::HashMap;

use serde_json::Value;

use super::strict;

/// The ids a forwarded request expects back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expected {
    /// A single request and its id.
    Single(Value),
    /// A batch and its calls' ids, in request order.
    Batch(Vec<Value>),
}

/// Why an upstream answer does not match its request. Messages name only ids the client sent
/// (clipped) and what the upstream did wrong, never the upstream itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyMismatch {
    /// Not strict JSON (or repeated keys).
    #[error("the upstream's answer is not valid JSON")]
    NotJson,
    /// A single request answered with something other than an object.
    #[error("the upstream answered a single request with a {0}, not a response object")]
    NotAnObject(&'static str),
    /// A batch answered with something other than an array.
    #[error("the upstream answered a batch with a {0}, not an array of responses")]
    NotAnArray(&'static str),
    /// A response object that is not `jsonrpc: "2.0"` with exactly one of `result`, `error`.
    #[error("the upstream's answer holds a malformed response object")]
    Malformed,
    /// A single request answered with another id.
    #[error("the upstream answered request id {expected} with id {got}")]
    WrongId {
        /// The request's id.
        expected: String,
        /// The id answered.
        got: String,
    },
    /// A batch answer without a response to one of the request's ids.
    #[error("the upstream's batch answer has no response to id {0}")]
    Missing(String),
    /// A batch answer with an id not asked, or asked fewer times.
    #[error("the upstream's batch answer holds id {0} that was not asked (or more often than asked)")]
    Unexpected(String),
}

/// An id as shown in a message: its JSON text, clipped.
fn show(id: Option<&Value>) -> String {
    let text = id.map_or_else(|| "(none)".to_owned(), Value::to_string);
    crate::target::clip(&text, 40)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The `id` of one response object, after checking its shape.
fn response_id(response: &Value) -> Result<Option<&Value>, ReplyMismatch> {
    let Value::Object(object) = response else {
        return Err(ReplyMismatch::Malformed);
    };
    let well_formed = object.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && (object.contains_key("result") != object.contains_key("error"));
    if !well_formed {
        return Err(ReplyMismatch::Malformed);
    }
    Ok(object.get("id"))
}

/// Checks `reply` (the upstream's body) against the ids asked.
pub(crate) fn check(expected: &Expected, reply: &[u8]) -> Result<(), ReplyMismatch> {
    let value = strict::parse(reply).map_err(|_| ReplyMismatch::NotJson)?;
    match expected {
        Expected::Single(id) => {
            if !value.is_object() {
                return Err(ReplyMismatch::NotAnObject(kind(&value)));
            }
            let got = response_id(&value)?;
            // `Value`'s equality is exact: numbers compare by kind (u64, i64, f64) and value.
            if got != Some(id) {
                return Err(ReplyMismatch::WrongId { expected: show(Some(id)), got: show(got) });
            }
            Ok(())
        }
        Expected::Batch(ids) => {
            let Value::Array(responses) = &value else {
                return Err(ReplyMismatch::NotAnArray(kind(&value)));
            };
            // Ids as JSON text: exact (`-5`, `5`, `"5"` and `5.0` are four different texts).
            let mut wanted: HashMap<String, usize> = HashMap::new();
            for id in ids {
                *wanted.entry(id.to_string()).or_default() += 1;
            }
            for response in responses {
                let id = response_id(response)?;
                let left = id.map(Value::to_string).and_then(|text| wanted.get_mut(&text));
                match left {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => return Err(ReplyMismatch::Unexpected(show(id))),
                }
            }
            match ids.iter().find(|id| wanted.get(&id.to_string()).is_some_and(|n| *n > 0)) {
                Some(id) => Err(ReplyMismatch::Missing(show(Some(id)))),
                None => Ok(()),
            }
        }
    }
}

/// JSON-RPC's "internal error" code.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// The answer the client gets instead of a mismatched one: an internal-error response for every
/// id asked (so the answer itself matches the request).
pub(crate) fn internal_error(expected: &Expected, mismatch: &ReplyMismatch) -> Vec<u8> {
    let message =
        format!("exit: the JSON-RPC upstream's answer does not match the request ({mismatch}); not forwarded");
    let error = |id: &Value| serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": INTERNAL_ERROR, "message": message } });
    let value = match expected {
        Expected::Single(id) => error(id),
        Expected::Batch(ids) => Value::Array(ids.iter().map(error).collect()),
    };
    value.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn single(id: Value) -> Expected {
        Expected::Single(id)
    }

    #[test]
    fn a_single_answer_must_carry_the_exact_id() {
        let ok = |id: Value, reply: &str| check(&single(id), reply.as_bytes());
        assert_eq!(ok(json!(-5), r#"{"jsonrpc":"2.0","id":-5,"result":"0x1"}"#), Ok(()));
        assert_eq!(ok(json!("a"), r#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}}"#), Ok(()));
        for (id, reply) in [
            (json!(-5), r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#),
            (json!(-5), r#"{"jsonrpc":"2.0","id":5,"result":"0x1"}"#),
            (json!(1), r#"{"jsonrpc":"2.0","id":"1","result":"0x1"}"#),
            (json!(1), r#"{"jsonrpc":"2.0","id":1.0,"result":"0x1"}"#),
            (json!(1), r#"{"jsonrpc":"2.0","id":null,"result":"0x1"}"#),
            (json!(1), r#"{"jsonrpc":"2.0","result":"0x1"}"#),
        ] {
            assert!(matches!(ok(id, reply), Err(ReplyMismatch::WrongId { .. })), "{reply}");
        }
    }

    #[test]
    fn malformed_or_ambiguous_answers_are_refused() {
        let id = single(json!(1));
        for (reply, want) in [
            (r#"{"jsonrpc":"2.0","id":1,"id":-5,"result":1}"#, ReplyMismatch::NotJson),
            (r#"{"jsonrpc":"2.0","id":1,"Id":-5,"result":1}"#, ReplyMismatch::NotJson),
            ("not json", ReplyMismatch::NotJson),
            (r#"[{"jsonrpc":"2.0","id":1,"result":1}]"#, ReplyMismatch::NotAnObject("array")),
            (r#"{"jsonrpc":"2.0","id":1}"#, ReplyMismatch::Malformed),
            (r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#, ReplyMismatch::Malformed),
            (r#"{"jsonrpc":"1.0","id":1,"result":1}"#, ReplyMismatch::Malformed),
        ] {
            assert_eq!(check(&id, reply.as_bytes()), Err(want), "{reply}");
        }
    }

    #[test]
    fn a_batch_answer_must_answer_each_id_as_often_as_asked() {
        let batch = Expected::Batch(vec![json!(1), json!("x"), json!(-5), json!(1)]);
        let r = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":0}}"#);
        let reply = |ids: &[&str]| format!("[{}]", ids.iter().map(|id| r(id)).collect::<Vec<_>>().join(","));
        assert_eq!(check(&batch, reply(&["-5", "1", "\"x\"", "1"]).as_bytes()), Ok(()), "any order");
        assert_eq!(check(&batch, reply(&["-5", "1", "\"x\""]).as_bytes()), Err(ReplyMismatch::Missing("1".into())));
        assert_eq!(
            check(&batch, reply(&["-5", "1", "\"x\"", "1", "1"]).as_bytes()),
            Err(ReplyMismatch::Unexpected("1".into()))
        );
        assert_eq!(
            check(&batch, reply(&["5", "1", "\"x\"", "1"]).as_bytes()),
            Err(ReplyMismatch::Unexpected("5".into()))
        );
        assert_eq!(check(&batch, r("1").as_bytes()), Err(ReplyMismatch::NotAnArray("object")));
    }

    #[test]
    fn the_internal_error_answers_every_id_asked() {
        let batch = Expected::Batch(vec![json!(-5), json!("x")]);
        let body = internal_error(&batch, &ReplyMismatch::NotJson);
        assert_eq!(check(&batch, &body), Ok(()), "the substitute answer matches the request");
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value[0]["error"]["code"], INTERNAL_ERROR);
        let single = single(json!(-5));
        assert_eq!(check(&single, &internal_error(&single, &ReplyMismatch::NotJson)), Ok(()));
    }
}
