//! No input panics: arbitrary URLs, methods, headers and JSON-RPC bodies give a result or a
//! typed error. No network is reached: names do not resolve and the upstream port is closed.

mod common;

use std::sync::Arc;

use common::ScriptedResolver;
use nox_exit::{ExitConfig, ExitServices, HttpRequest, JsonRpcConfig};
use proptest::prelude::*;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn exit() -> ExitServices {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let rpc = JsonRpcConfig { upstream: format!("http://127.0.0.1:{closed}/"), ..Default::default() };
    let config = ExitConfig { json_rpc: Some(rpc), ..Default::default() };
    ExitServices::with_resolver(config, Arc::new(ScriptedResolver::default())).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn http_never_panics(
        method in "(GET|POST|HEAD|CONNECT|[A-Za-z]{0,8}|.{0,4})",
        url in "(https?://)?[ -~]{0,40}|.{0,60}",
        headers in proptest::collection::vec(("[ -~]{0,12}", ".{0,12}"), 0..4),
        body in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let exit = exit();
        let request = HttpRequest { method, url, headers, body };
        let result = runtime().block_on(exit.http(request, 1024));
        // Nothing here resolves or is global-and-reachable, so every request fails cleanly.
        prop_assert!(result.is_err());
    }

    #[test]
    fn json_rpc_never_panics(body in proptest::collection::vec(any::<u8>(), 0..256), method in "[a-z_A-Z]{1,24}") {
        let exit = exit();
        let rt = runtime();
        prop_assert!(rt.block_on(exit.json_rpc(&body, 1024)).is_err());
        let call = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":[{}]}}"#, String::from_utf8_lossy(&body));
        prop_assert!(rt.block_on(exit.json_rpc(call.as_bytes(), 1024)).is_err());
    }
}
