//! Groth16 over BN254 for both circuits (`insert`, `transfer`): the circuit-generic setup,
//! satisfaction check, constraint count, proof and verification each circuit's module calls with
//! its own circuit and public inputs, the proving-key decoding, and the EVM encoding of proofs
//! and curve points shared by the verifiers' generator (`solidity`), the vectors and every
//! caller that puts a proof on chain.

use crate::error::ZkError;
use ark_bn254::{Bn254, Fq, Fr, G1Affine, G2Affine};
use ark_ec::AffineRepr;
use ark_ff::{BigInteger, PrimeField};
use ark_groth16::Groth16;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystem, SynthesisMode};
use ark_snark::SNARK;
use rand_core::{CryptoRng, RngCore};

pub use ark_groth16::{Proof, ProvingKey, VerifyingKey};

/// A proving key and its verifying key.
pub type Keys = (ProvingKey<Bn254>, VerifyingKey<Bn254>);

/// Circuit-specific Groth16 keys for the circuit `blank` shapes (its values are ignored).
pub fn setup<C: ConstraintSynthesizer<Fr>, R: RngCore + CryptoRng>(blank: C, rng: &mut R) -> Result<Keys, ZkError> {
    Groth16::<Bn254>::circuit_specific_setup(blank, rng).map_err(|e| ZkError::Snark(e.to_string()))
}

/// Whether `circuit`'s assignment satisfies its constraints (no proof is made).
pub fn is_satisfied<C: ConstraintSynthesizer<Fr>>(circuit: C) -> Result<bool, ZkError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    circuit.generate_constraints(cs.clone())?;
    cs.is_satisfied().map_err(|e| ZkError::Snark(e.to_string()))
}

/// Number of R1CS constraints of the circuit `blank` shapes (and of witness and instance
/// variables).
pub fn constraint_count<C: ConstraintSynthesizer<Fr>>(blank: C) -> Result<(usize, usize, usize), ZkError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_mode(SynthesisMode::Setup);
    blank.generate_constraints(cs.clone())?;
    cs.finalize();
    Ok((cs.num_constraints(), cs.num_witness_variables(), cs.num_instance_variables()))
}

/// A proof for `circuit` (its public inputs and witness) under `pk`; the caller checks
/// satisfaction first ([`is_satisfied`]) so that a bad witness is refused, not proved.
pub fn prove<C: ConstraintSynthesizer<Fr>, R: RngCore + CryptoRng>(
    pk: &ProvingKey<Bn254>,
    circuit: C,
    rng: &mut R,
) -> Result<Proof<Bn254>, ZkError> {
    Groth16::<Bn254>::prove(pk, circuit, rng).map_err(|e| ZkError::Snark(e.to_string()))
}

/// Verifies `proof` for the public `inputs` (in the verifier's order) under `vk`:
/// [`ZkError::ProofRejected`] if it does not verify.
pub fn verify(vk: &VerifyingKey<Bn254>, inputs: &[Fr], proof: &Proof<Bn254>) -> Result<(), ZkError> {
    match Groth16::<Bn254>::verify(vk, inputs, proof) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ZkError::ProofRejected),
        Err(e) => Err(ZkError::Snark(e.to_string())),
    }
}

/// Size of a proof in the EVM encoding: A (2 words), B (4), C (2).
pub const PROOF_BYTES: usize = 8 * 32;

fn fq_be(x: &Fq) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&x.into_bigint().to_bytes_be());
    out
}

/// A G1 point as `[x, y]` words (the point at infinity as `[0, 0]`, as the precompiles take it).
pub fn g1_words(p: &G1Affine) -> [[u8; 32]; 2] {
    match p.xy() {
        Some((x, y)) => [fq_be(&x), fq_be(&y)],
        None => [[0; 32]; 2],
    }
}

/// A G2 point as `[x.c1, x.c0, y.c1, y.c0]` words: EIP-197 puts the imaginary part first.
pub fn g2_words(p: &G2Affine) -> [[u8; 32]; 4] {
    match p.xy() {
        Some((x, y)) => [fq_be(&x.c1), fq_be(&x.c0), fq_be(&y.c1), fq_be(&y.c0)],
        None => [[0; 32]; 4],
    }
}

/// A proof as the verifier contract takes it: `uint256[8]` = `[A.x, A.y, B.x.c1, B.x.c0,
/// B.y.c1, B.y.c0, C.x, C.y]`, 256 bytes.
pub fn proof_to_evm(proof: &Proof<ark_bn254::Bn254>) -> [u8; PROOF_BYTES] {
    let mut out = [0u8; PROOF_BYTES];
    let words = g1_words(&proof.a).into_iter().chain(g2_words(&proof.b)).chain(g1_words(&proof.c));
    for (chunk, w) in out.chunks_exact_mut(32).zip(words) {
        chunk.copy_from_slice(&w);
    }
    out
}

fn fq_from(bytes: &[u8]) -> Result<Fq, ZkError> {
    let x = Fq::from_be_bytes_mod_order(bytes);
    if x.into_bigint().to_bytes_be() == bytes {
        Ok(x)
    } else {
        Err(ZkError::Encoding("coordinate not below the base field modulus"))
    }
}

/// Decodes the EVM encoding of a proof, checking that each point is on its curve and in the
/// prime-order subgroup.
pub fn proof_from_evm(bytes: &[u8; PROOF_BYTES]) -> Result<Proof<ark_bn254::Bn254>, ZkError> {
    let w: Vec<Fq> = bytes.chunks_exact(32).map(fq_from).collect::<Result<_, _>>()?;
    let g1 = |x: Fq, y: Fq| -> Result<G1Affine, ZkError> {
        let p = G1Affine::new_unchecked(x, y);
        if p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve() {
            Ok(p)
        } else {
            Err(ZkError::Encoding("G1 point not on the curve"))
        }
    };
    let x = ark_bn254::Fq2::new(w[3], w[2]);
    let y = ark_bn254::Fq2::new(w[5], w[4]);
    let b = G2Affine::new_unchecked(x, y);
    if !(b.is_on_curve() && b.is_in_correct_subgroup_assuming_on_curve()) {
        return Err(ZkError::Encoding("G2 point not on the curve or not in the subgroup"));
    }
    Ok(Proof { a: g1(w[0], w[1])?, b, c: g1(w[6], w[7])? })
}

/// Scalar field modulus as a decimal string (used by the Solidity generator).
pub fn scalar_modulus_decimal() -> String {
    Fr::MODULUS.to_string()
}

/// Base field modulus as a decimal string.
pub fn base_modulus_decimal() -> String {
    Fq::MODULUS.to_string()
}

/// Decodes a Groth16 proving key over BN254 in arkworks' compressed encoding, without subgroup
/// checks and without checking which circuit it belongs to (the caller checks its shape, e.g.
/// `transfer::check_shape`, and verifies each proof before it leaves). Not generic, so the
/// decoding is compiled in this crate with its optimisation (a caller's instance of arkworks'
/// generic decoder is unoptimised in a debug build: seconds per key).
pub fn proving_key_from_compressed_unchecked(bytes: &[u8]) -> Result<ProvingKey<ark_bn254::Bn254>, ZkError> {
    use ark_serialize::CanonicalDeserialize;
    let mut reader = bytes;
    let pk = ProvingKey::<ark_bn254::Bn254>::deserialize_compressed_unchecked(&mut reader)
        .map_err(|_| ZkError::Encoding("not an arkworks compressed Groth16 proving key"))?;
    if !reader.is_empty() {
        return Err(ZkError::Encoding("trailing bytes after the proving key"));
    }
    Ok(pk)
}
