//! The batch-insertion circuit (docs/design/zk-payment.md §4.3).
//!
//! The pool queues every new commitment and anyone inserts the next batch of up to
//! [`BATCH_SIZE`] queued commitments as one aligned subtree of height [`BATCH_LEVELS`] (missing
//! leaves are 0), proving in zero knowledge that the tree was updated correctly, so the chain
//! never hashes a Merkle path. Public inputs, in this order ([`InsertPublic::to_vec`]):
//! `oldRoot, newRoot, startIndex, leaf[0..BATCH_SIZE]` (35 inputs at 32 leaves). Private: the
//! [`UPPER_LEVELS`] = 27 siblings of the subtree's position. The circuit enforces
//!
//! 1. `startIndex = BATCH_SIZE · pos` with `pos` decomposed into 27 boolean bits (so the batch is
//!    aligned and inside the tree);
//! 2. the empty subtree (`zeros()[BATCH_LEVELS]`) sits at `pos` under `oldRoot` with the siblings;
//! 3. the subtree root of the 32 leaves (31 Poseidon hashes) sits at the same position, with the
//!    same siblings, under `newRoot`.
//!
//! So the old tree had nothing in the batch's slots, the new tree differs from it in exactly
//! those slots, and they hold exactly the 32 leaves the chain fed the verifier.
//!
//! The batch size is this one constant pair ([`BATCH_LEVELS`], [`BATCH_SIZE`]); the pool's
//! `BATCH_SIZE` and the verifier's input count must match it (docs/design/zk-payment.md §4.3
//! says why 32).

use crate::{
    error::ZkError,
    field::to_be32,
    groth16,
    merkle::{TREE_DEPTH, zeros},
    poseidon::hash_gadget,
};
use ark_bn254::{Bn254, Fr};
use ark_groth16::{Proof, ProvingKey, VerifyingKey};
use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{FieldVar, fp::FpVar},
    select::CondSelectGadget,
};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use rand_core::{CryptoRng, RngCore, SeedableRng};

/// Height of a batch's subtree.
pub const BATCH_LEVELS: usize = 5;
/// Leaves per batch (`2^BATCH_LEVELS`).
pub const BATCH_SIZE: usize = 1 << BATCH_LEVELS;
/// Levels above a batch's subtree.
pub const UPPER_LEVELS: usize = TREE_DEPTH - BATCH_LEVELS;
/// Number of public inputs.
pub const INSERT_NUM_PUBLIC_INPUTS: usize = 3 + BATCH_SIZE;

/// The seed label of the testnet insertion setup. **Testnet artifact**: its randomness is public
/// (anyone can forge insertion proofs for its verifying key); a deployment with value uses keys
/// from the ceremony (`nox zk setup --circuit insert`, docs/spec/ceremony.md).
pub const TESTNET_INSERT_SETUP_LABEL: &[u8; 32] = b"NOX testnet batch-insert setup 1";

/// The public inputs of one batch insertion, each as the pool computes it from its own state
/// (all but `new_root`, which the inserter supplies and the proof vouches for).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsertPublic {
    /// The pool's current root.
    pub old_root: Fr,
    /// The root after the batch.
    pub new_root: Fr,
    /// Leaf position of the batch's first slot (a multiple of [`BATCH_SIZE`]).
    pub start_index: u64,
    /// The [`BATCH_SIZE`] leaves: the queued commitments in order, then zeros.
    pub leaves: [Fr; BATCH_SIZE],
}

impl InsertPublic {
    /// The inputs in the verifier's order.
    pub fn to_vec(&self) -> Vec<Fr> {
        let mut v = Vec::with_capacity(INSERT_NUM_PUBLIC_INPUTS);
        v.push(self.old_root);
        v.push(self.new_root);
        v.push(Fr::from(self.start_index));
        v.extend_from_slice(&self.leaves);
        v
    }

    /// The inputs as `uint256[INSERT_NUM_PUBLIC_INPUTS]` words (`uint256[35]`).
    pub fn to_evm(&self) -> [[u8; 32]; INSERT_NUM_PUBLIC_INPUTS] {
        let mut out = [[0u8; 32]; INSERT_NUM_PUBLIC_INPUTS];
        for (o, x) in out.iter_mut().zip(self.to_vec()) {
            *o = to_be32(&x);
        }
        out
    }
}

/// The private witness: the siblings of the batch's subtree, level [`BATCH_LEVELS`] first. (Public data of the
/// tree, but part of no input.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsertWitness {
    /// [`UPPER_LEVELS`] siblings.
    pub siblings: Vec<Fr>,
}

/// The insertion circuit; `witness == None` only shapes the constraint system (setup).
pub struct InsertCircuit<'a> {
    /// Public inputs (any values for setup).
    pub public: InsertPublic,
    /// The witness, `None` for setup.
    pub witness: Option<&'a InsertWitness>,
}

impl InsertCircuit<'_> {
    /// The circuit for key generation.
    pub fn blank() -> InsertCircuit<'static> {
        let z = Fr::from(0u64);
        InsertCircuit {
            public: InsertPublic { old_root: z, new_root: z, start_index: 0, leaves: [z; BATCH_SIZE] },
            witness: None,
        }
    }
}

impl ConstraintSynthesizer<Fr> for InsertCircuit<'_> {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        crate::quiet(|| self.synthesize(cs))
    }
}

impl InsertCircuit<'_> {
    fn synthesize(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let p = &self.public;
        let w = self.witness;
        let input = |v: Fr| FpVar::new_input(cs.clone(), || Ok(v));
        let old_root = input(p.old_root)?;
        let new_root = input(p.new_root)?;
        let start = input(Fr::from(p.start_index))?;
        let leaves = p.leaves.iter().map(|l| input(*l)).collect::<Result<Vec<_>, _>>()?;

        // 1. Position: startIndex = BATCH_SIZE · pos, pos < 2^UPPER_LEVELS (bit i of pos = bit
        // i + BATCH_LEVELS of startIndex).
        let pos = p.start_index >> BATCH_LEVELS;
        let mut bits = Vec::with_capacity(UPPER_LEVELS);
        for i in 0..UPPER_LEVELS {
            bits.push(Boolean::new_witness(cs.clone(), || {
                w.map(|_| (pos >> i) & 1 == 1).ok_or(SynthesisError::AssignmentMissing)
            })?);
        }
        let pos_var = Boolean::le_bits_to_fp(&bits)?;
        (pos_var * Fr::from(BATCH_SIZE as u64)).enforce_equal(&start)?;

        // 3 (first half). The subtree root of the BATCH_SIZE leaves.
        let mut level = leaves;
        while level.len() > 1 {
            level = level.chunks_exact(2).map(hash_gadget).collect::<Result<Vec<_>, _>>()?;
        }
        let subtree = level.pop().ok_or(SynthesisError::Unsatisfiable)?;

        // 2 and 3: the same path from the empty subtree to oldRoot and from the batch to newRoot.
        let mut old = FpVar::constant(zeros()[BATCH_LEVELS]);
        let mut new = subtree;
        for (lvl, bit) in bits.iter().enumerate() {
            let sib = FpVar::new_witness(cs.clone(), || {
                w.and_then(|w| w.siblings.get(lvl).copied()).ok_or(SynthesisError::AssignmentMissing)
            })?;
            let ol = FpVar::conditionally_select(bit, &sib, &old)?;
            let or = FpVar::conditionally_select(bit, &old, &sib)?;
            old = hash_gadget(&[ol, or])?;
            let nl = FpVar::conditionally_select(bit, &sib, &new)?;
            let nr = FpVar::conditionally_select(bit, &new, &sib)?;
            new = hash_gadget(&[nl, nr])?;
        }
        old.enforce_equal(&old_root)?;
        new.enforce_equal(&new_root)?;
        Ok(())
    }
}

/// Whether `witness` satisfies the insertion statement for `public` (no proof is made).
pub fn is_satisfied(public: &InsertPublic, witness: &InsertWitness) -> Result<bool, ZkError> {
    groth16::is_satisfied(InsertCircuit { public: public.clone(), witness: Some(witness) })
}

/// Number of R1CS constraints of the insertion circuit (and of witness and instance variables).
pub fn constraint_count() -> Result<(usize, usize, usize), ZkError> {
    groth16::constraint_count(InsertCircuit::blank())
}

/// Circuit-specific Groth16 keys for the insertion circuit.
pub fn setup<R: RngCore + CryptoRng>(rng: &mut R) -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), ZkError> {
    groth16::setup(InsertCircuit::blank(), rng)
}

/// The deterministic **testnet** insertion setup (see [`TESTNET_INSERT_SETUP_LABEL`]).
pub fn testnet_setup() -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), ZkError> {
    setup(&mut rand_chacha::ChaCha20Rng::from_seed(*TESTNET_INSERT_SETUP_LABEL))
}

/// Proves a batch insertion; refuses (before proving) a witness that does not satisfy it.
pub fn prove<R: RngCore + CryptoRng>(
    pk: &ProvingKey<Bn254>,
    public: &InsertPublic,
    witness: &InsertWitness,
    rng: &mut R,
) -> Result<Proof<Bn254>, ZkError> {
    if !is_satisfied(public, witness)? {
        return Err(ZkError::Snark("witness does not satisfy the insertion statement".into()));
    }
    groth16::prove(pk, InsertCircuit { public: public.clone(), witness: Some(witness) }, rng)
}

/// [`prove`] with a ChaCha20 generator seeded from `seed` (32 bytes from the caller's CSPRNG).
/// Not generic, so the prover's code (arkworks' MSMs and FFTs, all generic) is compiled here,
/// with this crate's optimisation: a caller's instance of the generic [`prove`] is compiled in
/// the caller's crate, unoptimised in a debug or test build (the inserter's proof took 16–49 s
/// instead of 1.6 s that way, issue 35).
pub fn prove_seeded(
    pk: &ProvingKey<Bn254>,
    public: &InsertPublic,
    witness: &InsertWitness,
    seed: [u8; 32],
) -> Result<Proof<Bn254>, ZkError> {
    prove(pk, public, witness, &mut rand_chacha::ChaCha20Rng::from_seed(seed))
}

/// Reads an insertion proving key in arkworks' compressed encoding (as `testnet_setup`'s key is
/// written by the testnet), without subgroup checks (the caller verifies each proof against the
/// key's verifying key). Not generic, for the reason given at [`prove_seeded`]: decoding
/// ~10⁵ compressed points unoptimised took 15 s.
pub fn proving_key_from_bytes(bytes: &[u8]) -> Result<ProvingKey<Bn254>, ZkError> {
    let pk = groth16::proving_key_from_compressed_unchecked(bytes)?;
    if pk.vk.gamma_abc_g1.len() != INSERT_NUM_PUBLIC_INPUTS + 1 {
        return Err(ZkError::Encoding("not an insertion proving key (wrong number of public inputs)"));
    }
    Ok(pk)
}

/// Verifies an insertion proof.
pub fn verify(vk: &VerifyingKey<Bn254>, public: &InsertPublic, proof: &Proof<Bn254>) -> Result<(), ZkError> {
    groth16::verify(vk, &public.to_vec(), proof)
}
