//! The transfer prover in three phases, so that its multi-scalar multiplications (most of a
//! proof's time) can run in places that share no memory — the browser's Workers (issue 31):
//!
//! 1. [`prepare`]: one witness synthesis, the check against the cached matrices, and the QAP
//!    witness map `h` (arkworks' `LibsnarkReduction`, the reduction the keys were made for);
//! 2. [`msm_part`]`(k, n)`: the MSMs of slice `k` of `n` of every query — A, B and L and H in G1,
//!    B in G2. A multi-scalar multiplication is a sum, so the parts add up to the whole;
//! 3. [`finish`]: adds the parts and applies the blinding `r`, `s` as Groth16 does.
//!
//! With the same `r`, `s` the proof equals arkworks' own (`tests/zk/split_prover.rs` checks it
//! bit for bit). The phases' byte encodings are what the WebAssembly module passes between
//! Workers; every decoder checks lengths and canonical scalars, every point is checked on its
//! curve and in its subgroup. See the README ("The split prover") for why this lives here.

use crate::error::ZkError;
use crate::transfer::{self, Matrices, TransferPublic, TransferWitness};
use ark_bn254::{Bn254, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::{PrimeField, UniformRand, Zero};
use ark_groth16::r1cs_to_qap::{LibsnarkReduction, R1CSToQAP};
use ark_groth16::{Proof, ProvingKey};
use ark_poly::GeneralEvaluationDomain;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rand_core::SeedableRng;
use std::ops::Range;

/// Most parts a proof may be split into (far more than any machine's cores).
pub const MAX_PARTS: u32 = 64;

const PREPARED_MAGIC: &[u8; 4] = b"NXP1";
const PART_MAGIC: &[u8; 4] = b"NXM1";
/// Bytes of an encoded [`Part`]: magic, k, n, four G1 and one G2 points (uncompressed).
pub const PART_BYTES: usize = 4 + 4 + 4 + 4 * 64 + 128;

/// The output of [`prepare`]: the full assignment `z = (1, public inputs, witness)` and the
/// coefficients of `h`. Secret (it is the witness): it goes only to the caller's own Workers;
/// zeroized on drop.
#[derive(Clone, PartialEq, Eq, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct Prepared {
    z: Vec<Fr>,
    h: Vec<Fr>,
    num_instance: usize,
}

/// One part's sums of the five MSMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// This part's index, below `n`.
    pub k: u32,
    /// How many parts the proof is split into.
    pub n: u32,
    a: G1Projective,
    b_g1: G1Projective,
    l: G1Projective,
    h: G1Projective,
    b_g2: G2Projective,
}

/// Phase 1: synthesizes the witness, refuses one that does not satisfy the statement, and
/// computes `h`.
pub fn prepare(public: &TransferPublic, witness: &TransferWitness) -> Result<Prepared, ZkError> {
    let m = Matrices::get()?;
    let z = transfer::assignment(public, witness)?;
    if !m.is_assignment_for(public, &z) {
        return Err(ZkError::Snark("witness does not satisfy the transfer statement".into()));
    }
    let h = LibsnarkReduction::witness_map_from_matrices::<Fr, GeneralEvaluationDomain<Fr>>(
        m.matrices(),
        m.num_instance(),
        m.num_constraints(),
        &z,
    )?;
    Ok(Prepared { z, h, num_instance: m.num_instance() })
}

fn slice(len: usize, k: u32, n: u32) -> Range<usize> {
    let (k, n) = (k as usize, n as usize);
    k * len / n..(k + 1) * len / n
}

fn check_part_index(k: u32, n: u32) -> Result<(), ZkError> {
    if n == 0 || n > MAX_PARTS || k >= n {
        return Err(ZkError::BadPart("part index must be below the number of parts (1..=64)"));
    }
    Ok(())
}

/// Phase 2: the MSMs over slice `k` of `n` of each query. `pk` must be the transfer key the
/// assignment was prepared for (its shape is checked).
pub fn msm_part(pk: &ProvingKey<Bn254>, prep: &Prepared, k: u32, n: u32) -> Result<Part, ZkError> {
    check_part_index(k, n)?;
    transfer::check_shape(pk)?;
    let vars = prep.z.len();
    if pk.a_query.len() != vars || prep.num_instance > vars || pk.l_query.len() != vars - prep.num_instance {
        return Err(ZkError::BadPart("the prepared assignment does not fit this proving key"));
    }
    let z: Vec<_> = prep.z.iter().map(|s| s.into_bigint()).collect();
    let h: Vec<_> = prep.h.iter().map(|s| s.into_bigint()).collect();
    let all = slice(vars, k, n);
    let aux = &z[prep.num_instance..];
    let la = slice(aux.len(), k, n);
    // arkworks' MSM runs over the shorter of bases and scalars; so does this.
    let hn = h.len().min(pk.h_query.len());
    let hs = slice(hn, k, n);
    Ok(Part {
        k,
        n,
        a: G1Projective::msm_bigint(&pk.a_query[all.clone()], &z[all.clone()]),
        b_g1: G1Projective::msm_bigint(&pk.b_g1_query[all.clone()], &z[all.clone()]),
        l: G1Projective::msm_bigint(&pk.l_query[la.clone()], &aux[la]),
        h: G1Projective::msm_bigint(&pk.h_query[hs.clone()], &h[hs]),
        b_g2: G2Projective::msm_bigint(&pk.b_g2_query[all.clone()], &z[all]),
    })
}

/// Phase 3: adds the parts (exactly one of each index `0..n`, any order) and blinds with `r`, `s`.
pub fn finish(pk: &ProvingKey<Bn254>, parts: &[Part], r: Fr, s: Fr) -> Result<Proof<Bn254>, ZkError> {
    let n = parts.first().ok_or(ZkError::BadPart("no parts"))?.n;
    check_part_index(0, n)?;
    let mut seen = vec![false; n as usize];
    for p in parts {
        check_part_index(p.k, p.n)?;
        if p.n != n || std::mem::replace(&mut seen[p.k as usize], true) {
            return Err(ZkError::BadPart("parts of different splits, or one part twice"));
        }
    }
    if seen.iter().any(|s| !s) {
        return Err(ZkError::BadPart("a part is missing"));
    }
    let (mut a, mut b_g1, mut l, mut h, mut b_g2) =
        (G1Projective::zero(), G1Projective::zero(), G1Projective::zero(), G1Projective::zero(), G2Projective::zero());
    for p in parts {
        a += p.a;
        b_g1 += p.b_g1;
        l += p.l;
        h += p.h;
        b_g2 += p.b_g2;
    }
    // Groth16: A = α + Σ zᵢaᵢ + rδ; B = β + Σ zᵢbᵢ + sδ (in G1 and G2);
    // C = Σ_aux zᵢlᵢ + Σ hᵢHᵢ + sA + rB₁ − rsδ. (arkworks skips B in G1 when r = 0.)
    let delta1 = pk.delta_g1.into_group();
    let g_a = a + pk.vk.alpha_g1 + delta1 * r;
    let g1_b = if r.is_zero() { G1Projective::zero() } else { b_g1 + pk.beta_g1 + delta1 * s };
    let g2_b = b_g2 + pk.vk.beta_g2 + pk.vk.delta_g2.into_group() * s;
    let g_c = g_a * s + g1_b * r - delta1 * (r * s) + l + h;
    Ok(Proof { a: g_a.into_affine(), b: g2_b.into_affine(), c: g_c.into_affine() })
}

/// [`finish`] with `r`, `s` drawn from a ChaCha20 generator seeded with `seed` (32 bytes from the
/// caller's CSPRNG, used once), the proof checked against `pk`'s verifying key and the prepared
/// public inputs, and EVM-encoded: what a wallet calls.
pub fn finish_evm(
    pk: &ProvingKey<Bn254>,
    prep: &Prepared,
    parts: &[Part],
    seed: [u8; 32],
) -> Result<[u8; crate::groth16::PROOF_BYTES], ZkError> {
    let mut rng = rand_chacha::ChaCha20Rng::from_seed(seed);
    let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let proof = finish(pk, parts, r, s)?;
    let public = prep.z.get(1..prep.num_instance).ok_or(ZkError::BadPart("no public inputs"))?;
    match ark_groth16::Groth16::<Bn254>::verify_proof(&ark_groth16::prepare_verifying_key(&pk.vk), &proof, public) {
        Ok(true) => Ok(crate::groth16::proof_to_evm(&proof)),
        Ok(false) => Err(ZkError::ProofRejected),
        Err(e) => Err(ZkError::Snark(e.to_string())),
    }
}

fn put_scalars(out: &mut Vec<u8>, v: &[Fr]) {
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for s in v {
        out.extend_from_slice(&crate::field::to_be32(s));
    }
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], ZkError> {
    if b.len() < n {
        return Err(ZkError::BadPart("truncated encoding"));
    }
    let (head, tail) = b.split_at(n);
    *b = tail;
    Ok(head)
}

fn take_u32(b: &mut &[u8]) -> Result<u32, ZkError> {
    let mut w = [0u8; 4];
    w.copy_from_slice(take(b, 4)?);
    Ok(u32::from_le_bytes(w))
}

fn take_scalars(b: &mut &[u8]) -> Result<Vec<Fr>, ZkError> {
    let n = take_u32(b)? as usize;
    let bytes = take(b, n.checked_mul(32).ok_or(ZkError::BadPart("length overflows"))?)?;
    bytes
        .chunks_exact(32)
        .map(|c| {
            let mut w = [0u8; 32];
            w.copy_from_slice(c);
            crate::field::from_be32(&w)
        })
        .collect()
}

impl Prepared {
    /// The public inputs (the verifier's order), as the pool takes them: 32-byte big-endian words.
    pub fn public_evm(&self) -> Vec<[u8; 32]> {
        self.z.get(1..self.num_instance).unwrap_or_default().iter().map(crate::field::to_be32).collect()
    }

    /// `"NXP1"`, the number of instance variables, then `z` and `h` (each a u32 count and
    /// 32-byte big-endian scalars); integers little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + 32 * (self.z.len() + self.h.len()));
        out.extend_from_slice(PREPARED_MAGIC);
        out.extend_from_slice(&(self.num_instance as u32).to_le_bytes());
        put_scalars(&mut out, &self.z);
        put_scalars(&mut out, &self.h);
        out
    }

    /// Decodes [`Prepared::to_bytes`]; the sizes must be the transfer circuit's.
    pub fn from_bytes(mut b: &[u8]) -> Result<Self, ZkError> {
        if take(&mut b, 4)? != PREPARED_MAGIC {
            return Err(ZkError::BadPart("not a prepared transfer assignment"));
        }
        let num_instance = take_u32(&mut b)? as usize;
        let z = take_scalars(&mut b)?;
        let h = take_scalars(&mut b)?;
        let m = Matrices::get()?;
        if !b.is_empty()
            || num_instance != m.num_instance()
            || z.len() != m.num_variables()
            || h.len() < m.num_constraints()
        {
            return Err(ZkError::BadPart("prepared assignment of the wrong size"));
        }
        Ok(Prepared { z, h, num_instance })
    }
}

fn put_point<P: CanonicalSerialize>(out: &mut Vec<u8>, p: &P) {
    // Serializing a valid affine point into a Vec cannot fail.
    let _ = p.serialize_uncompressed(out);
}

fn take_point<P: CanonicalDeserialize>(b: &mut &[u8], len: usize) -> Result<P, ZkError> {
    P::deserialize_uncompressed(take(b, len)?).map_err(|_| ZkError::BadPart("point not on its curve or subgroup"))
}

impl Part {
    /// `"NXM1"`, k, n (u32 little-endian), then A, B₁, L, H (G1) and B₂ (G2) as arkworks'
    /// uncompressed affine points: [`PART_BYTES`] bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(PART_BYTES);
        out.extend_from_slice(PART_MAGIC);
        out.extend_from_slice(&self.k.to_le_bytes());
        out.extend_from_slice(&self.n.to_le_bytes());
        for p in [self.a, self.b_g1, self.l, self.h] {
            put_point(&mut out, &p.into_affine());
        }
        put_point(&mut out, &self.b_g2.into_affine());
        out
    }

    /// Decodes [`Part::to_bytes`], checking the index and every point.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ZkError> {
        if bytes.len() != PART_BYTES {
            return Err(ZkError::BadPart("a part is 396 bytes"));
        }
        let mut b = bytes;
        if take(&mut b, 4)? != PART_MAGIC {
            return Err(ZkError::BadPart("not an MSM part"));
        }
        let (k, n) = (take_u32(&mut b)?, take_u32(&mut b)?);
        check_part_index(k, n)?;
        let mut g1 = || take_point::<G1Affine>(&mut b, 64).map(G1Projective::from);
        let (a, b_g1, l, h) = (g1()?, g1()?, g1()?, g1()?);
        let b_g2 = G2Projective::from(take_point::<G2Affine>(&mut b, 128)?);
        Ok(Part { k, n, a, b_g1, l, h, b_g2 })
    }
}
