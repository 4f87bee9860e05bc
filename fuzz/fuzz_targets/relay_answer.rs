//! Parses arbitrary bytes as a relayer's answer (docs/spec/relay.md §3) the way a client does:
//! a quote or an outcome, JSON from an exit the client does not trust. Must never panic;
//! whatever parses serialises and parses back to the same value, and pricing any gas from a
//! parsed quote (what `nox-pay` does before proving) does not panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_relayer::{Outcome, Quote};

fuzz_target!(|data: &[u8]| {
    if let Ok(quote) = serde_json::from_slice::<Quote>(data) {
        let again: Quote = serde_json::from_slice(&serde_json::to_vec(&quote).unwrap()).unwrap();
        assert_eq!(again, quote);
        for price in &quote.prices {
            for gas in [0, 1, 50_000, u64::MAX] {
                let _ = quote.fee_for_action(price.asset, gas);
            }
        }
    }
    if let Ok(outcome) = serde_json::from_slice::<Outcome>(data) {
        let again: Outcome = serde_json::from_slice(&serde_json::to_vec(&outcome).unwrap()).unwrap();
        assert_eq!(again, outcome);
    }
});
