//! The JSON-RPC forwarder against a canned upstream on loopback.

mod common;

use std::time::Duration;

use common::{canned, response};
use nox_exit::{ConfigError, ErrorKind, ExitConfig, ExitError, ExitServices, JsonRpcConfig};

const CAP: usize = 64 * 1024;
const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#;

fn exit_for(upstream: &str) -> ExitServices {
    let rpc = JsonRpcConfig { upstream: upstream.into(), timeout: Duration::from_secs(5), ..Default::default() };
    ExitServices::new(ExitConfig { json_rpc: Some(rpc), ..Default::default() }).unwrap()
}

fn call(method: &str, params: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#).into_bytes()
}

#[tokio::test]
async fn allowed_method_is_forwarded_in_canonical_form() {
    // Loopback upstream with an empty allow-list: the operator's upstream bypasses the filter.
    let upstream = canned(response("200 OK", &[("Content-Type", "application/json")], ANSWER)).await;
    let exit = exit_for(&upstream.url("/rpc"));
    let sent = br#" { "params" : [ ], "method":"eth_chainId" ,"id": 1, "jsonrpc":"2.0" } "#;
    assert_eq!(exit.json_rpc(sent, CAP).await.unwrap(), ANSWER);
    let body = call("eth_chainId", "[]");
    let seen = upstream.request(0);
    let lower = seen.to_ascii_lowercase();
    assert!(lower.starts_with("post /rpc http/1.1\r\n"), "{seen}");
    assert!(lower.contains("content-type: application/json\r\n"), "{seen}");
    assert!(seen.ends_with(std::str::from_utf8(&body).unwrap()), "{seen}");
}

#[tokio::test]
async fn forbidden_methods_are_refused_by_name() {
    let upstream = canned(response("200 OK", &[], ANSWER)).await;
    let exit = exit_for(&upstream.url("/"));
    for method in
        ["personal_sendTransaction", "eth_sendTransaction", "admin_addPeer", "debug_traceTransaction", "eth_sign"]
    {
        let err = exit.json_rpc(&call(method, "[]"), CAP).await.unwrap_err();
        assert_eq!(err, ExitError::Forbidden(format!("JSON-RPC method {method} is not allowed")));
    }
    // One bad call poisons the whole batch.
    let batch = format!(
        "[{},{}]",
        String::from_utf8(call("eth_chainId", "[]")).unwrap(),
        String::from_utf8(call("admin_peers", "[]")).unwrap()
    );
    assert_eq!(exit.json_rpc(batch.as_bytes(), CAP).await.unwrap_err().kind(), ErrorKind::Forbidden);
    assert_eq!(upstream.accepted(), 0);
}

#[tokio::test]
async fn batches_are_bounded() {
    // The upstream answers each of the 16 calls (all id 1), as the answer check requires.
    let answers = format!("[{}]", vec![std::str::from_utf8(ANSWER).unwrap(); 16].join(","));
    let upstream = canned(response("200 OK", &[], answers.as_bytes())).await;
    let exit = exit_for(&upstream.url("/"));
    let one = String::from_utf8(call("eth_blockNumber", "[]")).unwrap();
    let batch = |n: usize| format!("[{}]", vec![one.as_str(); n].join(","));
    assert_eq!(exit.json_rpc(batch(16).as_bytes(), CAP).await.unwrap(), answers.as_bytes());
    let err = exit.json_rpc(batch(17).as_bytes(), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::RequestTooLarge("batch of 17 requests exceeds the limit of 16".into()));
    assert_eq!(exit.json_rpc(b"[]", CAP).await.unwrap_err().kind(), ErrorKind::BadRequest);
    assert_eq!(upstream.accepted(), 1);
}

#[tokio::test]
async fn malformed_json_rpc_is_a_bad_request() {
    let exit = exit_for("http://127.0.0.1:9/");
    for body in [&b"{not json"[..], b"42", br#"{"method":7}"#, br#"[1]"#, b"", &[0xff, 0xfe]] {
        assert_eq!(exit.json_rpc(body, CAP).await.unwrap_err().kind(), ErrorKind::BadRequest, "{body:?}");
    }
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(exit.json_rpc(deep.as_bytes(), CAP).await.unwrap_err().kind(), ErrorKind::BadRequest);
}

#[tokio::test]
async fn get_logs_needs_a_bounded_numeric_range() {
    let upstream = canned(response("200 OK", &[], ANSWER)).await;
    let exit = exit_for(&upstream.url("/"));
    let logs = |filter: &str| call("eth_getLogs", &format!("[{filter}]"));
    let ok = [
        r#"{"fromBlock":"0x0","toBlock":"0x3e7"}"#, // exactly 1000 blocks
        r#"{"fromBlock":"0x10","toBlock":"0x10","address":"0x00000000000000000000000000000000000000aa"}"#,
        r#"{"blockHash":"0x00000000000000000000000000000000000000000000000000000000000000bb"}"#,
    ];
    for filter in ok {
        assert_eq!(exit.json_rpc(&logs(filter), CAP).await.unwrap(), ANSWER, "{filter}");
    }
    let refused = [
        (r#"{"fromBlock":"0x0","toBlock":"0x3e8"}"#, "range of 1001 blocks exceeds the limit of 1000"),
        (r#"{"fromBlock":"0x0","toBlock":"latest"}"#, "numeric fromBlock and toBlock"),
        (r#"{"fromBlock":"earliest","toBlock":"0x10"}"#, "numeric fromBlock and toBlock"),
        (r#"{"toBlock":"0x10"}"#, "numeric fromBlock and toBlock"),
        (r#"{}"#, "numeric fromBlock and toBlock"),
        (r#"{"fromBlock":"0x20","toBlock":"0x10"}"#, "is before fromBlock"),
        (r#"{"fromBlock":"0x+1","toBlock":"0x10"}"#, "not hex"),
        (r#"{"fromBlock":"0x0","toBlock":"0xffffffffffffffff"}"#, "exceeds the limit"),
        (r#"{"blockHash":"0xabc","fromBlock":"0x1"}"#, "blockHash excludes"),
        (r#"{"blockHash":"0xabc"}"#, "blockHash must be 32 bytes"),
    ];
    for (filter, expected) in refused {
        let err = exit.json_rpc(&logs(filter), CAP).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{filter}: {err}");
        assert!(err.to_string().contains(expected), "{filter}: {err}");
    }
    let err = exit.json_rpc(&call("eth_getLogs", "[]"), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::BadRequest("eth_getLogs takes one filter object".into()));
    assert_eq!(upstream.accepted(), ok.len());
}

#[tokio::test]
async fn raw_transaction_parameter_shape_is_validated() {
    let upstream = canned(response("200 OK", &[], ANSWER)).await;
    let exit = exit_for(&upstream.url("/"));
    let send = |params: &str| call("eth_sendRawTransaction", params);
    // Without a configured chain id nothing is relayed.
    let err = exit.json_rpc(&send(r#"["0x02f8ab"]"#), CAP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    assert!(err.to_string().contains("no chain id configured"), "{err}");
    let refused = [
        (r#"["0x"]"#, "empty transaction"),
        (r#"["0x123"]"#, "odd number of hex digits"),
        (r#"["02f8"]"#, "must start with 0x"),
        (r#"["0xzz"]"#, "not hex"),
        (r#"["0x00","0x00"]"#, "exactly one hex string"),
        (r#"[1]"#, "exactly one hex string"),
        (r#"{}"#, "params must be an array"),
    ];
    for (params, expected) in refused {
        let err = exit.json_rpc(&send(params), CAP).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{params}: {err}");
        assert!(err.to_string().contains(expected), "{params}: {err}");
    }
    let huge = format!(r#"["0x{}"]"#, "00".repeat(128 * 1024 + 1));
    let err = exit.json_rpc(&send(&huge), CAP).await.unwrap_err();
    assert_eq!(
        err,
        ExitError::RequestTooLarge("raw transaction of 131073 bytes exceeds the limit of 131072 bytes".into())
    );
    assert_eq!(upstream.accepted(), 0);
}

#[tokio::test]
async fn upstream_failures_are_upstream_errors() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let exit = exit_for(&format!("http://127.0.0.1:{port}/"));
    let err = exit.json_rpc(&call("eth_chainId", "[]"), CAP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upstream);
    assert_eq!(err.to_string(), "upstream error: JSON-RPC upstream unavailable: could not connect: connection refused");

    let failing = canned(response("502 Bad Gateway", &[], b"")).await;
    let err = exit_for(&failing.url("/")).json_rpc(&call("eth_chainId", "[]"), CAP).await.unwrap_err();
    assert_eq!(err, ExitError::Upstream("JSON-RPC upstream unavailable: HTTP status 502".into()));

    let big = canned(response("200 OK", &[], &[b' '; 4096])).await;
    let err = exit_for(&big.url("/")).json_rpc(&call("eth_chainId", "[]"), 1024).await.unwrap_err();
    assert_eq!(err, ExitError::ResponseTooLarge(1024));
}

#[tokio::test]
async fn json_rpc_is_unsupported_unless_configured() {
    let exit = ExitServices::new(ExitConfig::default()).unwrap();
    let err = exit.json_rpc(&call("eth_chainId", "[]"), CAP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert_eq!(exit.echo(b"ping".to_vec()).await, b"ping");
}

#[test]
fn config_is_validated_and_deserialized_with_defaults() {
    let rpc = |upstream: &str| ExitConfig {
        json_rpc: Some(JsonRpcConfig { upstream: upstream.into(), ..Default::default() }),
        ..Default::default()
    };
    assert!(matches!(ExitServices::new(rpc("ftp://node:8545")), Err(ConfigError::Upstream(_))));
    assert!(matches!(ExitServices::new(rpc("node:8545")), Err(ConfigError::Upstream(_))));
    let zero = ExitConfig { max_concurrent: 0, ..Default::default() };
    assert_eq!(ExitServices::new(zero).err(), Some(ConfigError::Concurrency(0)));
    let huge = ExitConfig { max_concurrent: usize::MAX, ..Default::default() };
    assert_eq!(ExitServices::new(huge).err(), Some(ConfigError::Concurrency(usize::MAX)));
    let mut forever = ExitConfig::default();
    forever.http.timeout = Duration::from_millis(u64::MAX);
    assert_eq!(ExitServices::new(forever).err(), Some(ConfigError::Timeout("http")));

    let json = r#"{"http":{"allow":["127.0.0.0/8","::1/128"],"timeout_ms":250},"json_rpc":{"upstream":"http://10.1.2.3:8545","max_batch":4}}"#;
    let config: ExitConfig = serde_json::from_str(json).unwrap();
    assert_eq!(config.http.allow.len(), 2);
    assert_eq!(config.http.timeout, Duration::from_millis(250));
    assert_eq!((config.http.max_redirects, config.http.max_response_bytes, config.max_concurrent), (3, 1 << 20, 64));
    let rpc = config.json_rpc.unwrap();
    assert_eq!((rpc.max_batch, rpc.max_log_block_range, rpc.methods.len()), (4, 1000, 19));
    assert!(serde_json::from_str::<ExitConfig>(r#"{"htp":{}}"#).is_err(), "unknown fields are refused");
    assert!(serde_json::from_str::<ExitConfig>(r#"{"http":{"allow":["not-a-net"]}}"#).is_err());
}

#[test]
fn error_kinds_keep_their_wire_numbers() {
    let kinds = [
        ErrorKind::BadRequest,
        ErrorKind::Forbidden,
        ErrorKind::Timeout,
        ErrorKind::TooLarge,
        ErrorKind::Upstream,
        ErrorKind::Busy,
        ErrorKind::Unsupported,
    ];
    assert_eq!(kinds.map(|k| k as u8), [1, 2, 3, 4, 5, 6, 7]);
}
