//! Soundness of the 2-in/2-out private-transfer statement (docs/design/zk-payment.md §9): every
//! honest shape (1→1, 1→2, 2→1, 2→2, deposit, withdrawal, fee) is satisfied; every cheat the
//! statement exists to stop has no witness; one real Groth16 round trip, bound to every input.

use crate::common::rng;
use ark_bn254::Fr;
use ark_ff::{AdditiveGroup, Field};
use nox_zk::{
    Note, SpendingKey, Tree, ZkError,
    field::address,
    groth16::{proof_from_evm, proof_to_evm},
    merkle::MerklePath,
    note::random_scalar,
    transfer::{
        self, OutputNote, SpentNote, TRANSFER_NUM_PUBLIC_INPUTS, TransferPublic, TransferRequest, TransferWitness,
        build, is_satisfied, public_amount,
    },
};

const TOKEN: [u8; 20] = [0x70; 20];

fn key(seed: u8) -> SpendingKey {
    SpendingKey::random(&mut rng(seed))
}

fn asset() -> Fr {
    address(&TOKEN)
}

/// A tree holding random leaves around the notes of `key(seed)` with `values`; returns the tree
/// and the notes with their positions.
fn world(seed: u8, values: &[u128]) -> (Tree, Vec<(Note, u64)>) {
    let mut r = rng(seed.wrapping_add(50));
    let owner = key(seed).owner().expect("owner");
    let mut tree = Tree::new();
    let mut notes = Vec::new();
    for v in values {
        tree.push(random_scalar(&mut r)).expect("push");
        let note = Note::new(*v, asset(), owner, &mut r);
        let index = tree.push(note.commitment().expect("cm")).expect("push");
        notes.push((note, index));
    }
    tree.push(random_scalar(&mut r)).expect("push");
    (tree, notes)
}

fn spent(tree: &Tree, notes: &[(Note, u64)]) -> Vec<SpentNote> {
    notes.iter().map(|(n, i)| SpentNote { note: n.clone(), path: tree.path(*i).expect("path") }).collect()
}

/// A transaction of `key(seed)` spending notes of `ins`, paying `outs[0]` to `key(seed + 1)`
/// and `outs[1]` back to itself.
pub(crate) fn tx(
    seed: u8,
    ins: &[u128],
    outs: &[u128],
    public_in: u128,
    public_out: u128,
    fee: u128,
) -> Result<(TransferPublic, TransferWitness), ZkError> {
    let (tree, notes) = world(seed, ins);
    let mut r = rng(seed.wrapping_add(99));
    let owners = [key(seed.wrapping_add(1)).owner()?, key(seed).owner()?];
    let outputs = outs
        .iter()
        .zip(owners)
        .map(|(v, o)| Ok(OutputNote::new(*v, nox_zk::poseidon::hash(&[o, random_scalar(&mut r)])?)))
        .collect::<Result<Vec<_>, ZkError>>()?;
    build(
        TransferRequest {
            sk: key(seed),
            root: tree.root(),
            inputs: spent(&tree, &notes),
            outputs,
            asset: asset(),
            public_in,
            public_out,
            fee,
            context: Fr::from(0xc0_47e7u64),
        },
        &mut r,
    )
}

fn sat(p: &TransferPublic, w: &TransferWitness) -> bool {
    is_satisfied(p, w).expect("synthesis")
}

/// (what, input values, output values, public in, public out, fee).
type Case = (&'static str, &'static [u128], &'static [u128], u128, u128, u128);

#[test]
fn every_honest_shape_is_satisfied() {
    let cases: [Case; 11] = [
        ("1→1", &[100], &[100], 0, 0, 0),
        ("1→2 (split)", &[100], &[60, 40], 0, 0, 0),
        ("2→1 (join)", &[60, 40], &[100], 0, 0, 0),
        ("2→2 (transfer with change)", &[60, 40], &[70, 30], 0, 0, 0),
        ("transfer with the relayer's fee", &[60, 40], &[70, 25], 0, 0, 5),
        ("deposit into a note (0→1)", &[], &[100], 100, 0, 0),
        ("deposit topping up a note (1→1)", &[50], &[150], 100, 0, 0),
        ("withdrawal (1→0) with fee", &[100], &[], 0, 97, 3),
        ("withdrawal with change (2→1)", &[60, 40], &[30], 0, 65, 5),
        ("at the 128-bit edge", &[u128::MAX, u128::MAX], &[u128::MAX, u128::MAX - 1], 0, 0, 1),
        ("nothing at all (2 dummies → 2 zero outputs)", &[], &[], 0, 0, 0),
    ];
    for (i, (what, ins, outs, pin, pout, fee)) in cases.into_iter().enumerate() {
        let (p, w) = tx(i as u8 * 3, ins, outs, pin, pout, fee).expect(what);
        assert_eq!(p.public_amount, public_amount(pin, pout, fee).expect("amount"), "{what}");
        assert!(sat(&p, &w), "{what}: an honest transaction must be provable");
    }
}

#[test]
fn the_public_amount_is_signed_and_bounded() {
    assert_eq!(public_amount(100, 0, 0), Some(Fr::from(100u64)), "a deposit");
    assert_eq!(public_amount(0, 97, 3), Some(-Fr::from(100u64)), "a withdrawal with its fee");
    assert_eq!(public_amount(10, 0, 3), Some(Fr::from(7u64)), "a deposit paying its own fee");
    assert_eq!(public_amount(0, u128::MAX, 0), Some(-Fr::from(u128::MAX)));
    assert_eq!(public_amount(0, u128::MAX, 1), None, "|x| ≥ 2^128 is refused, not wrapped");
}

#[test]
fn the_builder_refuses_unbalanced_or_foreign_spends() {
    assert_eq!(
        tx(1, &[100], &[60, 41], 0, 0, 0).err(),
        Some(ZkError::BadTransfer("inputs + public in ≠ outputs + public out + fee"))
    );
    assert!(tx(1, &[100], &[60, 40], 0, 0, 1).is_err(), "the fee must come out of the inputs");
    assert!(tx(1, &[100], &[], 0, 100, 1).is_err());
    assert!(tx(1, &[u128::MAX], &[u128::MAX], 0, 0, 1).is_err(), "no u128 wrap in the builder");
    // A note of another key cannot be an input.
    let (tree, notes) = world(7, &[10]);
    let err = build(
        TransferRequest {
            sk: key(8),
            root: tree.root(),
            inputs: spent(&tree, &notes),
            outputs: vec![],
            asset: asset(),
            public_in: 0,
            public_out: 10,
            fee: 0,
            context: Fr::ZERO,
        },
        &mut rng(1),
    );
    assert!(matches!(err, Err(ZkError::BadTransfer(_))));
}

/// The witness of an honest 1→2 transaction, with output 0 replaced by `value`.
fn with_output0(p: &mut TransferPublic, w: &mut TransferWitness, value: Fr) {
    w.outputs[0].value = value;
    p.commitments[0] = nox_zk::poseidon::hash(&[value, p.asset, w.outputs[0].inner]).expect("cm");
}

#[test]
fn creating_value_is_unsatisfiable_including_wrap_around() {
    // One more unit out than in.
    let (mut p, mut w) = tx(10, &[100], &[60, 40], 0, 0, 0).expect("honest");
    with_output0(&mut p, &mut w, Fr::from(61u64));
    assert!(!sat(&p, &w), "outputs > inputs");

    // Field wrap-around: output 0 = in + 1, output 1 = p − 1 (≡ −1): balanced mod p.
    let (mut p, mut w) = tx(11, &[100], &[100, 0], 0, 0, 0).expect("honest");
    with_output0(&mut p, &mut w, Fr::from(101u64));
    w.outputs[1].value = -Fr::ONE;
    p.commitments[1] = nox_zk::poseidon::hash(&[-Fr::ONE, p.asset, w.outputs[1].inner]).expect("cm");
    assert!(!sat(&p, &w), "an output of p − 1");

    // An output of exactly 2^128 from inputs of 2^128 − 1 and 1.
    let (mut p, mut w) = tx(12, &[u128::MAX, 1], &[u128::MAX, 1], 0, 0, 0).expect("honest");
    with_output0(&mut p, &mut w, Fr::from(u128::MAX) + Fr::ONE);
    w.outputs[1].value = Fr::ZERO;
    p.commitments[1] = nox_zk::poseidon::hash(&[Fr::ZERO, p.asset, w.outputs[1].inner]).expect("cm");
    assert!(!sat(&p, &w), "an output of 2^128");

    // The fee (publicAmount = −fee, as the pool computes it) claimed as a deposit: magnitude
    // p − fee with the sign bit clear.
    let (mut p, mut w) = tx(13, &[100], &[95], 0, 0, 5).expect("honest");
    assert_eq!(p.public_amount, -Fr::from(5u64));
    w.public_negative = false;
    w.public_magnitude = -Fr::from(5u64);
    with_output0(&mut p, &mut w, Fr::from(95u64));
    assert!(!sat(&p, &w), "the fee turned into a deposit by wrap-around");

    // The pool's publicAmount is for a larger fee or withdrawal than the outputs leave room for.
    let (mut p, w) = tx(14, &[100], &[95], 0, 0, 5).expect("honest");
    p.public_amount = public_amount(0, 0, 6).expect("amount");
    assert!(!sat(&p, &w), "fee 6 from a note of 100 paying 95");
    let (mut p, w) = tx(15, &[100], &[], 0, 100, 0).expect("honest");
    p.public_amount = public_amount(0, 101, 0).expect("amount");
    assert!(!sat(&p, &w), "withdrawing 101 from 100");
}

#[test]
fn someone_elses_note_cannot_be_spent() {
    // The thief knows the victim's whole note and its path; only the key differs.
    let (p, w) = tx(20, &[100], &[100], 0, 0, 0).expect("honest");
    let thief = key(200);
    let cm = w.inputs[0].note.commitment().expect("cm");
    let mut pt = p.clone();
    pt.nullifiers[0] = thief.nullifier(&cm, w.inputs[0].path.index).expect("nf");
    let inputs = [w.inputs[0].clone(), w.inputs[1].clone()];
    let stolen = TransferWitness {
        sk: thief,
        inputs,
        outputs: [w.outputs[0].clone(), w.outputs[1].clone()],
        public_magnitude: w.public_magnitude,
        public_negative: w.public_negative,
    };
    assert!(!sat(&pt, &stolen), "a spend of another key's note");
}

#[test]
fn a_dummy_input_is_free_only_at_zero_value() {
    // A zero-value input with a random path is satisfied (the dummy rule): honest case above.
    // A non-zero input with a path that does not lead to the root is not.
    let (p, mut w) = tx(30, &[100], &[100], 0, 0, 0).expect("honest");
    let mut bad = w.inputs[0].path.clone();
    bad.siblings[5] += Fr::ONE;
    w.inputs[0].path = bad;
    assert!(!sat(&p, &w), "a real input off the tree");

    // A dummy (value 0) given value 7 to mint: off the tree, so refused.
    let (mut p, mut w) = tx(31, &[], &[0], 0, 0, 0).expect("honest");
    assert!(sat(&p, &w));
    let owner = key(31).owner().expect("owner");
    let fake = Note::new(7, asset(), owner, &mut rng(5));
    let cm = fake.commitment().expect("cm");
    w.inputs[0] =
        SpentNote { note: fake, path: MerklePath { index: 3, siblings: nox_zk::merkle::zeros()[..32].to_vec() } };
    p.nullifiers[0] = key(31).nullifier(&cm, 3).expect("nf");
    with_output0(&mut p, &mut w, Fr::from(7u64));
    assert!(!sat(&p, &w), "a non-zero dummy");
}

#[test]
fn the_same_note_cannot_be_both_inputs() {
    let (tree, notes) = world(40, &[50]);
    let both = [notes[0].clone(), notes[0].clone()];
    let r = build(
        TransferRequest {
            sk: key(40),
            root: tree.root(),
            inputs: spent(&tree, &both),
            outputs: vec![OutputNote::new(100, Fr::from(1u64))],
            asset: asset(),
            public_in: 0,
            public_out: 0,
            fee: 0,
            context: Fr::ZERO,
        },
        &mut rng(2),
    );
    assert_eq!(r.err(), Some(ZkError::BadTransfer("the same note twice")));
    // Forged directly: same note twice, one nullifier twice, 2 × 50 out.
    let (mut p, mut w) = tx(40, &[50, 50], &[100], 0, 0, 0).expect("honest two notes");
    assert!(sat(&p, &w));
    w.inputs[1] = w.inputs[0].clone();
    p.nullifiers[1] = p.nullifiers[0];
    assert!(!sat(&p, &w), "one note spent as both inputs");
}

#[test]
fn constraint_count_is_what_the_docs_say() {
    let (c, _, inst) = transfer::constraint_count().expect("count");
    assert_eq!(inst, 1 + TRANSFER_NUM_PUBLIC_INPUTS);
    assert_eq!(c, TRANSFER_CONSTRAINTS, "update docs/design/zk-payment.md §9 and this constant");
}

/// docs/design/zk-payment.md §9.
const TRANSFER_CONSTRAINTS: usize = 18_406;

fn keys() -> &'static (nox_zk::groth16::ProvingKey<ark_bn254::Bn254>, nox_zk::groth16::VerifyingKey<ark_bn254::Bn254>) {
    transfer::testnet_keys().expect("setup")
}

#[test]
fn a_real_proof_verifies_and_is_bound_to_every_input() {
    let (pk, vk) = keys();
    let (p, w) = tx(50, &[60, 40], &[70, 25], 0, 0, 5).expect("honest");
    let proof = transfer::prove(pk, &p, &w, &mut rng(9)).expect("prove");
    transfer::verify(vk, &p, &proof).expect("verifies");
    let back = proof_from_evm(&proof_to_evm(&proof)).expect("decode");
    transfer::verify(vk, &p, &back).expect("verifies after the EVM encoding");
    for i in 0..TRANSFER_NUM_PUBLIC_INPUTS {
        let mut v = p.to_vec();
        v[i] += Fr::ONE;
        let changed = TransferPublic {
            root: v[0],
            nullifiers: [v[1], v[2]],
            commitments: [v[3], v[4]],
            public_amount: v[5],
            asset: v[6],
            context: v[7],
        };
        assert_eq!(transfer::verify(vk, &changed, &proof), Err(ZkError::ProofRejected), "input {i} changed");
    }
    // The prover refuses an unsatisfied witness instead of emitting a proof.
    let (mut bad, w2) = tx(51, &[100], &[100], 0, 0, 0).expect("honest");
    bad.public_amount = public_amount(0, 0, 1).expect("amount");
    assert!(transfer::prove(pk, &bad, &w2, &mut rng(9)).is_err());
}

/// The non-generic entry points callers use (compiled optimised in nox-zk, not in the caller's
/// debug crate) are the generic ones: the same proof for the same randomness, the same key back.
#[test]
fn seeded_prover_and_key_decoder_are_the_generic_ones() {
    use ark_serialize::CanonicalSerialize;
    let (pk, vk) = keys();
    let (p, w) = tx(52, &[60, 40], &[70, 25], 0, 0, 5).expect("honest");
    let seeded = transfer::prove_seeded(pk, &p, &w, [7; 32]).expect("prove");
    transfer::verify(vk, &p, &seeded).expect("verifies");
    assert_eq!(seeded, transfer::prove(pk, &p, &w, &mut rng(7)).expect("prove"), "the same randomness");
    assert_ne!(seeded, transfer::prove_seeded(pk, &p, &w, [8; 32]).expect("prove"), "fresh per seed");

    let mut bytes = Vec::new();
    pk.serialize_compressed(&mut bytes).expect("serialise");
    assert!(nox_zk::groth16::proving_key_from_compressed_unchecked(&bytes).expect("decodes") == *pk);
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(matches!(nox_zk::groth16::proving_key_from_compressed_unchecked(&trailing), Err(ZkError::Encoding(_))));
    assert!(matches!(
        nox_zk::groth16::proving_key_from_compressed_unchecked(&bytes[..bytes.len() - 1]),
        Err(ZkError::Encoding(_))
    ));
}

/// The verifier refuses inputs ≥ r on chain; the Rust side refuses them as scalars too, so the two
/// never disagree on an input.
#[test]
fn inputs_at_or_above_the_field_are_not_scalars() {
    use ark_ff::{BigInteger, PrimeField};
    let mut p = [0u8; 32];
    p.copy_from_slice(&Fr::MODULUS.to_bytes_be());
    assert_eq!(nox_zk::field::from_be32(&p), Err(ZkError::NonCanonicalScalar));
    let mut below = p;
    below[31] -= 1;
    assert_eq!(nox_zk::field::from_be32(&below), Ok(-Fr::ONE));
}

/// The key a wallet loads (a ceremony's `proving.key` or its cached testnet key) round-trips;
/// a key of another circuit, a truncated file or trailing bytes are refused; a corrupted key
/// never yields a proof (`prove_evm` checks each proof against the key's verifying key).
#[test]
fn proving_keys_load_and_a_wrong_or_corrupted_key_is_refused() {
    let (pk, _) = keys();
    let bytes = transfer::proving_key_to_bytes(pk).expect("serialise");
    let back = transfer::proving_key_from_bytes(&bytes).expect("load");
    assert!(back == *pk);
    assert!(transfer::proving_key_from_bytes(&bytes[..bytes.len() - 1]).is_err(), "truncated");
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(transfer::proving_key_from_bytes(&trailing).is_err(), "trailing bytes");
    assert!(transfer::check_shape(&crate::common::insert_keys().0).is_err(), "the insertion key");

    let (p, w) = tx(52, &[60], &[50, 10], 0, 0, 0).expect("honest");
    let proof = transfer::prove_evm(&back, &p, &w, &mut rng(9)).expect("prove");
    transfer::verify(&pk.vk, &p, &proof_from_evm(&proof).expect("decode")).expect("verifies");
    let mut corrupt = back.clone();
    corrupt.h_query[5] = corrupt.h_query[6];
    assert_eq!(transfer::prove_evm(&corrupt, &p, &w, &mut rng(9)), Err(ZkError::ProofRejected));
}

/// Measurement, not a check: writes a throwaway forge project to `$NOX_ZK_GAS_PROBE` with the
/// generated transfer verifier (8 inputs, the real key and a real proof) and verifiers of the
/// same key's shape widened to 9 and 14 inputs (the layouts of docs/design/zk-payment.md §9:
/// fee separate; every context value separate), each called like `test_gas_verifyProof`.
/// `NOX_ZK_GAS_PROBE=/tmp/probe cargo test -p nox-zk --test zk -- --ignored verifier_gas_probe`,
/// then `forge test --root /tmp/probe -vv` (docs/benchmarks/zk.md, "Private transfer").
#[test]
#[ignore]
fn verifier_gas_probe() {
    use ark_ec::{AffineRepr, CurveGroup};
    use nox_zk::solidity::{ContractDoc, verifier_contract_for};
    use std::fmt::Write;
    let Some(dir) = std::env::var_os("NOX_ZK_GAS_PROBE") else { return };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    std::fs::create_dir_all(dir.join("test")).expect("mkdir");
    let (pk, vk) = keys();
    let (p, w) = tx(50, &[60, 40], &[70, 25], 0, 0, 5).expect("honest");
    let proof = transfer::prove(pk, &p, &w, &mut rng(9)).expect("prove");
    let mut t =
        String::from("// SPDX-License-Identifier: MIT\npragma solidity 0.8.37;\nimport \"forge-std/Test.sol\";\n");
    let mut body = String::new();
    for n in [8usize, 9, 14] {
        let mut k = vk.clone();
        let g = ark_bn254::G1Affine::generator();
        while k.gamma_abc_g1.len() < n + 1 {
            let s = Fr::from(k.gamma_abc_g1.len() as u64 * 7919);
            k.gamma_abc_g1.push((g * s).into_affine());
        }
        let name = format!("Verifier{n}");
        let doc = ContractDoc {
            name: &name,
            circuit: "transfer gas probe",
            inputs: &["probe"],
            provenance: "probe",
            num_inputs: n,
        };
        std::fs::write(dir.join(format!("src/{name}.sol")), verifier_contract_for(&k, &doc).expect("sol"))
            .expect("write");
        let _ = writeln!(t, "import \"../src/{name}.sol\";");
        let _ = write!(
            body,
            "    function test_gas_{n}() public {{\n        {name} v = new {name}();\n        uint256[8] memory pr = proof();\n        uint256[{n}] memory x;\n"
        );
        let v = p.to_vec();
        for i in 0..n {
            let x = v.get(i).copied().unwrap_or(Fr::from(1_000_003u64 * (i as u64 + 1)));
            let _ = writeln!(body, "        x[{i}] = {};", crate::evm::hex(&nox_zk::field::to_be32(&x)));
        }
        let _ = write!(
            body,
            "        uint256 before = gasleft();\n        bool ok = v.verifyProof(pr, x);\n        uint256 used = before - gasleft();\n        emit log_named_uint(\"verifyProof gas, {n} inputs\", used);\n"
        );
        let _ = writeln!(body, "        assertTrue(ok == ({n} == 8));\n    }}\n");
    }
    let _ =
        write!(t, "contract Probe is Test {{\n    function proof() internal pure returns (uint256[8] memory p) {{\n");
    for (i, wd) in proof_to_evm(&proof).chunks_exact(32).enumerate() {
        let wd: [u8; 32] = wd.try_into().expect("32");
        let _ = writeln!(t, "        p[{i}] = {};", crate::evm::hex(&wd));
    }
    t.push_str("    }\n\n");
    t.push_str(&body);
    t.push_str("}\n");
    std::fs::write(dir.join("test/Probe.t.sol"), t).expect("write");
    let repo = crate::evm::repo().canonicalize().expect("repo");
    let toml = format!(
        "[profile.default]\nsrc = \"src\"\ntest = \"test\"\nout = \"out\"\noffline = true\nsolc = \"{c}/contracts/tools/solc\"\nauto_detect_solc = false\nevm_version = \"cancun\"\noptimizer = true\noptimizer_runs = 200\nbytecode_hash = \"none\"\ncbor_metadata = false\nremappings = [\"forge-std/={c}/tools/node_modules/@layerzerolabs/toolbox-foundry/lib/forge-std/\"]\n",
        c = repo.display()
    );
    std::fs::write(dir.join("foundry.toml"), toml).expect("write");
}
