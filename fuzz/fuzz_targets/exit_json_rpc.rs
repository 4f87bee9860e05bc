//! Feeds arbitrary bytes to the exit's JSON-RPC check (crates/nox-exit). Must never panic;
//! whatever it accepts, it forwards as a canonical body that is itself accepted unchanged (a
//! fixed point: no parser can read it differently from the check). The same bytes are also an
//! upstream answer to a fixed single request and batch: the answer check never panics, and what
//! it accepts carries exactly the ids asked. For an accepted request, a faithful answer built
//! from the canonical body passes and one with a shifted id does not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_exit::{JsonRpcConfig, canonical_json_rpc, check_json_rpc_reply};
use serde_json::{Value, json};

const SINGLE: &[u8] = br#"{"jsonrpc":"2.0","id":-5,"method":"eth_chainId","params":[]}"#;
const BATCH: &[u8] = br#"[{"jsonrpc":"2.0","id":-5,"method":"eth_chainId"},{"jsonrpc":"2.0","id":"x","method":"eth_chainId"}]"#;

/// A well-formed answer to each call of `request`, with the id `id_of` gives it.
fn answer(request: &Value, id_of: impl Fn(&Value) -> Value) -> Vec<u8> {
    let one = |call: &Value| json!({ "jsonrpc": "2.0", "id": id_of(&call["id"]), "result": null });
    match request {
        Value::Array(calls) => Value::Array(calls.iter().map(one).collect()),
        call => one(call),
    }
    .to_string()
    .into_bytes()
}

fuzz_target!(|data: &[u8]| {
    let mut config = JsonRpcConfig { chain_id: Some(1), state_overrides: true, ..JsonRpcConfig::default() };
    config.methods.push("custom_method".into());
    if let Ok(canonical) = canonical_json_rpc(&config, data) {
        let again = canonical_json_rpc(&config, &canonical).expect("the canonical body is accepted");
        assert_eq!(again, canonical, "the canonical body is a fixed point");
        let request: Value = serde_json::from_slice(&canonical).expect("the canonical body is JSON");
        let faithful = answer(&request, Value::clone);
        assert_eq!(check_json_rpc_reply(&config, &canonical, &faithful), Ok(Ok(())), "a faithful answer passes");
        let shifted = answer(&request, |id| json!([id]));
        assert!(matches!(check_json_rpc_reply(&config, &canonical, &shifted), Ok(Err(_))), "a wrong id is refused");
    }
    if let Ok(Ok(())) = check_json_rpc_reply(&config, SINGLE, data) {
        let reply: Value = serde_json::from_slice(data).expect("an accepted answer is JSON");
        assert_eq!(reply["id"], json!(-5), "an accepted answer carries the request's id");
    }
    if let Ok(Ok(())) = check_json_rpc_reply(&config, BATCH, data) {
        let reply: Value = serde_json::from_slice(data).expect("an accepted answer is JSON");
        let mut ids: Vec<String> = reply.as_array().expect("an array").iter().map(|r| r["id"].to_string()).collect();
        ids.sort();
        assert_eq!(ids, vec!["\"x\"".to_owned(), "-5".to_owned()], "an accepted batch answer carries the ids asked");
    }
});
