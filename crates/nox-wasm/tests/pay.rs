//! The paid-transaction exports natively: the wallet's sync from `eth_getLogs` entries gives the
//! view `nox wallet` builds from the same events (and refuses logs of another contract or
//! reorganised ones), the execution hash is `nox-zk`'s, and the bundle calldata decodes with
//! `nox-relayer`'s ABI into exactly the prepared transaction's values.

use alloy_primitives::{Address, LogData, U256};
use alloy_sol_types::{SolCall, SolEvent, SolValue};
use ark_bn254::Fr;
use nox_relayer::abi;
use nox_wallet::{PoolEvent, PoolView, Seed, memo};
use nox_wasm::Module;
use nox_zk::{Tree, field};
use rand_chacha_03::ChaCha20Rng;
use rand_core_06::SeedableRng;
use serde_json::{Value, json};

alloy_sol_types::sol! {
    event Deposited(uint256 indexed queueIndex, uint256 commitment, address indexed asset, uint256 amount, bytes memo);
    event BatchInserted(uint256 indexed startLeafIndex, uint256 firstQueueIndex, uint256 count, uint256 newRoot);
}

const SEED: [u8; 32] = [0x42; 32];
const POOL: [u8; 20] = [0x44; 20];
const DEPOSITS: [u128; 2] = [1_000_000_000_000_000_000, 250_000_000_000_000_000];

fn log(address: [u8; 20], data: &LogData) -> Value {
    json!({
        "address": format!("0x{}", hex::encode(address)),
        "topics": data.topics().iter().map(|t| format!("0x{}", hex::encode(t))).collect::<Vec<_>>(),
        "data": format!("0x{}", hex::encode(&data.data)),
        "blockNumber": "0x5",
        "removed": false,
    })
}

fn u(x: &Fr) -> U256 {
    U256::from_be_bytes(field::to_be32(x))
}

/// Two deposits to the seed's wallet and their insertion: the native events and the logs.
fn events() -> (Vec<PoolEvent>, Vec<Value>) {
    let mut rng = ChaCha20Rng::from_seed([3; 32]);
    let seed = Seed::from_bytes(SEED);
    let (address, vk) = (seed.address().unwrap(), seed.viewing_key().unwrap());
    let asset = Fr::from(0u64);
    let (mut events, mut logs, mut tree) = (Vec::new(), Vec::new(), Tree::new());
    for (i, value) in DEPOSITS.into_iter().enumerate() {
        let blinding = nox_zk::note::random_scalar(&mut rng);
        let commitment = vk.commitment(value, asset, blinding).unwrap();
        let memo = memo::seal(&address, &asset, value, &blinding, &mut rng);
        let e = Deposited {
            queueIndex: U256::from(i),
            commitment: u(&commitment),
            asset: Address::ZERO,
            amount: U256::from(value),
            memo: memo.clone().into(),
        };
        logs.push(log(POOL, &e.encode_log_data()));
        events.push(PoolEvent::Deposited { queue_index: i as u64, commitment, asset, amount: value, memo });
        tree.push(commitment).unwrap();
    }
    while !tree.len().is_multiple_of(nox_wallet::state::BATCH_SIZE) {
        tree.push(Fr::from(0u64)).unwrap();
    }
    let root = tree.root();
    let e = BatchInserted {
        startLeafIndex: U256::ZERO,
        firstQueueIndex: U256::ZERO,
        count: U256::from(2),
        newRoot: u(&root),
    };
    logs.push(log(POOL, &e.encode_log_data()));
    events.push(PoolEvent::BatchInserted { start_leaf: 0, first_queue: 0, count: 2, new_root: root });
    (events, logs)
}

fn sync(module: &Module, logs: &[Value]) -> Result<Vec<u8>, nox_wasm::WasmError> {
    module.wallet_sync(&SEED, b"", serde_json::to_string(logs).unwrap().as_bytes(), &POOL, 5)
}

#[test]
fn sync_from_logs_builds_the_native_view() {
    let (events, logs) = events();
    let module = Module::new();
    let json = sync(&module, &logs).unwrap();
    let mut native = PoolView::new();
    native.apply_all(&Seed::from_bytes(SEED), &events).unwrap();
    native.last_block = 5;
    assert_eq!(json, native.to_json().unwrap(), "the same view as nox wallet's from the same events");
    let balances: Value = serde_json::from_slice(&module.wallet_balances(&json).unwrap()).unwrap();
    assert_eq!(balances["assets"][0]["spendable"], (DEPOSITS[0] + DEPOSITS[1]).to_string());
    // Another seed finds none of the notes.
    let other = module.wallet_sync(&[7; 32], b"", serde_json::to_string(&logs).unwrap().as_bytes(), &POOL, 5).unwrap();
    let balances: Value = serde_json::from_slice(&module.wallet_balances(&other).unwrap()).unwrap();
    assert_eq!(balances["assets"].as_array().map(Vec::len), Some(0), "{balances}");
}

#[test]
fn sync_refuses_logs_of_another_contract_and_reorganised_logs() {
    // A lying endpoint slips in a deposit log emitted by another contract (anyone can emit a
    // look-alike `Deposited` event): refused, not counted as a note.
    let (_, mut logs) = events();
    logs[0]["address"] = json!(format!("0x{}", hex::encode([0x55u8; 20])));
    assert_eq!(sync(&Module::new(), &logs).unwrap_err().code(), 1);
    let (_, mut logs) = events();
    logs[1]["removed"] = json!(true);
    assert_eq!(sync(&Module::new(), &logs).unwrap_err().code(), 1);
    let (_, mut logs) = events();
    logs[0]["data"] = json!("0x1234");
    assert_eq!(sync(&Module::new(), &logs).unwrap_err().code(), 1, "undecodable data");
}

#[test]
fn bundle_calldata_carries_exactly_the_prepared_transaction() {
    let (_, logs) = events();
    let mut module = Module::new();
    module.seed(&[9; 32]).unwrap();
    let view = sync(&module, &logs).unwrap();
    let target = [0x66u8; 20];
    let (fee, gas, data) = (3_000_000_000_000_000u128, 120_000u64, vec![0xde, 0xad, 0xbe, 0xef]);
    let action =
        json!({ "target": hex::encode(target), "data": hex::encode(&data), "gas": gas, "fee": fee.to_string() });
    let hash = module.pay_execution_hash(action.to_string().as_bytes()).unwrap();
    assert_eq!(hash, field::execution_hash(&target, &data, fee, gas).0.to_vec());
    let request = json!({
        "fee": fee.to_string(), "relayer": hex::encode([0x11u8; 20]), "execution_hash": hex::encode(&hash),
        "chain_id": 31337, "pool": hex::encode(POOL), "deadline": 4_000_000_000u64,
    });
    let (_, description) = module.wallet_prepare(&SEED, &view, request.to_string().as_bytes()).unwrap();
    let d: Value = serde_json::from_slice(&description).unwrap();
    let proof: Vec<u8> = (0..=255u8).collect();
    let bundle_action =
        json!({ "pool": hex::encode(POOL), "target": hex::encode(target), "data": hex::encode(&data), "gas": gas });
    let calldata = module.pay_bundle(&description, &proof, bundle_action.to_string().as_bytes()).unwrap();
    let b = abi::executeCall::abi_decode(&calldata).unwrap().bundle;
    assert_eq!(b.payment, Address::from(POOL));
    assert_eq!((b.asset, b.fee), (Address::ZERO, U256::from(fee)));
    assert_eq!((b.action.target, b.action.value, b.action.gas), (Address::from(target), U256::ZERO, U256::from(gas)));
    assert_eq!(b.action.data.to_vec(), data);
    let t = abi::Transaction::abi_decode(&b.paymentData).unwrap();
    for (i, w) in t.proof.iter().enumerate() {
        assert_eq!(w.to_be_bytes::<32>().to_vec(), proof[32 * i..32 * (i + 1)].to_vec());
    }
    let word = |v: &Value| U256::from_be_slice(&hex::decode(v.as_str().unwrap()).unwrap());
    assert_eq!(t.root, word(&d["root"]));
    assert_eq!(t.nullifiers, [word(&d["nullifiers"][0]), word(&d["nullifiers"][1])]);
    assert_eq!(t.commitments, [word(&d["commitments"][0]), word(&d["commitments"][1])]);
    assert_eq!((t.fee, t.publicIn, t.publicOut), (U256::from(fee), U256::ZERO, U256::ZERO));
    assert_eq!(t.deadline, U256::from(4_000_000_000u64));
    for i in 0..2 {
        assert_eq!(hex::encode(&t.notes[i]), d["notes"][i].as_str().unwrap());
    }
    // A proof of the wrong length, a bundle without its pool: refused.
    assert_eq!(
        module.pay_bundle(&description, &proof[..255], bundle_action.to_string().as_bytes()).unwrap_err().code(),
        1
    );
    let no_pool = json!({ "target": hex::encode(target), "gas": gas });
    assert_eq!(module.pay_bundle(&description, &proof, no_pool.to_string().as_bytes()).unwrap_err().code(), 1);
}

/// Issue 33: the browser's own data-fee figure is computed on the same bytes as `nox tx`'s.
#[test]
fn the_data_fee_sample_is_the_native_one_and_bad_input_is_refused() {
    let m = Module::new();
    let pool = Address::repeat_byte(0x5f);
    for len in [0usize, 132, 1_000] {
        let json = json!({ "pool": format!("{pool:#x}"), "action_len": len }).to_string();
        let sample = m.pay_data_fee_sample(json.as_bytes()).expect("sample");
        assert_eq!(sample, nox_relayer::price::data_fee_sample(pool, len));
    }
    for bad in [
        json!({ "pool": "0x12", "action_len": 0 }),
        json!({ "pool": format!("{pool:#x}"), "action_len": nox_wasm::MAX_SAMPLE_ACTION_LEN + 1 }),
        json!({ "pool": format!("{pool:#x}") }),
        json!({ "pool": format!("{pool:#x}"), "action_len": -1 }),
    ] {
        assert!(m.pay_data_fee_sample(bad.to_string().as_bytes()).is_err(), "{bad} accepted");
    }
}
