//! The private-transfer statement (issue 30; docs/design/zk-payment.md §9): one 2-in/2-out
//! join-split for every private operation — transfer, split (1→2), join (2→1), withdrawal,
//! deposit into a note, and the relayer's fee — in one proof.
//!
//! Public inputs, in the verifier's order ([`TransferPublic::to_vec`]):
//! `root, nullifier₁, nullifier₂, commitment₁, commitment₂, publicAmount, asset, context`.
//! Private: `sk`; for each input its `value`, `blinding` and Merkle path; for each output its
//! `value` and `inner = Poseidon(owner, blinding)`. The circuit enforces
//!
//! 1. `owner = Poseidon(sk)`; each input `cmᵢ = Poseidon(valueᵢ, asset, Poseidon(owner,
//!    blindingᵢ))` — both inputs belong to the one spending key (the ownership rule);
//! 2. membership: `(rootᵢ − root) · valueᵢ = 0`, with `rootᵢ` the root reached from `cmᵢ` along
//!    its path. A zero-value input is a *dummy* whose path is not checked (Tornado Nova's rule); a
//!    non-zero input must be in the tree;
//! 3. `nullifierᵢ = Poseidon(sk, cmᵢ, indexᵢ)` with `indexᵢ` the 32 path bits, for real and dummy
//!    inputs alike (a dummy's nullifier is as random as a real one), and `nullifier₁ ≠ nullifier₂`
//!    (one inverse: the same note cannot be both inputs);
//! 4. each output `commitmentⱼ = Poseidon(valueⱼ, asset, innerⱼ)` — any owner, same asset;
//! 5. conservation over the integers: `publicAmount = ±m` with `m < 2^128` (a sign bit and 128
//!    bits), every `valueᵢ`, `valueⱼ < 2^128`, and `value₁ + value₂ + publicAmount = out₁ + out₂`.
//!    With every term below 2^128 both sides stay below 2^130 ≪ r, so the equation holds over the
//!    integers: no field wrap-around. The contract computes `publicAmount` itself as
//!    `publicIn − publicOut − fee` (each a `uint128`; refused unless `|·| < 2^128`), mapped to
//!    `r − |x|` when negative, so the integer statement the pool relies on is
//!    `in₁ + in₂ + publicIn = out₁ + out₂ + publicOut + fee`;
//! 6. `context` enters one constraint (`context²`) so it is bound (its verifying-key point is not
//!    free). The contract computes it as `keccak256(abi.encode(…)) mod r` over everything else the
//!    transaction acts on — publicIn, publicOut, fee, relayer, execution hash, withdrawal
//!    recipient, chain id, pool, deadline and the hash of the two output-note ciphertexts
//!    ([`TransferContext`]) — so a proof made for any other value of any of them does not verify.
//!
//! The prover synthesises the witness once ([`prove`]): the constraint matrices are built once
//! per proving key, the witness is checked against them before proving (an unsatisfied witness is
//! refused, no proof is made), and the same matrices feed the QAP reduction.

use crate::{
    VALUE_BITS,
    error::ZkError,
    merkle::{MerklePath, TREE_DEPTH, zeros},
    note::{Note, SpendingKey, random_scalar},
    poseidon::{self, hash_gadget},
};
use ark_bn254::{Bn254, Fr};
use ark_ff::UniformRand;
use ark_groth16::{Groth16, Proof, ProvingKey, VerifyingKey};
use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{FieldVar, fp::FpVar},
    select::CondSelectGadget,
};
use ark_relations::{
    gr1cs::{
        ConstraintSynthesizer, ConstraintSystem, ConstraintSystemRef, OptimizationGoal, R1CS_PREDICATE_LABEL,
        SynthesisError, SynthesisMode,
    },
    utils::matrix::Matrix,
};
use ark_snark::SNARK;
use rand_core::{CryptoRng, RngCore, SeedableRng};
use std::time::Duration;
#[cfg(not(target_arch = "wasm32"))]
use std::time::Instant;

/// `wasm32-unknown-unknown` has no clock (`std::time::Instant::now` panics there): in the
/// WebAssembly prover ([`prove_timed`]'s stage times read zero; the host measures the call).
#[cfg(target_arch = "wasm32")]
struct Instant;

#[cfg(target_arch = "wasm32")]
impl Instant {
    fn now() -> Self {
        Instant
    }

    fn elapsed(&self) -> Duration {
        Duration::ZERO
    }
}

/// Inputs (notes spent) per transaction.
pub const INS: usize = 2;
/// Outputs (notes created) per transaction.
pub const OUTS: usize = 2;
/// Number of public inputs.
pub const TRANSFER_NUM_PUBLIC_INPUTS: usize = 4 + INS + OUTS;

/// The seed label of the testnet transfer setup. **Testnet artifact**: its randomness is public,
/// so anyone can forge proofs for its verifying key; a deployment with value uses keys from the
/// ceremony (`nox zk setup`, docs/spec/ceremony.md).
pub const TESTNET_TRANSFER_SETUP_LABEL: &[u8; 32] = b"NOX testnet transfer 2x2 setup 1";

/// The public inputs of one private transaction, each as the pool computes or checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferPublic {
    /// A root in the pool's window of recent roots.
    pub root: Fr,
    /// The inputs' nullifiers (the pool refuses a seen one, and two equal ones).
    pub nullifiers: [Fr; INS],
    /// The output commitments, queued for insertion.
    pub commitments: [Fr; OUTS],
    /// `publicIn − publicOut − fee` as a field element (`r − |x|` when negative), computed by
    /// the pool.
    pub public_amount: Fr,
    /// The asset (`uint160` of the token address, 0 for ETH).
    pub asset: Fr,
    /// [`TransferContext::hash`]: `keccak256(abi.encode(publicIn, publicOut, fee, relayer,
    /// executionHash, recipient, chainId, pool, deadline, notesHash)) mod r`, computed by the pool
    /// from the transaction it executes.
    pub context: Fr,
}

impl TransferPublic {
    /// The inputs in the verifier's order.
    pub fn to_vec(&self) -> Vec<Fr> {
        let mut v = Vec::with_capacity(TRANSFER_NUM_PUBLIC_INPUTS);
        v.push(self.root);
        v.extend_from_slice(&self.nullifiers);
        v.extend_from_slice(&self.commitments);
        v.extend([self.public_amount, self.asset, self.context]);
        v
    }

    /// The inputs as EVM words (`uint256[8]`).
    pub fn to_evm(&self) -> [[u8; 32]; TRANSFER_NUM_PUBLIC_INPUTS] {
        let mut out = [[0u8; 32]; TRANSFER_NUM_PUBLIC_INPUTS];
        for (o, x) in out.iter_mut().zip(self.to_vec()) {
            *o = crate::field::to_be32(&x);
        }
        out
    }
}

/// `keccak256(abi.encode(keccak256(n0), keccak256(n1)))`: the hash of the two output-note
/// ciphertexts that [`TransferContext`] binds, exactly as `ShieldedPool._context` computes it. A
/// relayer that swaps or alters either ciphertext changes the context, so the proof fails on chain.
pub fn notes_hash(n0: &[u8], n1: &[u8]) -> [u8; 32] {
    use sha3::{Digest, Keccak256};
    let mut h = Keccak256::new();
    h.update(Keccak256::digest(n0));
    h.update(Keccak256::digest(n1));
    h.finalize().into()
}

/// Everything a private transaction acts on besides its notes' values: the proof binds it through
/// the `context` public input (docs/design/zk-payment.md §9). The pool recomputes it from the
/// transaction it executes (`ShieldedPool._context`), so a proof made for any other value of any
/// field does not verify.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TransferContext {
    /// Value entering the pool (a direct `transact` only; 0 in `pay`).
    pub public_in: u128,
    /// Value leaving the pool to `recipient`.
    pub public_out: u128,
    /// The relayer's fee (`pay` only; 0 in a direct `transact`).
    pub fee: u128,
    /// The bundle's submitter in `pay`; the zero address in a direct `transact`.
    pub relayer: [u8; 20],
    /// The raw `actionHash` (the executor's in `pay`; the argument of a direct `transact`, zero
    /// for a plain transaction).
    pub execution_hash: [u8; 32],
    /// The receiver of `public_out`; the zero address iff `public_out == 0`.
    pub recipient: [u8; 20],
    /// The chain id.
    pub chain_id: u64,
    /// The pool's address.
    pub pool: [u8; 20],
    /// The last block timestamp at which the pool accepts the transaction.
    pub deadline: u64,
    /// [`notes_hash`] of the two output ciphertexts.
    pub notes_hash: [u8; 32],
}

impl TransferContext {
    /// `abi.encode(uint256 publicIn, uint256 publicOut, uint256 fee, address relayer, bytes32
    /// executionHash, address recipient, uint256 chainId, address pool, uint256 deadline,
    /// bytes32 notesHash)`: ten 32-byte words.
    pub fn abi_encode(&self) -> [u8; 320] {
        let mut out = [0u8; 320];
        let uint = |x: u128| {
            let mut w = [0u8; 32];
            w[16..].copy_from_slice(&x.to_be_bytes());
            w
        };
        let addr = |a: &[u8; 20]| {
            let mut w = [0u8; 32];
            w[12..].copy_from_slice(a);
            w
        };
        let words = [
            uint(self.public_in),
            uint(self.public_out),
            uint(self.fee),
            addr(&self.relayer),
            self.execution_hash,
            addr(&self.recipient),
            uint(u128::from(self.chain_id)),
            addr(&self.pool),
            uint(u128::from(self.deadline)),
            self.notes_hash,
        ];
        for (chunk, w) in out.chunks_exact_mut(32).zip(words) {
            chunk.copy_from_slice(&w);
        }
        out
    }

    /// The `context` public input: `uint256(keccak256(abi_encode())) % r`.
    pub fn hash(&self) -> Fr {
        use ark_ff::PrimeField;
        use sha3::{Digest, Keccak256};
        Fr::from_be_bytes_mod_order(&Keccak256::digest(self.abi_encode()))
    }
}

/// `publicIn − publicOut − fee` as the field element the pool feeds the verifier: `x` if
/// non-negative, `r − |x|` if negative. `None` if `|x| ≥ 2^128` (the pool refuses it).
pub fn public_amount(public_in: u128, public_out: u128, fee: u128) -> Option<Fr> {
    let debit = public_out.checked_add(fee)?;
    if public_in >= debit { Some(Fr::from(public_in - debit)) } else { Some(-Fr::from(debit - public_in)) }
}

/// One input of the witness: a note and its path (any path for a zero-value dummy).
#[derive(Clone, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct SpentNote {
    /// The note (its `owner` must be the witness key's owner tag).
    pub note: Note,
    /// Its path under `root` (for a dummy, anything of the right length).
    pub path: MerklePath,
}

/// One output of the witness.
#[derive(Clone, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct OutputNote {
    /// Its value: a field element so that a test can try what a cheating prover would (an
    /// honest one is below 2^128, [`OutputNote::new`]).
    pub value: Fr,
    /// `Poseidon(owner, blinding)` of the receiving note.
    pub inner: Fr,
}

impl OutputNote {
    /// An output of `value` to the note owner and blinding whose `Poseidon(owner, blinding)` is
    /// `inner`.
    pub fn new(value: u128, inner: Fr) -> Self {
        OutputNote { value: Fr::from(value), inner }
    }
}

/// The private witness: zeroized on drop.
#[derive(zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct TransferWitness {
    /// The spending key owning both inputs.
    pub sk: SpendingKey,
    /// The two inputs (zero-value dummies where fewer are spent).
    pub inputs: [SpentNote; INS],
    /// The two outputs (zero-value where fewer are made).
    pub outputs: [OutputNote; OUTS],
    /// `|publicAmount|`, below 2^128 for an honest prover (a field element, as for outputs).
    pub public_magnitude: Fr,
    /// Whether `publicAmount` is negative (value leaves the notes: withdrawal and/or fee).
    pub public_negative: bool,
}

/// The 2-in/2-out transfer circuit. With `witness == None` it only shapes the system (setup).
/// `DEPTH` is the tree depth the paths are checked to: [`TREE_DEPTH`] for the pool; other depths
/// exist only to measure what the depth costs (docs/design/zk-payment.md §9).
pub struct TransferCircuit<'a, const DEPTH: usize = TREE_DEPTH> {
    /// Public inputs (any values for setup).
    pub public: TransferPublic,
    /// The witness, `None` for setup.
    pub witness: Option<&'a TransferWitness>,
}

impl TransferCircuit<'static> {
    /// The circuit for key generation and for the constraint matrices: zero inputs, no witness.
    pub fn blank() -> Self {
        TransferCircuit::<'static, TREE_DEPTH>::blank_at_depth()
    }
}

impl<const DEPTH: usize> TransferCircuit<'static, DEPTH> {
    /// [`TransferCircuit::blank`] with paths of `DEPTH` levels (measurements only).
    pub fn blank_at_depth() -> Self {
        let z = Fr::from(0u64);
        TransferCircuit {
            public: TransferPublic {
                root: z,
                nullifiers: [z; INS],
                commitments: [z; OUTS],
                public_amount: z,
                asset: z,
                context: z,
            },
            witness: None,
        }
    }
}

fn missing() -> SynthesisError {
    SynthesisError::AssignmentMissing
}

/// The low 128 bits of a scalar: the prover's bit witnesses. If `x ≥ 2^128` no assignment of the
/// bits recomposes to it and the statement is unsatisfiable.
fn low128(x: &Fr) -> u128 {
    let b = crate::field::to_be32(x);
    let mut low = [0u8; 16];
    low.copy_from_slice(&b[16..]);
    u128::from_be_bytes(low)
}

/// `x < 2^bits` by `bits` boolean witnesses that recompose to `x`.
fn range_check(
    cs: &ConstraintSystemRef<Fr>,
    x: &FpVar<Fr>,
    native: Option<u128>,
    bits: usize,
) -> Result<(), SynthesisError> {
    let mut vars = Vec::with_capacity(bits);
    for i in 0..bits {
        vars.push(Boolean::new_witness(cs.clone(), || {
            let v = native.ok_or_else(missing)?;
            Ok(i < 128 && (v >> i) & 1 == 1)
        })?);
    }
    Boolean::le_bits_to_fp(&vars)?.enforce_equal(x)
}

impl<const DEPTH: usize> ConstraintSynthesizer<Fr> for TransferCircuit<'_, DEPTH> {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        crate::quiet(|| self.synthesize(cs))
    }
}

impl<const DEPTH: usize> TransferCircuit<'_, DEPTH> {
    fn synthesize(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let w = self.witness;
        let p = &self.public;
        let bits = VALUE_BITS as usize;
        let input = |v: Fr| FpVar::new_input(cs.clone(), || Ok(v));
        let root = input(p.root)?;
        let nullifiers = [input(p.nullifiers[0])?, input(p.nullifiers[1])?];
        let commitments = [input(p.commitments[0])?, input(p.commitments[1])?];
        let public_amount = input(p.public_amount)?;
        let asset = input(p.asset)?;
        let context = input(p.context)?;

        let sk = FpVar::new_witness(cs.clone(), || w.map(|w| w.sk.scalar()).ok_or_else(missing))?;
        // 1. One owner for both inputs.
        let owner = hash_gadget(std::slice::from_ref(&sk))?;

        let mut total_in = FpVar::zero();
        let mut nf_vars = Vec::with_capacity(INS);
        for (i, nullifier) in nullifiers.iter().enumerate() {
            let inp = w.map(|w| &w.inputs[i]);
            let value = FpVar::new_witness(cs.clone(), || inp.map(|s| Fr::from(s.note.value)).ok_or_else(missing))?;
            let blinding = FpVar::new_witness(cs.clone(), || inp.map(|s| s.note.blinding).ok_or_else(missing))?;
            range_check(&cs, &value, inp.map(|s| s.note.value), bits)?;
            let inner = hash_gadget(&[owner.clone(), blinding])?;
            let cm = hash_gadget(&[value.clone(), asset.clone(), inner])?;

            // 2. Membership, unless the input is a zero-value dummy.
            let mut index_bits = Vec::with_capacity(DEPTH);
            let mut cur = cm.clone();
            for lvl in 0..DEPTH {
                let bit = Boolean::new_witness(cs.clone(), || {
                    inp.map(|s| (s.path.index >> lvl) & 1 == 1).ok_or_else(missing)
                })?;
                let sib = FpVar::new_witness(cs.clone(), || {
                    inp.and_then(|s| s.path.siblings.get(lvl).copied()).ok_or_else(missing)
                })?;
                // One select per level: left = bit ? sib : cur, right = cur + sib − left.
                let left = FpVar::conditionally_select(&bit, &sib, &cur)?;
                let right = &cur + &sib - &left;
                cur = hash_gadget(&[left, right])?;
                index_bits.push(bit);
            }
            ((cur - &root) * &value).enforce_equal(&FpVar::zero())?;
            let index = Boolean::le_bits_to_fp(&index_bits)?;

            // 3. The nullifier, for dummies too.
            let nf = hash_gadget(&[sk.clone(), cm, index])?;
            nf.enforce_equal(nullifier)?;
            nf_vars.push(nf);
            total_in += &value;
        }
        // 3. nullifier₁ ≠ nullifier₂: (nf₁ − nf₂) has an inverse.
        if let [a, b] = nf_vars.as_slice() {
            a.enforce_not_equal(b)?;
        }

        // 4. Outputs: any owner, the transaction's asset.
        let mut total_out = FpVar::zero();
        for (j, commitment) in commitments.iter().enumerate() {
            let out = w.map(|w| &w.outputs[j]);
            let value = FpVar::new_witness(cs.clone(), || out.map(|o| o.value).ok_or_else(missing))?;
            let inner = FpVar::new_witness(cs.clone(), || out.map(|o| o.inner).ok_or_else(missing))?;
            range_check(&cs, &value, out.map(|o| low128(&o.value)), bits)?;
            hash_gadget(&[value.clone(), asset.clone(), inner])?.enforce_equal(commitment)?;
            total_out += &value;
        }

        // 5. publicAmount = ±m, m < 2^128: (2·neg) · m = m − publicAmount.
        let neg = Boolean::new_witness(cs.clone(), || w.map(|w| w.public_negative).ok_or_else(missing))?;
        let magnitude = FpVar::new_witness(cs.clone(), || w.map(|w| w.public_magnitude).ok_or_else(missing))?;
        range_check(&cs, &magnitude, w.map(|w| low128(&w.public_magnitude)), bits)?;
        let neg_fp: FpVar<Fr> = neg.into();
        (neg_fp.double()? * &magnitude).enforce_equal(&(&magnitude - &public_amount))?;
        (total_in + &public_amount).enforce_equal(&total_out)?;

        // 6. Bind the context.
        let _ = context.square()?;
        Ok(())
    }
}

/// What a wallet spends and makes in one transaction, before the witness is built.
pub struct TransferRequest {
    /// The spending key of the inputs (moved into the witness, which zeroizes it).
    pub sk: SpendingKey,
    /// The current root the paths lead to.
    pub root: Fr,
    /// 0 to 2 real inputs (each with its path under `root`).
    pub inputs: Vec<SpentNote>,
    /// 0 to 2 real outputs.
    pub outputs: Vec<OutputNote>,
    /// The asset.
    pub asset: Fr,
    /// Value entering the pool with the transaction (a deposit into the outputs).
    pub public_in: u128,
    /// Value leaving the pool to the withdrawal recipient.
    pub public_out: u128,
    /// The relayer's fee.
    pub fee: u128,
    /// The context hash the pool will compute (docs/design/zk-payment.md §9).
    pub context: Fr,
}

/// Builds the public inputs and witness of a transaction, padding with zero-value dummy inputs
/// (random blinding, so a fresh random nullifier) and zero-value outputs owned by the sender.
/// Refuses what no proof could show: more than two inputs or outputs, an input not owned by `sk`
/// or of another asset, a real input whose path does not lead to `root`, and an unbalanced
/// transaction (`in₁ + in₂ + publicIn ≠ out₁ + out₂ + publicOut + fee`).
pub fn build<R: RngCore + CryptoRng>(
    req: TransferRequest,
    rng: &mut R,
) -> Result<(TransferPublic, TransferWitness), ZkError> {
    if req.inputs.len() > INS || req.outputs.len() > OUTS {
        return Err(ZkError::BadTransfer("at most two inputs and two outputs"));
    }
    let owner = req.sk.owner()?;
    let mut inputs = req.inputs;
    for s in &inputs {
        if s.note.owner != owner {
            return Err(ZkError::BadTransfer("an input is not owned by the spending key"));
        }
        if s.note.asset != req.asset {
            return Err(ZkError::BadTransfer("an input is of another asset"));
        }
        if s.path.root(s.note.commitment()?)? != req.root {
            return Err(ZkError::BadPath("an input's path does not lead to the root"));
        }
    }
    while inputs.len() < INS {
        let note = Note::new(0, req.asset, owner, rng);
        let path = MerklePath { index: rng.next_u64() >> (64 - TREE_DEPTH), siblings: zeros()[..TREE_DEPTH].to_vec() };
        inputs.push(SpentNote { note, path });
    }
    let mut outputs = req.outputs;
    while outputs.len() < OUTS {
        outputs.push(OutputNote::new(0, poseidon::hash(&[owner, random_scalar(rng)])?));
    }
    // Every term is below 2^128 and there are at most five per side, so the sums (in the field)
    // stay below 2^131 < r: equal in the field means equal over the integers.
    let mut credit = Fr::from(req.public_in);
    for s in &inputs {
        credit += Fr::from(s.note.value);
    }
    let mut debit = Fr::from(req.public_out) + Fr::from(req.fee);
    for o in &outputs {
        if o.value != Fr::from(low128(&o.value)) {
            return Err(ZkError::ValueOutOfRange { bits: VALUE_BITS });
        }
        debit += o.value;
    }
    if credit != debit {
        return Err(ZkError::BadTransfer("inputs + public in ≠ outputs + public out + fee"));
    }
    let public_amount =
        public_amount(req.public_in, req.public_out, req.fee).ok_or(ZkError::ValueOutOfRange { bits: VALUE_BITS })?;
    let debit = req.public_out.checked_add(req.fee).ok_or(ZkError::ValueOutOfRange { bits: VALUE_BITS })?;
    let (public_magnitude, public_negative) =
        if req.public_in >= debit { (req.public_in - debit, false) } else { (debit - req.public_in, true) };
    let public_magnitude = Fr::from(public_magnitude);
    let [in0, in1] = [&inputs[0], &inputs[1]].map(|s| (s.note.commitment(), s.path.index));
    let (cm0, cm1) = (in0.0?, in1.0?);
    let nullifiers = [req.sk.nullifier(&cm0, in0.1)?, req.sk.nullifier(&cm1, in1.1)?];
    if nullifiers[0] == nullifiers[1] {
        return Err(ZkError::BadTransfer("the same note twice"));
    }
    let commitments = [
        poseidon::hash(&[outputs[0].value, req.asset, outputs[0].inner])?,
        poseidon::hash(&[outputs[1].value, req.asset, outputs[1].inner])?,
    ];
    let public = TransferPublic {
        root: req.root,
        nullifiers,
        commitments,
        public_amount,
        asset: req.asset,
        context: req.context,
    };
    let mut it_in = inputs.into_iter();
    let mut it_out = outputs.into_iter();
    let pair_in = (it_in.next(), it_in.next());
    let pair_out = (it_out.next(), it_out.next());
    let (Some(i0), Some(i1), Some(o0), Some(o1)) = (pair_in.0, pair_in.1, pair_out.0, pair_out.1) else {
        return Err(ZkError::BadTransfer("at most two inputs and two outputs"));
    };
    let witness =
        TransferWitness { sk: req.sk, inputs: [i0, i1], outputs: [o0, o1], public_magnitude, public_negative };
    Ok((public, witness))
}

/// Whether `witness` satisfies the statement for `public` (no proof is made).
pub fn is_satisfied(public: &TransferPublic, witness: &TransferWitness) -> Result<bool, ZkError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    TransferCircuit::<'_, TREE_DEPTH> { public: public.clone(), witness: Some(witness) }
        .generate_constraints(cs.clone())?;
    cs.is_satisfied().map_err(|e| ZkError::Snark(e.to_string()))
}

/// Number of R1CS constraints (and of witness and instance variables).
pub fn constraint_count() -> Result<(usize, usize, usize), ZkError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_mode(SynthesisMode::Setup);
    TransferCircuit::blank().generate_constraints(cs.clone())?;
    cs.finalize();
    Ok((cs.num_constraints(), cs.num_witness_variables(), cs.num_instance_variables()))
}

/// Circuit-specific Groth16 keys.
pub fn setup<R: RngCore + CryptoRng>(rng: &mut R) -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), ZkError> {
    Groth16::<Bn254>::circuit_specific_setup(TransferCircuit::blank(), rng).map_err(|e| ZkError::Snark(e.to_string()))
}

/// The deterministic **testnet** setup (see [`TESTNET_TRANSFER_SETUP_LABEL`]).
pub fn testnet_setup() -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), ZkError> {
    setup(&mut rand_chacha::ChaCha20Rng::from_seed(*TESTNET_TRANSFER_SETUP_LABEL))
}

/// A proving key and its verifying key.
pub type Keys = (ProvingKey<Bn254>, VerifyingKey<Bn254>);

/// The testnet keys ([`testnet_setup`]), made once per process and shared by every caller (a
/// setup takes seconds; the wallet, the CLI and the tests prove many times).
pub fn testnet_keys() -> Result<&'static Keys, ZkError> {
    static K: std::sync::OnceLock<Result<Keys, ZkError>> = std::sync::OnceLock::new();
    K.get_or_init(testnet_setup).as_ref().map_err(Clone::clone)
}

/// Reads a transfer proving key in arkworks' compressed encoding: the `proving.key` that
/// `nox zk setup finalize --circuit transfer` writes, or a copy of the testnet key a wallet caches
/// ([`proving_key_to_bytes`]). Refuses a key of another circuit (the insertion key, the retired
/// gas-payment key) by its shape: 8 public inputs, and query lengths matching this circuit's
/// variables. The points are not subgroup-checked here (seconds for ~90,000 points on every
/// start); [`prove_evm`] instead verifies each proof against the key's own verifying key before
/// returning it, so a corrupted key never yields a proof that reaches the chain.
pub fn proving_key_from_bytes(bytes: &[u8]) -> Result<ProvingKey<Bn254>, ZkError> {
    use ark_serialize::CanonicalDeserialize;
    let mut reader = bytes;
    let pk = ProvingKey::<Bn254>::deserialize_compressed_unchecked(&mut reader)
        .map_err(|_| ZkError::Encoding("not an arkworks compressed Groth16 proving key"))?;
    if !reader.is_empty() {
        return Err(ZkError::Encoding("trailing bytes after the proving key"));
    }
    check_shape(&pk)?;
    Ok(pk)
}

/// `pk` in the encoding [`proving_key_from_bytes`] reads.
pub fn proving_key_to_bytes(pk: &ProvingKey<Bn254>) -> Result<Vec<u8>, ZkError> {
    use ark_serialize::CanonicalSerialize;
    let mut out = Vec::with_capacity(pk.compressed_size());
    pk.serialize_compressed(&mut out).map_err(|_| ZkError::Encoding("proving key does not serialise"))?;
    Ok(out)
}

/// Whether `pk` has the transfer circuit's shape (see [`proving_key_from_bytes`]).
pub fn check_shape(pk: &ProvingKey<Bn254>) -> Result<(), ZkError> {
    let m = Matrices::get()?;
    let vars = m.num_instance + m.num_witness;
    if pk.vk.gamma_abc_g1.len() != m.num_instance
        || pk.a_query.len() != vars
        || pk.b_g1_query.len() != vars
        || pk.b_g2_query.len() != vars
        || pk.l_query.len() != m.num_witness
        || pk.h_query.len() < m.num_constraints
    {
        return Err(ZkError::Encoding("not a proving key of the 2-in/2-out transfer circuit"));
    }
    Ok(())
}

/// Proves a transaction and returns the proof as the pool takes it (`uint256[8]`, 256 bytes),
/// after checking it against `pk`'s verifying key: what a wallet calls. Errors as [`prove`],
/// and [`ZkError::ProofRejected`] if the key is inconsistent (a corrupted key file).
pub fn prove_evm<R: RngCore + CryptoRng>(
    pk: &ProvingKey<Bn254>,
    public: &TransferPublic,
    witness: &TransferWitness,
    rng: &mut R,
) -> Result<[u8; crate::groth16::PROOF_BYTES], ZkError> {
    let proof = prove(pk, public, witness, rng)?;
    verify(&pk.vk, public, &proof)?;
    Ok(crate::groth16::proof_to_evm(&proof))
}

/// The circuit's constraint matrices (A, B, C), built once per process and shared by every
/// proof: they depend on the circuit alone, not on the witness.
pub struct Matrices {
    matrices: Vec<Matrix<Fr>>,
    num_instance: usize,
    num_witness: usize,
    num_constraints: usize,
}

impl Matrices {
    /// Builds the matrices of [`TransferCircuit`] (the same synthesis the setup ran).
    pub fn build() -> Result<Self, ZkError> {
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_optimization_goal(OptimizationGoal::Constraints);
        cs.set_mode(SynthesisMode::Setup);
        TransferCircuit::blank().generate_constraints(cs.clone())?;
        cs.finalize();
        let num_instance = cs.num_instance_variables();
        let num_witness = cs.num_witness_variables();
        let num_constraints = cs.num_constraints();
        let mut all = cs.to_matrices()?;
        let matrices = all.remove(R1CS_PREDICATE_LABEL).ok_or(ZkError::Snark("no R1CS matrices".into()))?;
        Ok(Matrices { matrices, num_instance, num_witness, num_constraints })
    }

    /// The process-wide matrices.
    pub fn get() -> Result<&'static Matrices, ZkError> {
        static M: std::sync::OnceLock<Result<Matrices, ZkError>> = std::sync::OnceLock::new();
        M.get_or_init(Matrices::build).as_ref().map_err(Clone::clone)
    }

    /// The R1CS matrices `[A, B, C]`.
    pub fn matrices(&self) -> &[Matrix<Fr>] {
        &self.matrices
    }

    /// Number of instance variables (the constant 1 and the public inputs).
    pub fn num_instance(&self) -> usize {
        self.num_instance
    }

    /// Number of constraints.
    pub fn num_constraints(&self) -> usize {
        self.num_constraints
    }

    /// Number of variables (the constant 1, the public inputs, the witness).
    pub fn num_variables(&self) -> usize {
        self.num_instance + self.num_witness
    }

    /// Whether `z` is a full assignment of the right length with `public`'s inputs that
    /// satisfies every constraint (what [`prove`] checks before proving).
    pub fn is_assignment_for(&self, public: &TransferPublic, z: &[Fr]) -> bool {
        z.len() == self.num_variables()
            && z.get(1..self.num_instance) == Some(&public.to_vec()[..])
            && self.satisfied_by(z)
    }

    /// Whether `z = (1, instance, witness)` satisfies every row `⟨A,z⟩·⟨B,z⟩ = ⟨C,z⟩`.
    fn satisfied_by(&self, z: &[Fr]) -> bool {
        let [a, b, c] = self.matrices.as_slice() else { return false };
        let dot = |row: &Vec<(Fr, usize)>| {
            row.iter().map(|(coeff, i)| z.get(*i).map_or(Fr::from(0u64), |v| *coeff * v)).sum::<Fr>()
        };
        a.len() == self.num_constraints
            && a.iter().zip(b).zip(c).all(|((ra, rb), rc)| dot(ra) * dot(rb) == dot(rc))
            && a.iter().chain(b).chain(c).flatten().all(|(_, i)| *i < z.len())
    }
}

/// The full assignment `(1, instance, witness)`: one synthesis in prove mode, without matrices.
pub fn assignment(public: &TransferPublic, witness: &TransferWitness) -> Result<Vec<Fr>, ZkError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Prove { construct_matrices: false, generate_lc_assignments: false });
    TransferCircuit::<'_, TREE_DEPTH> { public: public.clone(), witness: Some(witness) }
        .generate_constraints(cs.clone())?;
    cs.finalize();
    let mut z = cs.instance_assignment()?;
    z.extend(cs.witness_assignment()?);
    Ok(z)
}

/// Where one proof's time goes (for the benchmark).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProveTimes {
    /// Witness synthesis (prove mode, no matrices).
    pub synthesis: Duration,
    /// Checking the assignment against the matrices.
    pub check: Duration,
    /// QAP witness map (7 FFTs) and the four MSMs.
    pub groth16: Duration,
}

/// Proves a transaction. Refuses (before proving) a witness that does not satisfy the statement.
pub fn prove<R: RngCore + CryptoRng>(
    pk: &ProvingKey<Bn254>,
    public: &TransferPublic,
    witness: &TransferWitness,
    rng: &mut R,
) -> Result<Proof<Bn254>, ZkError> {
    prove_timed(pk, public, witness, rng).map(|(p, _)| p)
}

/// [`prove`] with a ChaCha20 generator seeded from `seed` (32 bytes from the caller's CSPRNG;
/// they are the proof's blinding randomness: keep them secret and use them once). Not generic,
/// so arkworks' prover (generic code) is compiled in this crate with its optimisation: a caller's
/// instance of the generic [`prove`] is compiled in the caller's crate, unoptimised in a debug or
/// test build (the same cause made the inserter's proofs 10–30× slower there: `insert::prove_seeded`).
pub fn prove_seeded(
    pk: &ProvingKey<Bn254>,
    public: &TransferPublic,
    witness: &TransferWitness,
    seed: [u8; 32],
) -> Result<Proof<Bn254>, ZkError> {
    prove(pk, public, witness, &mut rand_chacha::ChaCha20Rng::from_seed(seed))
}

/// [`prove`], reporting where the time went.
pub fn prove_timed<R: RngCore + CryptoRng>(
    pk: &ProvingKey<Bn254>,
    public: &TransferPublic,
    witness: &TransferWitness,
    rng: &mut R,
) -> Result<(Proof<Bn254>, ProveTimes), ZkError> {
    let m = Matrices::get()?;
    let t = Instant::now();
    let z = assignment(public, witness)?;
    let synthesis = t.elapsed();
    let t = Instant::now();
    if !m.is_assignment_for(public, &z) {
        return Err(ZkError::Snark("witness does not satisfy the transfer statement".into()));
    }
    let check = t.elapsed();
    let t = Instant::now();
    let (r, s) = (Fr::rand(rng), Fr::rand(rng));
    let proof = Groth16::<Bn254>::create_proof_with_reduction_and_matrices(
        pk,
        r,
        s,
        &m.matrices,
        m.num_instance,
        m.num_constraints,
        &z,
    )
    .map_err(ZkError::from)?;
    Ok((proof, ProveTimes { synthesis, check, groth16: t.elapsed() }))
}

/// Verifies a transfer proof.
pub fn verify(vk: &VerifyingKey<Bn254>, public: &TransferPublic, proof: &Proof<Bn254>) -> Result<(), ZkError> {
    match Groth16::<Bn254>::verify(vk, &public.to_vec(), proof) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ZkError::ProofRejected),
        Err(e) => Err(ZkError::Snark(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_default();
        }
        out
    }

    /// A vector computed independently with Foundry's `cast` (`cast keccak`, `cast abi-encode
    /// "f(uint256,uint256,uint256,address,bytes32,address,uint256,address,uint256,bytes32)" …`).
    /// Its keccak (0xbc43…0fe9) is above r, so the reduction is exercised too.
    #[test]
    fn context_matches_an_independently_computed_vector() {
        let nh = notes_hash(&[0xaa; 5], &[1, 2, 3, 4, 5]);
        assert_eq!(nh, hex32("11520e4d7847611216ccb9a3848e9ec97c18cd72d4598b39a676e6015e5b2127"));
        let ctx = TransferContext {
            public_in: 7,
            public_out: 1_000_000_000_000_000_000,
            fee: 250_000,
            relayer: [0x11; 20],
            execution_hash: [0x22; 32],
            recipient: [0x33; 20],
            chain_id: 31337,
            pool: [0x44; 20],
            deadline: 1_700_000_000,
            notes_hash: nh,
        };
        let want = hex32("2b161749a9310163c3d5d0f3a2271e327c77d004015571aa148139c8392a0fe6");
        assert_eq!(crate::field::to_be32(&ctx.hash()), want);
        // Every field is bound: changing any one changes the hash.
        let mut variants = vec![ctx.clone(); 10];
        variants[0].public_in += 1;
        variants[1].public_out += 1;
        variants[2].fee += 1;
        variants[3].relayer[19] ^= 1;
        variants[4].execution_hash[0] ^= 1;
        variants[5].recipient[0] ^= 1;
        variants[6].chain_id += 1;
        variants[7].pool[0] ^= 1;
        variants[8].deadline += 1;
        variants[9].notes_hash = notes_hash(&[1, 2, 3, 4, 5], &[0xaa; 5]);
        for v in variants {
            assert_ne!(v.hash(), ctx.hash(), "{v:?}");
        }
    }
}
