//! Keys, proving and verification for the transfer circuit: the testnet setup and the
//! proving-key encoding, the constraint matrices built once per process, and the prover that
//! synthesises the witness once, checks it against those matrices and then proves.

use super::{TESTNET_TRANSFER_SETUP_LABEL, TransferCircuit, TransferPublic, TransferWitness};
use crate::{error::ZkError, groth16, merkle::TREE_DEPTH};
use ark_bn254::{Bn254, Fr};
use ark_ff::UniformRand;
use ark_groth16::{Groth16, Proof, ProvingKey, VerifyingKey};
use ark_relations::{
    gr1cs::{ConstraintSynthesizer, ConstraintSystem, OptimizationGoal, R1CS_PREDICATE_LABEL, SynthesisMode},
    utils::matrix::Matrix,
};
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

/// Circuit-specific Groth16 keys.
pub fn setup<R: RngCore + CryptoRng>(rng: &mut R) -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), ZkError> {
    groth16::setup(TransferCircuit::blank(), rng)
}

/// The deterministic **testnet** setup (see [`TESTNET_TRANSFER_SETUP_LABEL`]).
pub fn testnet_setup() -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), ZkError> {
    setup(&mut rand_chacha::ChaCha20Rng::from_seed(*TESTNET_TRANSFER_SETUP_LABEL))
}

pub use crate::groth16::Keys;

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
    let pk = groth16::proving_key_from_compressed_unchecked(bytes)?;
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
    groth16::verify(vk, &public.to_vec(), proof)
}
