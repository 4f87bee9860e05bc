//! Phase 2: the circuit-specific part (docs/spec/ceremony.md §3).
//!
//! [`Phase2::new`] turns a phase-1 transcript and a circuit into the proving key with δ = 1 (and
//! γ = 1), reproducing exactly the QAP of `ark-groth16` 0.6 (its `LibsnarkReduction`: a radix-2
//! domain of `constraints + inputs` points, one extra row per input, H query `τ^i·Z(τ)/δ`), so
//! the unmodified `Groth16::prove` and `Groth16::verify` work with the result. The Lagrange-basis
//! elements `L_j(τ)·G` come from an inverse FFT over the phase-1 powers (group elements are
//! coefficients for `ark-poly`'s FFT). Each [`Phase2::contribute`] multiplies δ by a fresh secret
//! and divides the L and H queries by it, with a proof of knowledge; [`Phase2::verify`] checks a
//! transcript against the one it extends and against the δ = 1 key recomputed from phase 1 and
//! the circuit, so a key that verifies is that circuit's key for those powers, whatever the
//! contributors did.

use crate::{SetupError, decode, encode, phase1::Phase1, pok::Pok, pok::random_nonzero, transcript_hash};
use ark_bn254::{Bn254, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM, pairing::Pairing};
use ark_ff::Field;
use ark_groth16::{ProvingKey, VerifyingKey};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, OptimizationGoal, R1CS_PREDICATE_LABEL, SynthesisMode,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rand_core::{CryptoRng, RngCore};
use rayon::prelude::*;
use zeroize::Zeroize;

const MAGIC: &[u8; 8] = b"NOXZKP01";

/// One δ contribution.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct Contribution {
    /// [`transcript_hash`] of the transcript it extended.
    pub previous: [u8; 32],
    /// Knowledge of the δ factor.
    pub delta: Pok,
}

/// A phase-2 transcript: the current proving key and its history.
#[derive(Clone, Debug, PartialEq, CanonicalSerialize, CanonicalDeserialize)]
pub struct Phase2 {
    /// [`transcript_hash`] of the δ = 1 transcript this one grew from (names the circuit and
    /// the phase-1 powers together).
    pub origin: [u8; 32],
    /// The proving key (with its verifying key).
    pub key: ProvingKey<Bn254>,
    /// Every contribution so far, oldest first.
    pub contributions: Vec<Contribution>,
}

fn message(previous: &[u8; 32], origin: &[u8; 32]) -> Vec<u8> {
    let mut m = b"NOX zk setup phase 2 delta".to_vec();
    m.extend_from_slice(origin);
    m.extend_from_slice(previous);
    m
}

fn lagrange_g1(domain: &Radix2EvaluationDomain<Fr>, powers: &[G1Affine]) -> Vec<G1Projective> {
    let mut v: Vec<G1Projective> = powers.iter().map(|p| p.into_group()).collect();
    domain.ifft_in_place(&mut v);
    v
}

fn lagrange_g2(domain: &Radix2EvaluationDomain<Fr>, powers: &[G2Affine]) -> Vec<G2Projective> {
    let mut v: Vec<G2Projective> = powers.iter().map(|p| p.into_group()).collect();
    domain.ifft_in_place(&mut v);
    v
}

impl Phase2 {
    /// The δ = 1 transcript of `circuit` over `phase1`'s powers. Refuses a phase-1 transcript
    /// whose secrets are public ([`Phase1::check_contributed`]): every key grown from it, with
    /// any number of δ contributions, is forgeable.
    pub fn new<C: ConstraintSynthesizer<Fr>>(phase1: &Phase1, circuit: C) -> Result<Phase2, SetupError> {
        phase1.check_contributed()?;
        Phase2::new_unchecked(phase1, circuit)
    }

    /// [`Phase2::new`] without the phase-1 check: builds the δ = 1 transcript over any powers,
    /// including the public starting ones (τ = α = β = 1). Never make a key with it; it exists
    /// so that the forgery against such a key can be shown (`tests/forgery.rs`).
    pub fn new_unchecked<C: ConstraintSynthesizer<Fr>>(phase1: &Phase1, circuit: C) -> Result<Phase2, SetupError> {
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_optimization_goal(OptimizationGoal::Constraints);
        cs.set_mode(SynthesisMode::Setup);
        circuit.generate_constraints(cs.clone()).map_err(|e| SetupError::Circuit(e.to_string()))?;
        cs.finalize();
        let nc = cs.num_constraints();
        let ni = cs.num_instance_variables();
        let nw = cs.num_witness_variables();
        let matrices = cs
            .to_matrices()
            .map_err(|e| SetupError::Circuit(e.to_string()))?
            .remove(R1CS_PREDICATE_LABEL)
            .ok_or(SetupError::Circuit("no R1CS constraints".into()))?;
        let [ma, mb, mc] = <[_; 3]>::try_from(matrices).map_err(|_| SetupError::Circuit("not R1CS".into()))?;
        let domain = Radix2EvaluationDomain::<Fr>::new(nc + ni)
            .ok_or(SetupError::TooSmall { needed: nc + ni, have: phase1.n() })?;
        let n = domain.size();
        if n > phase1.n() {
            return Err(SetupError::TooSmall { needed: n, have: phase1.n() });
        }
        let lag = lagrange_g1(&domain, &phase1.tau_g1[..n]);
        let lag_alpha = lagrange_g1(&domain, &phase1.alpha_tau_g1[..n]);
        let lag_beta = lagrange_g1(&domain, &phase1.beta_tau_g1[..n]);
        let lag_g2 = lagrange_g2(&domain, &phase1.tau_g2[..n]);

        // Column by column: every query element is one multi-scalar multiplication over the
        // Lagrange points of the rows the variable appears in (Pippenger beats one scalar
        // multiplication per matrix entry several times over).
        let vars = ni + nw;
        let mut cols: Vec<[Vec<(Fr, usize)>; 3]> = vec![Default::default(); vars];
        for (m, matrix) in [&ma, &mb, &mc].into_iter().enumerate() {
            for (j, row) in matrix.iter().enumerate() {
                for (coeff, idx) in row {
                    cols[*idx][m].push((*coeff, j));
                }
            }
        }
        let msm1 = |terms: &[(Fr, usize)], bases: &[G1Projective]| -> G1Projective {
            let b: Vec<G1Affine> =
                G1Projective::normalize_batch(&terms.iter().map(|(_, j)| bases[*j]).collect::<Vec<_>>());
            let s: Vec<Fr> = terms.iter().map(|(c, _)| *c).collect();
            G1Projective::msm_unchecked(&b, &s)
        };
        // Sequential over variables: each MSM parallelises itself, and nesting rayon work inside
        // a parallel iterator over 10^4 items overflowed a worker's stack.
        let results: Vec<(G1Projective, G1Projective, G2Projective, G1Projective)> = cols
            .iter()
            .enumerate()
            .map(|(i, [ca, cb, cc])| {
                let mut a = msm1(ca, &lag);
                let b1 = msm1(cb, &lag);
                let b2_bases: Vec<G2Affine> =
                    G2Projective::normalize_batch(&cb.iter().map(|(_, j)| lag_g2[*j]).collect::<Vec<_>>());
                let b2_scalars: Vec<Fr> = cb.iter().map(|(c, _)| *c).collect();
                let b2 = G2Projective::msm_unchecked(&b2_bases, &b2_scalars);
                let mut abc = msm1(ca, &lag_beta) + msm1(cb, &lag_alpha) + msm1(cc, &lag);
                // The reduction's extra rows: input i is constrained at row nc + i (A side only).
                if i < ni {
                    a += lag[nc + i];
                    abc += lag_beta[nc + i];
                }
                (a, b1, b2, abc)
            })
            .collect();
        let a: Vec<G1Projective> = results.iter().map(|r| r.0).collect();
        let b1: Vec<G1Projective> = results.iter().map(|r| r.1).collect();
        let b2: Vec<G2Projective> = results.iter().map(|r| r.2).collect();
        let abc: Vec<G1Projective> = results.iter().map(|r| r.3).collect();
        // H: τ^i·Z(τ) = τ^(i+n) − τ^i, i < n − 1.
        let h: Vec<G1Projective> =
            (0..n - 1).into_par_iter().map(|i| phase1.tau_g1[i + n].into_group() - phase1.tau_g1[i]).collect();
        let vk = VerifyingKey::<Bn254> {
            alpha_g1: phase1.alpha_tau_g1[0],
            beta_g2: phase1.beta_g2,
            gamma_g2: G2Affine::generator(),
            delta_g2: G2Affine::generator(),
            gamma_abc_g1: G1Projective::normalize_batch(&abc[..ni]),
        };
        let key = ProvingKey {
            vk,
            beta_g1: phase1.beta_tau_g1[0],
            delta_g1: G1Affine::generator(),
            a_query: G1Projective::normalize_batch(&a),
            b_g1_query: G1Projective::normalize_batch(&b1),
            b_g2_query: G2Projective::normalize_batch(&b2),
            h_query: G1Projective::normalize_batch(&h),
            l_query: G1Projective::normalize_batch(&abc[ni..]),
        };
        let mut p = Phase2 { origin: [0; 32], key, contributions: Vec::new() };
        p.origin = transcript_hash(&p.to_bytes()?);
        Ok(p)
    }

    /// The file encoding.
    pub fn to_bytes(&self) -> Result<Vec<u8>, SetupError> {
        encode(MAGIC, self)
    }

    /// Parses a file (points checked).
    pub fn from_bytes(bytes: &[u8]) -> Result<Phase2, SetupError> {
        decode(MAGIC, bytes)
    }

    /// Adds a δ contribution with a secret from `rng`, erased before returning.
    pub fn contribute<R: RngCore + CryptoRng>(&self, rng: &mut R) -> Result<Phase2, SetupError> {
        let previous = transcript_hash(&self.to_bytes()?);
        let mut d = random_nonzero(rng);
        let mut d_inv = d.inverse().ok_or(SetupError::Invalid("zero secret"))?;
        let delta = Pok::prove(&d, &message(&previous, &self.origin), rng);
        let mut key = self.key.clone();
        key.delta_g1 = (key.delta_g1 * d).into_affine();
        key.vk.delta_g2 = (key.vk.delta_g2 * d).into_affine();
        let scale = |v: &[G1Affine]| {
            let p: Vec<G1Projective> = v.par_iter().map(|x| *x * d_inv).collect();
            G1Projective::normalize_batch(&p)
        };
        key.l_query = scale(&key.l_query);
        key.h_query = scale(&key.h_query);
        d.zeroize();
        d_inv.zeroize();
        let mut contributions = self.contributions.clone();
        contributions.push(Contribution { previous, delta });
        Ok(Phase2 { origin: self.origin, key, contributions })
    }

    /// Checks that `next` is `prev` plus one valid contribution, and that `next` is a valid
    /// key for `initial` (the δ = 1 transcript recomputed by the verifier with [`Phase2::new`]).
    pub fn verify<R: RngCore + CryptoRng>(
        initial: &Phase2,
        prev: &Phase2,
        next: &Phase2,
        rng: &mut R,
    ) -> Result<(), SetupError> {
        let bad = |m| Err(SetupError::Invalid(m));
        if prev.origin != initial.origin || next.origin != initial.origin {
            return bad("the transcript is for another circuit or other powers of tau");
        }
        let k = prev.contributions.len();
        if next.contributions.len() != k + 1 || next.contributions[..k] != prev.contributions[..] {
            return bad("the new transcript does not extend the previous one's contributions by one");
        }
        let c = &next.contributions[k];
        if c.previous != transcript_hash(&prev.to_bytes()?) {
            return bad("the contribution names another previous transcript");
        }
        if !c.delta.verify(&message(&c.previous, &next.origin)) {
            return bad("the proof of knowledge does not verify");
        }
        let g2 = G2Affine::generator();
        if Bn254::pairing(next.key.delta_g1, g2) != Bn254::pairing(prev.key.delta_g1, c.delta.g2) {
            return bad("the new δ is not the old one times the proven secret");
        }
        next.check_against(initial, rng)
    }

    /// Checks that this transcript's key is `initial`'s with some δ: every δ-independent part
    /// equal, `δ·G1` and `δ·G2` consistent, and the L and H queries divided by that δ.
    pub fn check_against<R: RngCore + CryptoRng>(&self, initial: &Phase2, rng: &mut R) -> Result<(), SetupError> {
        let bad = |m| Err(SetupError::Invalid(m));
        let (k, i) = (&self.key, &initial.key);
        if k.vk.alpha_g1 != i.vk.alpha_g1
            || k.vk.beta_g2 != i.vk.beta_g2
            || k.vk.gamma_g2 != i.vk.gamma_g2
            || k.vk.gamma_abc_g1 != i.vk.gamma_abc_g1
            || k.beta_g1 != i.beta_g1
            || k.a_query != i.a_query
            || k.b_g1_query != i.b_g1_query
            || k.b_g2_query != i.b_g2_query
            || k.l_query.len() != i.l_query.len()
            || k.h_query.len() != i.h_query.len()
        {
            return bad("a δ-independent part of the key differs from the circuit's");
        }
        let g1 = G1Affine::generator();
        let g2 = G2Affine::generator();
        if Bn254::pairing(k.delta_g1, g2) != Bn254::pairing(g1, k.vk.delta_g2) {
            return bad("δ·G1 and δ·G2 disagree");
        }
        for (now, then) in [(&k.l_query, &i.l_query), (&k.h_query, &i.h_query)] {
            let r: Vec<Fr> = (0..now.len()).map(|_| random_nonzero(rng)).collect();
            let a = G1Projective::msm_unchecked(now, &r);
            let b = G1Projective::msm_unchecked(then, &r);
            // e(Σ r·X/δ, δ·G2) == e(Σ r·X, G2)
            if Bn254::pairing(a, k.vk.delta_g2) != Bn254::pairing(b, g2) {
                return bad("the L or H query is not the circuit's divided by δ");
            }
        }
        Ok(())
    }

    /// Checks that δ is not the public starting value: at least one contribution, every proof of knowledge verifying, `δ·G1`
    /// and `δ·G2` not the generators, and with a single contribution `δ·G1` exactly its proven
    /// secret. With δ = 1 anyone can forge a proof from the key's public points alone, even over
    /// honest powers of tau (`tests/forgery.rs`).
    pub fn check_contributed(&self) -> Result<(), SetupError> {
        let none = |why| Err(SetupError::Uncontributed { phase: 2, why });
        if self.contributions.is_empty() {
            return none("no contribution: δ = 1");
        }
        if self.key.delta_g1 == G1Affine::generator() || self.key.vk.delta_g2 == G2Affine::generator() {
            return none("δ is still 1: δ·G1 or δ·G2 is its generator");
        }
        if self.contributions.iter().any(|c| !c.delta.verify(&message(&c.previous, &self.origin))) {
            return none("a contribution's proof of knowledge does not verify");
        }
        if let [only] = self.contributions.as_slice()
            && self.key.delta_g1 != only.delta.g1
        {
            return none("δ is not the single contribution's proven secret");
        }
        Ok(())
    }

    /// The key to publish: [`Phase2::check_contributed`], the first contribution extending
    /// `initial`, then [`Phase2::check_against`] the
    /// δ = 1 transcript the caller recomputed with [`Phase2::new`] (which refuses uncontributed
    /// powers of tau).
    pub fn finalize<R: RngCore + CryptoRng>(
        &self,
        initial: &Phase2,
        rng: &mut R,
    ) -> Result<&ProvingKey<Bn254>, SetupError> {
        self.check_contributed()?;
        if self.origin != initial.origin {
            return Err(SetupError::Invalid("the transcript is for another circuit or other powers of tau"));
        }
        if self.contributions.first().map(|c| c.previous) != Some(transcript_hash(&initial.to_bytes()?)) {
            return Err(SetupError::Uncontributed {
                phase: 2,
                why: "the first contribution does not extend the δ = 1 transcript",
            });
        }
        self.check_against(initial, rng)?;
        Ok(&self.key)
    }

    /// The final proving key (its `vk` is the verifying key).
    pub fn proving_key(&self) -> &ProvingKey<Bn254> {
        &self.key
    }
}
