//! The transfer verifier generated from the testnet transfer key
//! (`contracts/src/zk/TransferVerifier.sol`), and the shielded pool's private-transaction
//! scenario (`contracts/test/zk/TransferVectors.sol`): real deposits, batch insertions and 2-in/2-out
//! transactions (split, paid transfer, paid withdrawal, deposit through `publicIn`, and a
//! received note spent by its new owner) with their context values and note bytes, proved with
//! the testnet keys. Deterministic (fixed keys, blindings and prover randomness), so the files are
//! checked byte for byte; `NOX_ZK_WRITE=1` rewrites them.

use crate::common::{insert_keys, rng};
use crate::evm::{check_or_write, hex};
use ark_bn254::Fr;
use nox_zk::{
    Note, SpendingKey, Tree,
    field::{address, execution_hash, to_be32},
    groth16::proof_to_evm,
    insert,
    merkle::zeros,
    solidity::transfer_verifier,
    transfer::{self, OutputNote, SpentNote, TransferContext, TransferPublic, TransferRequest, notes_hash},
};
use rand_core::RngCore;
use std::fmt::Write;

pub const TRANSFER_VERIFIER: &str = "contracts/src/zk/TransferVerifier.sol";
pub const TRANSFER_PROVENANCE: &str = "TESTNET ARTIFACT: keys from `nox_zk::transfer::testnet_setup()`, whose randomness is public; anyone can forge proofs for it. Never deploy it with value.";

#[test]
fn committed_transfer_verifier_matches_the_testnet_key() {
    let (_, vk) = transfer::testnet_keys().expect("setup");
    check_or_write(TRANSFER_VERIFIER, &transfer_verifier(vk, TRANSFER_PROVENANCE).expect("8 inputs"));
}

fn addr(low: u32) -> [u8; 20] {
    let mut a = [0u8; 20];
    a[16..].copy_from_slice(&low.to_be_bytes());
    a
}

const CHAIN_ID: u64 = 31337;
const POOL: u32 = 0x10001;
const RELAYER: u32 = 0x10002;
const RECIPIENT: u32 = 0x10004;
const TOKEN: u32 = 0x10005;
const DEADLINE: u64 = 4_102_444_800;
const DEPOSIT: u128 = 1_000_000_000_000_000_000;
const PAY_FEE: u128 = 1_000_000_000_000_000;
/// Length of every note ciphertext in the vectors: `nox_wallet::memo::NOTE_LEN` (104), so the
/// measured gas is a real transaction's (random bytes: the pool only bounds the length and binds
/// the bytes through the context).
const NOTE_LEN: usize = 104;

fn sender() -> SpendingKey {
    SpendingKey::from_wide_bytes(&[0x42; 64])
}

fn receiver() -> SpendingKey {
    SpendingKey::from_wide_bytes(&[0x43; 64])
}

fn bytes_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
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
    fn uint(&mut self, name: &str, x: u128) {
        self.line("uint256", name, &x.to_string());
    }
    fn addr(&mut self, name: &str, a: &[u8; 20]) {
        let v = if *a == [0u8; 20] {
            "address(0)".to_string()
        } else {
            format!("address(0x{:x})", u128::from_be_bytes(a[4..].try_into().expect("16")))
        };
        self.line("address", name, &v);
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
    fn notes(&mut self, name: &str, tag: &str) {
        let _ = write!(
            self.0,
            "\n    function {name}() internal pure returns (bytes[2] memory n) {{\n        n[0] = {tag}_NOTE0;\n        n[1] = {tag}_NOTE1;\n    }}\n"
        );
    }
}

/// `SPLIT_X` → `splitX` style function names.
fn camel(tag: &str) -> String {
    let mut name = String::new();
    for (i, part) in tag.to_lowercase().split('_').enumerate() {
        if i == 0 {
            name.push_str(part);
        } else {
            name.push_str(&part[..1].to_uppercase());
            name.push_str(&part[1..]);
        }
    }
    name
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

/// One private transaction of the scenario.
struct Tx<'a> {
    tag: &'a str,
    key: SpendingKey,
    tree: &'a Tree,
    /// Notes spent, with their leaves.
    inputs: &'a [(&'a Note, u64)],
    /// Notes made (each to its owner; padded by the builder with a zero note to `key`).
    outputs: &'a [&'a Note],
    asset: Fr,
    public_in: u128,
    public_out: u128,
    fee: u128,
    relayer: [u8; 20],
    execution_hash: [u8; 32],
    recipient: [u8; 20],
    seed: u8,
}

/// Proves `tx`, writes its constants and returns its public inputs.
fn transact(out: &mut Out, tx: Tx<'_>) -> TransferPublic {
    let mut r = rng(tx.seed);
    let note = |r: &mut rand_chacha::ChaCha20Rng| {
        let mut b = vec![0u8; NOTE_LEN];
        r.fill_bytes(&mut b);
        b
    };
    let notes = [note(&mut r), note(&mut r)];
    let ctx = TransferContext {
        public_in: tx.public_in,
        public_out: tx.public_out,
        fee: tx.fee,
        relayer: tx.relayer,
        execution_hash: tx.execution_hash,
        recipient: tx.recipient,
        chain_id: CHAIN_ID,
        pool: addr(POOL),
        deadline: DEADLINE,
        notes_hash: notes_hash(&notes[0], &notes[1]),
    };
    let (public, witness) = transfer::build(
        TransferRequest {
            sk: tx.key,
            root: tx.tree.root(),
            inputs: tx
                .inputs
                .iter()
                .map(|(n, i)| SpentNote { note: (*n).clone(), path: tx.tree.path(*i).expect("path") })
                .collect(),
            outputs: tx.outputs.iter().map(|n| OutputNote::new(n.value, n.inner().expect("inner"))).collect(),
            asset: tx.asset,
            public_in: tx.public_in,
            public_out: tx.public_out,
            fee: tx.fee,
            context: ctx.hash(),
        },
        &mut r,
    )
    .expect("balanced");
    let (pk, vk) = transfer::testnet_keys().expect("setup");
    let proof = transfer::prove(pk, &public, &witness, &mut r).expect("prove");
    transfer::verify(vk, &public, &proof).expect("verifies");

    let t = tx.tag;
    let _ = writeln!(out.0, "\n    // {t}");
    let asset = if tx.asset == Fr::from(0u64) { [0u8; 20] } else { addr(TOKEN) };
    out.addr(&format!("{t}_ASSET"), &asset);
    out.uint(&format!("{t}_PUBLIC_IN"), tx.public_in);
    out.uint(&format!("{t}_PUBLIC_OUT"), tx.public_out);
    out.uint(&format!("{t}_FEE"), tx.fee);
    out.addr(&format!("{t}_RELAYER"), &tx.relayer);
    out.raw(&format!("{t}_ACTION_HASH"), &tx.execution_hash);
    out.addr(&format!("{t}_RECIPIENT"), &tx.recipient);
    out.raw(&format!("{t}_NOTES_HASH"), &ctx.notes_hash);
    out.konst(&format!("{t}_CONTEXT"), &public.context);
    out.konst(&format!("{t}_NULLIFIER0"), &public.nullifiers[0]);
    out.konst(&format!("{t}_NULLIFIER1"), &public.nullifiers[1]);
    out.konst(&format!("{t}_COMMITMENT0"), &public.commitments[0]);
    out.konst(&format!("{t}_COMMITMENT1"), &public.commitments[1]);
    out.line("bytes", &format!("{t}_NOTE0"), &format!("hex\"{}\"", bytes_hex(&notes[0])));
    out.line("bytes", &format!("{t}_NOTE1"), &format!("hex\"{}\"", bytes_hex(&notes[1])));
    let name = camel(t);
    out.notes(&format!("{name}Notes"), t);
    out.proof(&format!("{name}Proof"), &proof);
    out.array(&format!("{name}Inputs"), &public.to_evm());
    public
}

#[test]
fn committed_transfer_vectors_match() {
    let mut out = Out(format!(
        "// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice GENERATED by crates/nox-zk/tests/zk/transfer_vectors.rs; do not edit. The shielded
/// pool's private transactions with real proofs under the testnet keys (docs/design/zk-payment.md
/// §9). Deposits (no proof) NOTE0, NOTE1, NOTE2 (DEPOSIT of TOKEN each) and NOTE3 (DEPOSIT of ETH),
/// queue 0..3, all owned by OWNER; INSERT1 inserts them (leaves 0..3). Then, all at INSERT1_ROOT:
/// SPLIT (direct `transact`, actionHash 0): NOTE0 -> SPLIT_COMMITMENT0 (4e17 to RECEIVER_OWNER) +
/// change; TRANSFER (`pay` by RELAYER, PAY_ACTION_HASH, fee PAY_FEE): NOTE1 + NOTE2 -> 1.5e18 to
/// RECEIVER_OWNER + change; WITHDRAW (`pay` by RELAYER, PAY_ACTION_HASH): NOTE3 -> 5e17 of ETH to
/// RECIPIENT, fee PAY_FEE, change + a zero note; DEPOSIT_IN (direct `transact`, msg.value
/// DEPOSIT): no input -> DEPOSIT of ETH to OWNER + a zero note. INSERT2 inserts their eight
/// commitments in that order (queue 4..11, leaves 32..39: the second batch of BATCH_SIZE = 32). RECEIVED (direct `transact`, at
/// INSERT2_ROOT): RECEIVER spends SPLIT_COMMITMENT0 and TRANSFER_COMMITMENT0 (leaves 32, 34) ->
/// 1e18 of TOKEN to RECIPIENT + 9e17 to itself. PAY_ACTION_HASH is the executor's actionHash of a
/// payment-only bundle (action {{target: 0, value: 0, gas: 0, data: \"\"}}, fee PAY_FEE). Each X has
/// xProof(), xInputs() (the verifier's inputs: root, nullifiers, commitments, publicAmount, asset,
/// context), xNotes() and the context values X_*. The pool must be deployed at POOL on chain
/// CHAIN_ID.
library TransferVectors {{
    uint256 internal constant CHAIN_ID = {CHAIN_ID};
    address internal constant POOL = address(0x{POOL:x});
    address internal constant RELAYER = address(0x{RELAYER:x});
    address internal constant RECIPIENT = address(0x{RECIPIENT:x});
    address internal constant TOKEN = address(0x{TOKEN:x});
    uint256 internal constant DEPOSIT = 1e18;
    uint256 internal constant PAY_FEE = 1e15;
    uint256 internal constant DEADLINE = {DEADLINE};
    uint256 internal constant NOTE_LEN = {NOTE_LEN};
",
    ));
    let (owner, receiver_owner) = (sender().owner().expect("owner"), receiver().owner().expect("owner"));
    let mut r = rng(0x60);
    let token = address(&addr(TOKEN));
    let eth = Fr::from(0u64);
    let deposits = [
        Note::new(DEPOSIT, token, owner, &mut r),
        Note::new(DEPOSIT, token, owner, &mut r),
        Note::new(DEPOSIT, token, owner, &mut r),
        Note::new(DEPOSIT, eth, owner, &mut r),
    ];
    out.konst("EMPTY_ROOT", &zeros()[nox_zk::TREE_DEPTH]);
    out.konst("OWNER", &owner);
    out.konst("RECEIVER_OWNER", &receiver_owner);
    for (i, n) in deposits.iter().enumerate() {
        out.konst(&format!("INNER{i}"), &n.inner().expect("inner"));
        out.konst(&format!("CM{i}"), &n.commitment().expect("cm"));
    }
    let mut tree = Tree::new();
    let cms: Vec<Fr> = deposits.iter().map(|n| n.commitment().expect("cm")).collect();
    insert_batch(&mut out, "INSERT1", &mut tree, &cms, 1);
    let after1 = tree.clone();

    let (pay_hash, _) = execution_hash(&[0u8; 20], &[], PAY_FEE, 0);
    out.raw("PAY_ACTION_HASH", &pay_hash);
    let none = [0u8; 20];

    let to_receiver_split = Note::new(400_000_000_000_000_000, token, receiver_owner, &mut r);
    let split_change = Note::new(DEPOSIT - to_receiver_split.value, token, owner, &mut r);
    let split = transact(
        &mut out,
        Tx {
            tag: "SPLIT",
            key: sender(),
            tree: &after1,
            inputs: &[(&deposits[0], 0)],
            outputs: &[&to_receiver_split, &split_change],
            asset: token,
            public_in: 0,
            public_out: 0,
            fee: 0,
            relayer: none,
            execution_hash: [0u8; 32],
            recipient: none,
            seed: 2,
        },
    );

    let to_receiver_transfer = Note::new(1_500_000_000_000_000_000, token, receiver_owner, &mut r);
    let transfer_change = Note::new(2 * DEPOSIT - to_receiver_transfer.value - PAY_FEE, token, owner, &mut r);
    let paid = transact(
        &mut out,
        Tx {
            tag: "TRANSFER",
            key: sender(),
            tree: &after1,
            inputs: &[(&deposits[1], 1), (&deposits[2], 2)],
            outputs: &[&to_receiver_transfer, &transfer_change],
            asset: token,
            public_in: 0,
            public_out: 0,
            fee: PAY_FEE,
            relayer: addr(RELAYER),
            execution_hash: pay_hash,
            recipient: none,
            seed: 3,
        },
    );

    let withdrawn = 500_000_000_000_000_000;
    let withdraw_change = Note::new(DEPOSIT - withdrawn - PAY_FEE, eth, owner, &mut r);
    let withdraw = transact(
        &mut out,
        Tx {
            tag: "WITHDRAW",
            key: sender(),
            tree: &after1,
            inputs: &[(&deposits[3], 3)],
            outputs: &[&withdraw_change],
            asset: eth,
            public_in: 0,
            public_out: withdrawn,
            fee: PAY_FEE,
            relayer: addr(RELAYER),
            execution_hash: pay_hash,
            recipient: addr(RECIPIENT),
            seed: 4,
        },
    );

    let deposited = Note::new(DEPOSIT, eth, owner, &mut r);
    let deposit_in = transact(
        &mut out,
        Tx {
            tag: "DEPOSIT_IN",
            key: sender(),
            tree: &after1,
            inputs: &[],
            outputs: &[&deposited],
            asset: eth,
            public_in: DEPOSIT,
            public_out: 0,
            fee: 0,
            relayer: none,
            execution_hash: [0u8; 32],
            recipient: none,
            seed: 5,
        },
    );

    let queued: Vec<Fr> = [&split, &paid, &withdraw, &deposit_in].iter().flat_map(|p| p.commitments).collect();
    insert_batch(&mut out, "INSERT2", &mut tree, &queued, 6);
    // The second batch starts at leaf BATCH_SIZE (the first batch's slots are all taken).
    const BATCH: u64 = nox_zk::insert::BATCH_SIZE as u64;
    let received_change = Note::new(900_000_000_000_000_000, token, receiver_owner, &mut r);
    let _ = transact(
        &mut out,
        Tx {
            tag: "RECEIVED",
            key: receiver(),
            tree: &tree,
            inputs: &[(&to_receiver_split, BATCH), (&to_receiver_transfer, BATCH + 2)],
            outputs: &[&received_change],
            asset: token,
            public_in: 0,
            public_out: DEPOSIT,
            fee: 0,
            relayer: none,
            execution_hash: [0u8; 32],
            recipient: addr(RECIPIENT),
            seed: 7,
        },
    );
    out.0.push_str("}\n");
    check_or_write("contracts/test/zk/TransferVectors.sol", &out.0);
}
