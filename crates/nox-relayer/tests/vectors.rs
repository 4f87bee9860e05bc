//! docs/spec/relay.md's vectors (docs/spec/vectors/relay.json): request bodies with their
//! decoded fields, bodies a decoder must refuse, answers, and the pricing formulas. The file is
//! generated from these definitions and must match the committed one byte for byte; after an
//! intended change:
//!
//! NOX_REGENERATE_VECTORS=1 cargo test -p nox-relayer --test vectors

use alloy_primitives::{Address, B256, Bytes, U256};
use nox_relayer::abi::{Action, Bundle};
use nox_relayer::price::{FeePlan, Reserves, gas_limit, required_wei};
use nox_relayer::wire::{AssetPrice, SUBMIT_HEADER_LEN};
use nox_relayer::{Outcome, Quote, Reason, RelayRequest, Submission};
use serde_json::{Value, json};

fn submission() -> Submission {
    let bundle = Bundle {
        payment: Address::repeat_byte(0x11),
        paymentData: Bytes::from(vec![0xab; 36]),
        asset: Address::repeat_byte(0x66),
        fee: U256::from(3_000_000_000_000_000u64),
        action: Action {
            target: Address::repeat_byte(0x22),
            value: U256::ZERO,
            gas: U256::from(150_000u64),
            data: Bytes::from(vec![0x18, 0x16, 0x0d, 0xdd]),
        },
    };
    let mut s = Submission::new(31337, Address::repeat_byte(0x33), Address::repeat_byte(0x44), bundle);
    s.pay_on_revert = true;
    s
}

fn vectors() -> Value {
    let s = submission();
    let submit = RelayRequest::Submit(Box::new(s.clone())).encode();
    let mut bad_flags = submit.clone();
    bad_flags[1] = 0x04;
    let mut trailing = submit.clone();
    trailing.push(0);
    let mut selector = submit.clone();
    selector[SUBMIT_HEADER_LEN] ^= 0xff;
    let invalid: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("unknown op", vec![0x03]),
        ("quote with trailing byte", vec![0x01, 0x00]),
        ("submit header cut short", submit[..SUBMIT_HEADER_LEN - 1].to_vec()),
        ("unknown flag bit", bad_flags),
        ("calldata with a trailing byte", trailing),
        ("calldata of another function", selector),
    ];
    let plan = FeePlan::new(1_000_000_000, 1_000_000_000, 2_500);
    let reserves =
        Reserves { asset: U256::from(10u64).pow(U256::from(24u64)), weth: U256::from(10u64).pow(U256::from(21u64)) };
    let quote = Quote {
        chain_id: 31337,
        executor: Address::repeat_byte(0x33),
        relayer: Address::repeat_byte(0x44),
        pool: Address::repeat_byte(0x11),
        block: 7,
        base_fee: U256::from(plan.base_fee),
        priority_fee: U256::from(plan.priority_fee),
        max_fee_per_gas: U256::from(plan.max_fee_per_gas),
        margin_bps: 1_000,
        gas_extra_bps: 2_000,
        prices: vec![AssetPrice {
            asset: Address::ZERO,
            per_million_gas: required_wei(1_000_000, plan.max_fee_per_gas, 1_000),
        }],
        payment_gas: 500_000,
        insertion_gas: nox_relayer::price::insertion_gas(433_000, 16),
        l1_data_gas: 0,
    };
    let outcomes = vec![
        Outcome::Included {
            tx_hash: B256::repeat_byte(0x55),
            block: 9,
            gas_used: 480_000,
            gas_limit: 620_000,
            effective_gas_price: U256::from(2_000_000_000u64),
            action_success: true,
            fee: U256::from(3_000_000_000_000_000u64),
            asset: Address::ZERO,
            bumps: 0,
            prepare_ms: 41,
            inclusion_ms: 2_013,
        },
        Outcome::Refused {
            reason: Reason::Unprofitable,
            detail: "the fee is worth 1000 wei".into(),
            required_fee: Some(U256::from(1_600_000_000_000_000u64)),
        },
    ];
    json!({
        "valid": [
            { "name": "quote", "body": hex::encode(RelayRequest::Quote.encode()) },
            {
                "name": "submit, pay on revert",
                "body": hex::encode(&submit),
                "flags": 1,
                "chain_id": s.chain_id,
                "executor": s.executor,
                "relayer": s.relayer,
                "calldata": hex::encode(&s.calldata),
                "bundle": {
                    "payment": s.bundle.payment,
                    "payment_data": hex::encode(&s.bundle.paymentData),
                    "asset": s.bundle.asset,
                    "fee": s.bundle.fee,
                    "target": s.bundle.action.target,
                    "value": s.bundle.action.value,
                    "gas": s.bundle.action.gas,
                    "data": hex::encode(&s.bundle.action.data),
                },
            },
        ],
        "invalid": invalid.iter().map(|(name, body)| json!({ "name": name, "body": hex::encode(body) })).collect::<Vec<_>>(),
        "quote": quote,
        "outcomes": outcomes,
        "pricing": {
            "fee_plan": { "next_base_fee": 1_000_000_000u64, "priority_fee": 1_000_000_000u64, "headroom_bps": 2_500, "max_fee_per_gas": plan.max_fee_per_gas as u64 },
            "gas_limit": [[63_000, 0, 0, gas_limit(63_000, 0, 0)], [420_000, 150_000, 2_000, gas_limit(420_000, 150_000, 2_000)]],
            "required_wei": { "gas_limit": 620_000, "max_fee_per_gas": plan.max_fee_per_gas as u64, "margin_bps": 1_000, "wei": required_wei(620_000, plan.max_fee_per_gas, 1_000) },
            "token": { "reserve_asset": reserves.asset, "reserve_weth": reserves.weth, "sell": U256::from(10u64).pow(U256::from(21u64)), "value_wei": reserves.value_in_wei(U256::from(10u64).pow(U256::from(21u64))), "wei": U256::from(10u64).pow(U256::from(15u64)), "asset_needed": reserves.asset_for_wei(U256::from(10u64).pow(U256::from(15u64))) },
        },
    })
}

#[test]
fn committed_vectors_match() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/relay.json");
    let text = serde_json::to_string_pretty(&vectors()).expect("json") + "\n";
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &text).expect("writes the vector file");
    }
    assert_eq!(
        std::fs::read_to_string(&path).expect("vector file exists (NOX_REGENERATE_VECTORS=1 writes it)"),
        text,
        "docs/spec/vectors/relay.json differs from the definitions"
    );
}

#[test]
fn committed_vectors_decode() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/relay.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("vector file")).expect("json");
    let unhex = |x: &Value| hex::decode(x.as_str().expect("hex")).expect("hex");
    for case in v["valid"].as_array().expect("valid") {
        let body = unhex(&case["body"]);
        let decoded = RelayRequest::decode(&body).expect("a valid vector decodes");
        assert_eq!(decoded.encode(), body, "{}", case["name"]);
        if let RelayRequest::Submit(s) = decoded {
            assert_eq!(s.calldata, unhex(&case["calldata"]));
            assert_eq!(s.chain_id, case["chain_id"].as_u64().expect("chain id"));
            assert!(s.pay_on_revert && !s.simulate_only);
        }
    }
    for case in v["invalid"].as_array().expect("invalid") {
        assert!(RelayRequest::decode(&unhex(&case["body"])).is_err(), "invalid vector {} accepted", case["name"]);
    }
    let quote: Quote = serde_json::from_value(v["quote"].clone()).expect("quote");
    assert_eq!(quote.fee_for(Address::ZERO, 1_000_000), Some(quote.prices[0].per_million_gas));
    let outcomes: Vec<Outcome> = serde_json::from_value(v["outcomes"].clone()).expect("outcomes");
    assert_eq!(outcomes.len(), 2);
}
