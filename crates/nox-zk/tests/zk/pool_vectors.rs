//! The insertion verifier generated from the testnet insertion key, and the shielded pool's
//! scenario vectors (`contracts/test/zk/PoolVectors.sol`): real deposits, batch insertions and
//! spends with the fixed addresses the forge tests deploy at, proved with both testnet keys.
//! Deterministic (fixed keys, blindings and prover randomness), so the files are checked byte
//! for byte; `NOX_ZK_WRITE=1` rewrites them.

use crate::common::*;
use crate::evm::{check_or_write, hex};
use ark_bn254::Fr;
use ark_ff::{Field, PrimeField};
use nox_zk::{
    Note, PublicInputs, SpendingKey, Tree, Witness,
    field::{address, execution_hash, to_be32},
    groth16::{self, inputs_to_evm, proof_to_evm},
    insert,
    merkle::zeros,
    note::change_note,
};
use std::fmt::Write;

pub const INSERT_VERIFIER: &str = "contracts/src/zk/InsertVerifier.sol";
pub const INSERT_PROVENANCE: &str = "TESTNET ARTIFACT: keys from `nox_zk::insert::testnet_setup()`, whose randomness is public; anyone can forge proofs for it. Never deploy it with value.";

#[test]
fn committed_insert_verifier_matches_the_testnet_key() {
    let (_, vk) = insert_keys();
    let sol = nox_zk::solidity::insert_verifier(vk, INSERT_PROVENANCE).expect("19 inputs");
    check_or_write(INSERT_VERIFIER, &sol);
}

fn addr(low: u32) -> [u8; 20] {
    let mut a = [0u8; 20];
    a[16..].copy_from_slice(&low.to_be_bytes());
    a
}

const CHAIN_ID: u64 = 31337;
const DEADLINE: u64 = 4_102_444_800;
const DEPOSIT: u128 = 1_000_000_000_000_000_000;
const PAY_FEE: u128 = 1_000_000_000_000_000;
const WITHDRAW_AMOUNT: u128 = 500_000_000_000_000_000;
const ACTION_DATA: [u8; 4] = [0xd0, 0x9d, 0xe0, 0x8a];
/// The gas the PAY action is bound to (`Action.gas`; PoolVectors.ACTION_GAS).
const ACTION_GAS: u64 = 100_000;
const SK_BYTES: [u8; 64] = [0x42; 64];

fn sk() -> SpendingKey {
    SpendingKey::from_wide_bytes(&SK_BYTES)
}

struct Out(String);

impl Out {
    /// A constant, wrapped as `forge fmt` wraps lines over 120 columns.
    fn line(&mut self, ty: &str, name: &str, value: &str) {
        let one = format!("    {ty} internal constant {name} = {value};");
        if one.len() <= 120 {
            let _ = writeln!(self.0, "{one}");
        } else {
            let _ = writeln!(self.0, "    {ty} internal constant {name} =\n        {value};");
        }
    }
    fn konst(&mut self, name: &str, x: &Fr) {
        self.line("uint256", name, &hex(&to_be32(x)));
    }
    fn raw(&mut self, name: &str, x: &[u8; 32]) {
        self.line("bytes32", name, &hex(x));
    }
    fn array(&mut self, name: &str, words: &[[u8; 32]]) {
        let _ =
            write!(self.0, "\n    function {name}() internal pure returns (uint256[{}] memory x) {{\n", words.len());
        for (i, w) in words.iter().enumerate() {
            let _ = writeln!(self.0, "        x[{i}] = {};", hex(w));
        }
        self.0.push_str("    }\n");
    }
    fn proof(&mut self, name: &str, proof: &ark_groth16::Proof<ark_bn254::Bn254>) {
        let bytes = proof_to_evm(proof);
        let words: Vec<[u8; 32]> = bytes.chunks_exact(32).map(|w| w.try_into().expect("32")).collect();
        self.array(name, &words);
    }
}

struct Spent {
    public: PublicInputs,
    change: Note,
}

/// Spends `note` at `leaf` of `tree` for `amount`, to `recipient_input`, bound to `action`.
#[allow(clippy::too_many_arguments)] // one row of the scenario: clearer than a struct here
fn spend(
    out: &mut Out,
    tag: &str,
    tree: &Tree,
    note: &Note,
    leaf: u64,
    amount: u128,
    recipient_input: Fr,
    action: Fr,
    seed: u8,
) -> Spent {
    let key = sk();
    let cm = note.commitment().expect("cm");
    let nullifier = key.nullifier(&cm, leaf).expect("nf");
    let change = change_note(&key, &nullifier, note.value - amount, note.asset).expect("change");
    let public = PublicInputs {
        root: tree.root(),
        nullifier,
        change_commitment: change.commitment().expect("cm"),
        fee: Fr::from(amount),
        asset: note.asset,
        relayer: recipient_input,
        execution_hash: action,
        chain_id: Fr::from(CHAIN_ID),
        pool: address(&addr(0x10001)),
        deadline: Fr::from(DEADLINE),
    };
    let witness = Witness {
        sk: key,
        note: note.clone(),
        path: tree.path(leaf).expect("path"),
        change_inner: change.inner().expect("inner"),
        change: note.value - amount,
    };
    let proof = groth16::prove(&keys().0, &public, &witness, &mut rng(seed)).expect("prove");
    groth16::verify(&keys().1, &public, &proof).expect("verifies");
    out.konst(&format!("{tag}_NULLIFIER"), &public.nullifier);
    out.konst(&format!("{tag}_CHANGE"), &public.change_commitment);
    let mut name = String::new();
    for (i, part) in tag.to_lowercase().split('_').enumerate() {
        if i == 0 {
            name.push_str(part);
        } else {
            name.push_str(&part[..1].to_uppercase());
            name.push_str(&part[1..]);
        }
    }
    out.proof(&format!("{name}Proof"), &proof);
    out.array(&format!("{name}Inputs"), &inputs_to_evm(&public));
    Spent { public, change }
}

fn insert_batch(out: &mut Out, tag: &str, tree: &mut Tree, leaves: &[Fr], seed: u8) {
    let (public, witness) = tree.insert_batch(leaves).expect("batch");
    let proof = insert::prove(&insert_keys().0, &public, &witness, &mut rng(seed)).expect("prove");
    insert::verify(&insert_keys().1, &public, &proof).expect("verifies");
    out.konst(&format!("{tag}_ROOT"), &public.new_root);
    let name = tag.to_lowercase();
    out.proof(&format!("{name}Proof"), &proof);
    out.array(&format!("{name}Inputs"), &public.to_evm());
}

#[test]
fn committed_pool_vectors_match() {
    let mut out = Out(String::from(
        "// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice GENERATED by crates/nox-zk/tests/zk/pool_vectors.rs; do not edit. The shielded pool's
/// scenario with real proofs under the testnet keys (docs/design/zk-payment.md §8): deposits
/// NOTE0 (TOKEN) and NOTE1 (ETH), INSERT1, PAY (NOTE0 pays PAY_FEE to RELAYER for
/// ACTION_DATA on TARGET), WITHDRAW (NOTE1 sends WITHDRAW_AMOUNT to RECIPIENT), WITHDRAW_BOUND
/// (the same, bound to BOUND_ACTION_HASH), INSERT2 (the two changes), PAY2 (PAY's change pays
/// again); EXTRA is another second batch, after INSERT1, holding NOTE2 (TOKEN) alone; FULL is
/// a first batch of 16 deposits of 1 wei of ETH with inner = 1..16. The pool must be deployed at
/// POOL on chain CHAIN_ID.
library PoolVectors {
    uint256 internal constant CHAIN_ID = 31337;
    address internal constant POOL = address(0x10001);
    address internal constant RELAYER = address(0x10002);
    address internal constant TARGET = address(0x10003);
    address internal constant RECIPIENT = address(0x10004);
    address internal constant TOKEN = address(0x10005);
    bytes internal constant ACTION_DATA = hex\"d09de08a\";
    uint256 internal constant ACTION_GAS = 100000;
    uint256 internal constant DEPOSIT = 1e18;
    uint256 internal constant PAY_FEE = 1e15;
    uint256 internal constant WITHDRAW_AMOUNT = 5e17;
    uint256 internal constant DEADLINE = 4102444800;
",
    ));
    let key = sk();
    let owner = key.owner().expect("owner");
    let mut r = rng(0x50);
    let token = address(&addr(0x10005));
    let note0 = Note::new(DEPOSIT, token, owner, &mut r);
    let note1 = Note::new(DEPOSIT, Fr::from(0u64), owner, &mut r);
    let note2 = Note::new(DEPOSIT, token, owner, &mut r);
    out.konst("EMPTY_ROOT", &zeros()[nox_zk::TREE_DEPTH]);
    out.konst("OWNER", &owner);
    out.konst("INNER0", &note0.inner().expect("inner"));
    out.konst("CM0", &note0.commitment().expect("cm"));
    out.konst("INNER1", &note1.inner().expect("inner"));
    out.konst("CM1", &note1.commitment().expect("cm"));
    out.konst("INNER2", &note2.inner().expect("inner"));
    out.konst("CM2", &note2.commitment().expect("cm"));

    let mut tree = Tree::new();
    insert_batch(
        &mut out,
        "INSERT1",
        &mut tree,
        &[note0.commitment().expect("cm"), note1.commitment().expect("cm")],
        1,
    );
    let after1 = tree.clone();
    // An alternative second batch (NOTE2 alone), to move the root on without spending.
    let mut extra = after1.clone();
    insert_batch(&mut out, "EXTRA", &mut extra, &[note2.commitment().expect("cm")], 7);

    let (pay_raw, pay_field) = execution_hash(&addr(0x10003), &ACTION_DATA, PAY_FEE, ACTION_GAS);
    out.raw("PAY_ACTION_HASH", &pay_raw);
    let relayer = address(&addr(0x10002));
    let pay = spend(&mut out, "PAY", &after1, &note0, 0, PAY_FEE, relayer, pay_field, 2);

    let recipient = Fr::from(2u64).pow([160u64]) + address(&addr(0x10004));
    let withdraw = spend(&mut out, "WITHDRAW", &after1, &note1, 1, WITHDRAW_AMOUNT, recipient, Fr::from(0u64), 3);
    let bound: [u8; 32] = {
        use sha3::{Digest, Keccak256};
        Keccak256::digest(b"adaptor action").into()
    };
    out.raw("BOUND_ACTION_HASH", &bound);
    let _ = spend(
        &mut out,
        "WITHDRAW_BOUND",
        &after1,
        &note1,
        1,
        WITHDRAW_AMOUNT,
        recipient,
        Fr::from_be_bytes_mod_order(&bound),
        4,
    );

    insert_batch(&mut out, "INSERT2", &mut tree, &[pay.public.change_commitment, withdraw.public.change_commitment], 5);
    assert_eq!(tree.path(16).expect("path").root(pay.change.commitment().expect("cm")).expect("root"), tree.root());
    let _ = spend(&mut out, "PAY2", &tree, &pay.change, 16, PAY_FEE, relayer, pay_field, 6);

    // A full batch into an empty pool: 16 deposits of 1 wei of ETH with inner = 1..=16 (the gas
    // of insertion is measured on a full batch).
    let full: Vec<Fr> =
        (1..=16u64).map(|i| nox_zk::note::commitment(1, Fr::from(0u64), Fr::from(i)).expect("cm")).collect();
    insert_batch(&mut out, "FULL", &mut Tree::new(), &full, 8);
    out.0.push_str("}\n");
    check_or_write("contracts/test/zk/PoolVectors.sol", &out.0);
}
