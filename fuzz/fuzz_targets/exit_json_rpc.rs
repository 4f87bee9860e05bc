//! Feeds arbitrary bytes to the exit's JSON-RPC check (crates/nox-exit). Must never panic;
//! whatever it accepts, it forwards as a canonical body that is itself accepted unchanged (a
//! fixed point: no parser can read it differently from the check).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_exit::{JsonRpcConfig, canonical_json_rpc};

fuzz_target!(|data: &[u8]| {
    let mut config = JsonRpcConfig { chain_id: Some(1), state_overrides: true, ..JsonRpcConfig::default() };
    config.methods.push("custom_method".into());
    if let Ok(canonical) = canonical_json_rpc(&config, data) {
        let again = canonical_json_rpc(&config, &canonical).expect("the canonical body is accepted");
        assert_eq!(again, canonical, "the canonical body is a fixed point");
    }
});
