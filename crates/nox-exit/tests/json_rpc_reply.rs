//! The upstream's JSON-RPC answer is checked against the request before it reaches the client
//! (issue 35): a fake upstream on loopback answers faithfully, or with a wrong id, a single
//! object for a batch, a missing or a repeated id. Mismatched answers become a JSON-RPC internal
//! error for each id asked, and are counted.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Reply, response, serve};
use nox_exit::{ExitConfig, ExitServices, JsonRpcConfig};
use serde_json::{Value, json};

const CAP: usize = 64 * 1024;

fn exit_for(upstream: &str) -> ExitServices {
    let rpc = JsonRpcConfig { upstream: upstream.into(), timeout: Duration::from_secs(5), ..Default::default() };
    ExitServices::new(ExitConfig { json_rpc: Some(rpc), ..Default::default() }).unwrap()
}

/// How the fake upstream misbehaves.
#[derive(Clone, Copy, Debug)]
enum Upstream {
    /// Answers each call with its own id.
    Faithful,
    /// Answers every call with id 1.
    IdOne,
    /// Answers a batch with one object (the first call's response).
    FirstOnly,
    /// Drops the last call's response.
    DropLast,
    /// Repeats the first call's response.
    RepeatFirst,
}

fn answer(call: &Value, id: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": call["method"] })
}

/// A fake upstream: reads the forwarded body, answers per `mode`.
async fn upstream(mode: Upstream) -> common::Server {
    serve(Arc::new(move |request: &str| {
        let body = request.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        let sent: Value = serde_json::from_str(body).expect("the exit forwards JSON");
        let reply = match (&sent, mode) {
            (Value::Array(calls), _) => {
                let mut out: Vec<Value> = calls.iter().map(|c| answer(c, c["id"].clone())).collect();
                match mode {
                    Upstream::Faithful => Value::Array(out),
                    Upstream::IdOne => Value::Array(calls.iter().map(|c| answer(c, json!(1))).collect()),
                    Upstream::FirstOnly => out.swap_remove(0),
                    Upstream::DropLast => {
                        out.pop();
                        Value::Array(out)
                    }
                    Upstream::RepeatFirst => {
                        out.push(out[0].clone());
                        Value::Array(out)
                    }
                }
            }
            (call, Upstream::IdOne) => answer(call, json!(1)),
            (call, _) => answer(call, call["id"].clone()),
        };
        let body = reply.to_string();
        Reply::Bytes(response("200 OK", &[("Content-Type", "application/json")], body.as_bytes()))
    }))
    .await
}

fn single(id: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_chainId","params":[]}}"#).into_bytes()
}

fn batch(ids: &[&str]) -> Vec<u8> {
    let calls: Vec<String> = ids
        .iter()
        .map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_blockNumber","params":[]}}"#))
        .collect();
    format!("[{}]", calls.join(",")).into_bytes()
}

async fn ask(exit: &ExitServices, body: &[u8]) -> Value {
    serde_json::from_slice(&exit.json_rpc(body, CAP).await.expect("an answer")).expect("JSON")
}

fn is_internal_error(response: &Value, id: &Value) {
    assert_eq!(&response["id"], id, "{response}");
    assert_eq!(response["error"]["code"], -32603, "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.contains("does not match the request"), "{message}");
}

#[tokio::test]
async fn every_id_kind_survives_the_round_trip_to_a_faithful_upstream() {
    let server = upstream(Upstream::Faithful).await;
    let exit = exit_for(&server.url("/"));
    for id in ["-5", "0", "1", "18446744073709551615", "-9223372036854775808", r#""-5""#, r#""""#, r#""abc""#] {
        let answer = ask(&exit, &single(id)).await;
        let want: Value = serde_json::from_str(id).unwrap();
        assert_eq!(answer["id"], want, "id {id} came back as {}", answer["id"]);
        assert_eq!(answer["result"], "eth_chainId");
        // What went upstream carried the same id, byte for byte.
        let seen = server.requests.lock().unwrap().last().cloned().unwrap();
        assert!(seen.contains(&format!(r#""id":{id},"#)), "{seen}");
    }
    let answer = ask(&exit, &batch(&["-5", r#""x""#, "7"])).await;
    assert_eq!(answer.as_array().map(Vec::len), Some(3));
    assert_eq!(exit.json_rpc_mismatched(), 0);
}

#[tokio::test]
async fn a_wrong_id_is_not_forwarded() {
    let server = upstream(Upstream::IdOne).await;
    let exit = exit_for(&server.url("/"));
    let answer = ask(&exit, &single("-5")).await;
    is_internal_error(&answer, &json!(-5));
    assert!(answer["error"]["message"].as_str().unwrap().contains("request id -5 with id 1"), "{answer}");
    // Id 1 itself is answered correctly by this upstream, and passes.
    assert_eq!(ask(&exit, &single("1")).await["result"], "eth_chainId");
    let answer = ask(&exit, &batch(&["1", "2"])).await;
    for (response, id) in answer.as_array().unwrap().iter().zip([json!(1), json!(2)]) {
        is_internal_error(response, &id);
    }
    assert_eq!(exit.json_rpc_mismatched(), 2);
}

#[tokio::test]
async fn a_batch_answered_with_one_object_missing_or_repeated_ids_is_not_forwarded() {
    for mode in [Upstream::FirstOnly, Upstream::DropLast, Upstream::RepeatFirst] {
        let server = upstream(mode).await;
        let exit = exit_for(&server.url("/"));
        let ids = [json!(-5), json!("a"), json!(3)];
        let answer = ask(&exit, &batch(&["-5", r#""a""#, "3"])).await;
        let responses = answer.as_array().unwrap_or_else(|| panic!("{mode:?}: {answer}"));
        assert_eq!(responses.len(), 3, "{mode:?}");
        for (response, id) in responses.iter().zip(&ids) {
            is_internal_error(response, id);
        }
        assert_eq!(exit.json_rpc_mismatched(), 1, "{mode:?}");
        // A single request to the same upstream is answered faithfully.
        assert_eq!(ask(&exit, &single("-5")).await["id"], -5, "{mode:?}");
    }
}
