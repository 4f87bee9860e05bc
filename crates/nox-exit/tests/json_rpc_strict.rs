//! Parser differentials and expensive calls, against a logging upstream: a real HTTP server on
//! loopback that records the bytes it receives. Each attack body used to reach the upstream
//! byte for byte; now it is refused before any connection, and what is forwarded is the
//! canonical re-serialisation of the validated request.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Reply, Server, canned, response, serve};
use nox_exit::{ConfigError, ErrorKind, ExitConfig, ExitError, ExitServices, JsonRpcConfig};

const CAP: usize = 64 * 1024;
const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#;
const ADDR: &str = "0x00000000000000000000000000000000000000aa";
const HASH: &str = "0x00000000000000000000000000000000000000000000000000000000000000bb";

async fn logging_upstream() -> Server {
    canned(response("200 OK", &[("Content-Type", "application/json")], ANSWER)).await
}

fn exit_with(upstream: &Server, tune: impl FnOnce(&mut JsonRpcConfig)) -> ExitServices {
    let mut rpc = JsonRpcConfig { upstream: upstream.url("/"), timeout: Duration::from_secs(5), ..Default::default() };
    tune(&mut rpc);
    ExitServices::new(ExitConfig { json_rpc: Some(rpc), ..Default::default() }).unwrap()
}

/// The body the upstream received (after the header block).
fn forwarded(upstream: &Server, i: usize) -> String {
    let request = upstream.request(i);
    request.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default()
}

async fn refused(exit: &ExitServices, body: &str) -> ExitError {
    exit.json_rpc(body.as_bytes(), CAP).await.expect_err(body)
}

#[tokio::test]
async fn a_case_variant_method_member_is_refused() {
    let upstream = logging_upstream().await;
    let exit = exit_with(&upstream, |_| {});
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","Method":"debug_traceTransaction","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":1,"Method":"debug_traceTransaction","method":"eth_chainId","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","METHOD":"debug_traceTransaction"}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"eth_chainId","mEthod":"debug_traceTransaction"}]"#,
    ] {
        assert_eq!(refused(&exit, body).await.kind(), ErrorKind::BadRequest, "{body}");
    }
    // A member that is merely unknown (not a case variant) is refused too.
    let err = refused(&exit, r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","extra":1}"#).await;
    assert!(err.to_string().contains("unknown JSON-RPC request member \"extra\""), "{err}");
    assert_eq!(upstream.accepted(), 0, "nothing reached the upstream");
}

#[tokio::test]
async fn two_method_members_are_refused() {
    let upstream = logging_upstream().await;
    let exit = exit_with(&upstream, |_| {});
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","method":"debug_traceTransaction","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","method":"eth_chainId","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"eth_chainId"}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"param\u{17f}\":[]}",
    ] {
        let err = refused(&exit, body).await;
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{body}: {err}");
    }
    let err = refused(&exit, r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","method":"x"}"#).await;
    assert!(err.to_string().contains("duplicate key \"method\""), "{err}");
    assert_eq!(upstream.accepted(), 0);
}

#[tokio::test]
async fn get_logs_with_a_second_unbounded_params_is_refused() {
    let upstream = logging_upstream().await;
    let exit = exit_with(&upstream, |_| {});
    let bounded = r#"[{"fromBlock":"0x1","toBlock":"0x2"}]"#;
    let unbounded = r#"[{"fromBlock":"0x0","toBlock":"latest"}]"#;
    for body in [
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":{bounded},"Params":{unbounded}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","Params":{unbounded},"params":{bounded}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":{bounded},"params":{unbounded}}}"#),
        // The same trick one level down, inside the filter.
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x1","toBlock":"0x2","FromBlock":"0x0"}]}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x1","toBlock":"0x2","toBlock":"latest"}]}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x1","ToBlock":"latest","toBlock":"0x2"}]}"#.into(),
    ] {
        let err = refused(&exit, &body).await;
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{body}: {err}");
    }
    assert_eq!(upstream.accepted(), 0);
}

#[tokio::test]
async fn forwarded_bytes_are_the_canonical_form() {
    let upstream = logging_upstream().await;
    let exit = exit_with(&upstream, |_| {});
    let cases = [
        (
            format!(
                "\n{{ \"params\": [\"{ADDR}\", \"latest\"], \"id\": \"\\u0061b\", \"method\": \"eth_getBalance\", \"jsonrpc\": \"2.0\" }}\n"
            ),
            format!(r#"{{"jsonrpc":"2.0","id":"ab","method":"eth_getBalance","params":["{ADDR}","latest"]}}"#),
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber","params":[]}"#.to_owned(),
        ),
        (
            format!(
                r#"[ {{"jsonrpc":"2.0","method":"eth_chainId","id":-1}} , {{"id":2,"jsonrpc":"2.0","method":"eth_getBlockByHash","params":["{HASH}",false]}} ]"#
            ),
            format!(
                r#"[{{"jsonrpc":"2.0","id":-1,"method":"eth_chainId","params":[]}},{{"jsonrpc":"2.0","id":2,"method":"eth_getBlockByHash","params":["{HASH}",false]}}]"#
            ),
        ),
    ];
    for (i, (sent, canonical)) in cases.iter().enumerate() {
        exit.json_rpc(sent.as_bytes(), CAP).await.unwrap();
        assert_eq!(forwarded(&upstream, i), *canonical, "{sent}");
    }
}

#[tokio::test]
async fn requests_must_be_json_rpc_2_with_an_id() {
    let upstream = logging_upstream().await;
    let exit = exit_with(&upstream, |_| {});
    for (body, expected) in [
        (r#"{"id":1,"method":"eth_chainId"}"#, "\"jsonrpc\": \"2.0\""),
        (r#"{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}"#, "\"jsonrpc\": \"2.0\""),
        (r#"{"jsonrpc":"2.0","method":"eth_chainId"}"#, "needs an \"id\""),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"eth_chainId"}"#, "integer or a string"),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"eth_chainId"}"#, "integer or a string"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":{"a":1}}"#, "params must be an array"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[1]}"#, "takes 0 parameter(s)"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xaa","latest"]}"#, "20 bytes"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x01",false]}"#, "no leading zeros"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["newest",false]}"#, "unknown block tag"),
    ] {
        let err = refused(&exit, body).await;
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{body}: {err}");
        assert!(err.to_string().contains(expected), "{body}: {err}");
    }
    assert_eq!(upstream.accepted(), 0);
}

fn eth_call(call: &str, rest: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{call}{rest}]}}"#)
}

#[tokio::test]
async fn eth_call_gas_is_capped() {
    let upstream = logging_upstream().await;
    let exit = exit_with(&upstream, |rpc| rpc.gas_cap = 1_000_000);
    // No gas: the exit sends the cap.
    exit.json_rpc(eth_call(&format!(r#"{{"to":"{ADDR}","data":"0x"}}"#), r#","latest""#).as_bytes(), CAP)
        .await
        .unwrap();
    assert_eq!(
        forwarded(&upstream, 0),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{{"data":"0x","gas":"0xf4240","to":"{ADDR}"}},"latest"]}}"#
        )
    );
    // At the cap: forwarded as is.
    exit.json_rpc(eth_call(&format!(r#"{{"to":"{ADDR}","gas":"0xf4240"}}"#), "").as_bytes(), CAP).await.unwrap();
    // Above: refused.
    let err = refused(&exit, &eth_call(&format!(r#"{{"to":"{ADDR}","gas":"0xf4241"}}"#), "")).await;
    assert_eq!(err, ExitError::Forbidden("eth_call: gas 1000001 exceeds this exit's cap of 1000000".into()));
    let estimate = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{{"to":"{ADDR}","gas":"0xffffffffffffffffffff"}}]}}"#
    );
    assert_eq!(refused(&exit, &estimate).await.kind(), ErrorKind::Forbidden);
    // Unknown or case-variant members of the call object are refused (geth would read "Gas" as gas).
    for call in
        [format!(r#"{{"to":"{ADDR}","Gas":"0xffffffff"}}"#), format!(r#"{{"to":"{ADDR}","blobVersionedHashes":[]}}"#)]
    {
        let err = refused(&exit, &eth_call(&call, "")).await;
        assert!(err.to_string().contains("unknown member"), "{call}: {err}");
    }
    assert_eq!(upstream.accepted(), 2);
}

#[tokio::test]
async fn state_overrides_and_old_blocks_only_as_configured() {
    let upstream = logging_upstream().await;
    let call = format!(r#"{{"to":"{ADDR}"}}"#);
    let overrides = format!(r#","latest",{{"{ADDR}":{{"balance":"0x1","stateDiff":{{"{HASH}":"{HASH}"}}}}}}"#);
    let strict = exit_with(&upstream, |_| {});
    let err = refused(&strict, &eth_call(&call, &overrides)).await;
    assert_eq!(err, ExitError::Forbidden("eth_call: state overrides are not accepted by this exit".into()));
    for block in [r#","earliest""#, r#","0x10""#, &format!(r#",{{"blockHash":"{HASH}"}}"#), r#",{"blockNumber":"0x1"}"#]
    {
        let err = refused(&strict, &eth_call(&call, block)).await;
        assert_eq!(err.kind(), ErrorKind::Forbidden, "{block}: {err}");
        assert!(err.to_string().contains("historical_state"), "{err}");
    }
    let balance_at =
        |block: &str| format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["{ADDR}",{block}]}}"#);
    assert_eq!(refused(&strict, &balance_at(r#""0x10""#)).await.kind(), ErrorKind::Forbidden);
    for tag in ["latest", "pending", "safe", "finalized"] {
        strict.json_rpc(eth_call(&call, &format!(r#","{tag}""#)).as_bytes(), CAP).await.unwrap();
    }
    // Reading a block by number is cheap at any height.
    let block = r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x10",false]}"#;
    strict.json_rpc(block.as_bytes(), CAP).await.unwrap();
    assert_eq!(upstream.accepted(), 5);

    let open = exit_with(&upstream, |rpc| {
        rpc.state_overrides = true;
        rpc.historical_state = true;
    });
    open.json_rpc(eth_call(&call, &overrides).as_bytes(), CAP).await.unwrap();
    open.json_rpc(eth_call(&call, r#","0x10""#).as_bytes(), CAP).await.unwrap();
    open.json_rpc(balance_at(&format!(r#"{{"blockHash":"{HASH}","requireCanonical":true}}"#)).as_bytes(), CAP)
        .await
        .unwrap();
    // Overrides are typed too: unknown members and state + stateDiff together are refused.
    for bad in [
        format!(r#","latest",{{"{ADDR}":{{"Balance":"0x1"}}}}"#),
        format!(r#","latest",{{"{ADDR}":{{"state":{{}},"stateDiff":{{}}}}}}"#),
        r#","latest",{"0x01":{"balance":"0x1"}}"#.to_owned(),
    ] {
        assert_eq!(refused(&open, &eth_call(&call, &bad)).await.kind(), ErrorKind::BadRequest, "{bad}");
    }
    assert_eq!(upstream.accepted(), 8);
}

#[tokio::test]
async fn get_logs_filters_are_bounded() {
    let upstream = logging_upstream().await;
    let exit = exit_with(&upstream, |rpc| {
        rpc.max_log_addresses = 2;
        rpc.max_log_topics = 2;
    });
    let logs = |filter: String| format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{filter}]}}"#);
    let ok = [
        format!(r#"{{"blockHash":"{HASH}","address":["{ADDR}","{ADDR}"],"topics":[null,["{HASH}",null],"{HASH}"]}}"#),
        format!(r#"{{"fromBlock":"0x1","toBlock":"0x1","address":"{ADDR}","topics":[]}}"#),
    ];
    for filter in &ok {
        exit.json_rpc(logs(filter.clone()).as_bytes(), CAP).await.unwrap();
    }
    let refused_filters = [
        (format!(r#"{{"blockHash":"{HASH}","toBlock":"0x1"}}"#), "blockHash excludes"),
        (
            format!(r#"{{"blockHash":"{HASH}","address":["{ADDR}","{ADDR}","{ADDR}"]}}"#),
            "3 addresses exceed the limit of 2",
        ),
        (format!(r#"{{"blockHash":"{HASH}","topics":[["{HASH}","{HASH}","{HASH}"]]}}"#), "3 alternatives"),
        (format!(r#"{{"blockHash":"{HASH}","topics":[null,null,null,null,null]}}"#), "at most 4 topic positions"),
        (format!(r#"{{"blockHash":"{HASH}","topics":[[["{HASH}"]]]}}"#), "hex string"),
        (format!(r#"{{"blockHash":"{HASH}","Address":"{ADDR}"}}"#), "unknown member"),
        (format!(r#"{{"blockHash":"{HASH}","topics":"{HASH}"}}"#), "topics must be an array"),
    ];
    for (filter, expected) in refused_filters {
        let err = refused(&exit, &logs(filter.clone())).await;
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{filter}: {err}");
        assert!(err.to_string().contains(expected), "{filter}: {err}");
    }
    assert_eq!(upstream.accepted(), ok.len());
}

/// One anonymous client cannot hold more than `max_calls_in_flight` upstream calls: a batch
/// counts as its length, and the call after the bound is refused at once with `Busy`.
#[tokio::test]
async fn calls_in_flight_are_bounded_globally() {
    let stalling = serve(Arc::new(|_| Reply::Stall)).await;
    let exit = exit_with(&stalling, |rpc| {
        rpc.max_calls_in_flight = 4;
        rpc.max_batch = 4;
        rpc.timeout = Duration::from_secs(3);
    });
    let one = r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#;
    let batch = format!("[{one},{one},{one}]");
    let holder = exit.clone();
    let held = tokio::spawn(async move { holder.json_rpc(batch.as_bytes(), CAP).await });
    while stalling.requests.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // 3 of 4 permits are held: one more call fits, a batch of two does not.
    let pair = format!("[{one},{one}]");
    assert_eq!(exit.json_rpc(pair.as_bytes(), CAP).await.unwrap_err(), ExitError::Busy(4));
    held.abort();
    let _ = held.await;
    // Released on drop (abort): the pair fits now (and times out against the stalling server).
    let err = exit.json_rpc(pair.as_bytes(), CAP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
}

#[test]
fn json_rpc_settings_are_validated() {
    let build = |tune: fn(&mut JsonRpcConfig)| {
        let mut rpc = JsonRpcConfig::default();
        tune(&mut rpc);
        ExitServices::new(ExitConfig { json_rpc: Some(rpc), ..Default::default() }).err()
    };
    assert!(build(|_| {}).is_none());
    assert!(matches!(build(|r| r.gas_cap = 0), Some(ConfigError::JsonRpc(_))));
    assert!(matches!(build(|r| r.max_calls_in_flight = 0), Some(ConfigError::JsonRpc(_))));
    assert!(matches!(build(|r| r.max_batch = 65), Some(ConfigError::JsonRpc(_))));
    assert!(matches!(build(|r| r.state_block_tags = vec!["newest".into()]), Some(ConfigError::JsonRpc(_))));
    let config: ExitConfig = serde_json::from_str(
        r#"{"json_rpc":{"chain_id":31337,"gas_cap":1000,"state_overrides":true,"state_block_tags":["latest"],"historical_state":true,"max_log_addresses":1,"max_log_topics":1,"max_calls_in_flight":8}}"#,
    )
    .unwrap();
    let rpc = config.json_rpc.unwrap();
    assert_eq!((rpc.chain_id, rpc.gas_cap, rpc.max_calls_in_flight), (Some(31337), 1000, 8));
    let defaults = JsonRpcConfig::default();
    assert_eq!(
        (defaults.chain_id, defaults.gas_cap, defaults.state_overrides, defaults.historical_state),
        (None, 50_000_000, false, false)
    );
    assert_eq!(defaults.state_block_tags, ["latest", "pending", "safe", "finalized"]);
}

/// The shapes wallets and libraries send pass the typed checks (strict, not over-strict).
#[tokio::test]
async fn common_client_calls_pass() {
    let upstream = logging_upstream().await;
    let exit = exit_with(&upstream, |_| {});
    let calls = [
        ("eth_getStorageAt", format!(r#"["{ADDR}","0x0","latest"]"#)),
        ("eth_getStorageAt", format!(r#"["{ADDR}","{HASH}"]"#)),
        ("eth_feeHistory", r#"["0x5","latest",[25,75]]"#.to_owned()),
        ("eth_feeHistory", r#"[4,"0x10"]"#.to_owned()),
        ("eth_getTransactionCount", format!(r#"["{ADDR}","pending"]"#)),
        ("eth_getCode", format!(r#"["{ADDR}"]"#)),
        (
            "eth_estimateGas",
            format!(
                r#"[{{"from":"{ADDR}","to":"{ADDR}","value":"0xde0b6b3a7640000","data":"0x","input":"0x","maxFeePerGas":"0x1","maxPriorityFeePerGas":"0x1","nonce":"0x0","type":"0x2","chainId":"0x7a69","accessList":[{{"address":"{ADDR}","storageKeys":["{HASH}"]}}]}},"pending"]"#
            ),
        ),
        ("eth_call", r#"[{"to":null,"data":"0x6000"},"latest"]"#.to_owned()),
        ("eth_getBlockByNumber", r#"["latest",false]"#.to_owned()),
        ("eth_getBlockByNumber", r#"["0x0",true]"#.to_owned()),
        ("eth_getTransactionReceipt", format!(r#"["{HASH}"]"#)),
        ("eth_maxPriorityFeePerGas", "[]".to_owned()),
    ];
    for (method, params) in &calls {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        exit.json_rpc(body.as_bytes(), CAP).await.unwrap_or_else(|e| panic!("{body}: {e}"));
    }
    assert_eq!(upstream.accepted(), calls.len());
}
