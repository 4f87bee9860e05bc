//! No input panics: arbitrary URLs, methods, headers and JSON-RPC bodies give a result or a
//! typed error. No network is reached: names do not resolve and the upstream port is closed.

mod common;

use std::sync::Arc;

use common::ScriptedResolver;
use nox_exit::{ExitConfig, ExitServices, HttpRequest, JsonRpcConfig, decode_transaction};
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

    /// Any bytes, and any one-byte corruption or truncation of a real transaction (the EIP-155
    /// example), decode to a result or a typed error; what is accepted rejects a trailing byte.
    #[test]
    fn raw_transactions_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        at in any::<prop::sample::Index>(),
        byte: u8,
        cut in any::<prop::sample::Index>(),
    ) {
        let _ = decode_transaction(&bytes, 1);
        let mut tx = EIP155_EXAMPLE.to_vec();
        let i = at.index(tx.len());
        tx[i] = byte;
        if decode_transaction(&tx, 1).is_ok() {
            tx.push(0);
            prop_assert!(decode_transaction(&tx, 1).is_err());
        }
        let cut = cut.index(EIP155_EXAMPLE.len());
        prop_assert!(decode_transaction(&EIP155_EXAMPLE[..cut], 1).is_err());
    }
}

/// The signed example transaction of EIP-155 (chain 1).
const EIP155_EXAMPLE: &[u8] = &[
    0xf8, 0x6c, 0x09, 0x85, 0x04, 0xa8, 0x17, 0xc8, 0x00, 0x82, 0x52, 0x08, 0x94, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35,
    0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x35, 0x88, 0x0d, 0xe0, 0xb6, 0xb3,
    0xa7, 0x64, 0x00, 0x00, 0x80, 0x25, 0xa0, 0x28, 0xef, 0x61, 0x34, 0x0b, 0xd9, 0x39, 0xbc, 0x21, 0x95, 0xfe, 0x53,
    0x75, 0x67, 0x86, 0x60, 0x03, 0xe1, 0xa1, 0x5d, 0x3c, 0x71, 0xff, 0x63, 0xe1, 0x59, 0x06, 0x20, 0xaa, 0x63, 0x62,
    0x76, 0xa0, 0x67, 0xcb, 0xe9, 0xd8, 0x99, 0x7f, 0x76, 0x1a, 0xec, 0xb7, 0x03, 0x30, 0x4b, 0x38, 0x00, 0xcc, 0xf5,
    0x55, 0xc9, 0xf3, 0xdc, 0x64, 0x21, 0x4b, 0x29, 0x7f, 0xb1, 0x96, 0x6a, 0x3b, 0x6d, 0x83,
];

#[test]
fn the_example_transaction_is_valid() {
    assert!(decode_transaction(EIP155_EXAMPLE, 1).is_ok());
}
