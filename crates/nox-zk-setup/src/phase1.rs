//! Phase 1: powers of tau over BN254 (docs/spec/ceremony.md §2).
//!
//! A transcript of size `n` (a power of two) holds `τ^i·G1` for `i < 2n − 1`, `τ^i·G2`,
//! `α·τ^i·G1` and `β·τ^i·G1` for `i < n`, and `β·G2`. It starts from τ = α = β = 1 ([`Phase1::new`]);
//! each contribution multiplies τ, α and β by fresh secrets and proves knowledge of them
//! ([`Phase1::contribute`]). [`Phase1::verify`] checks one contribution against its predecessor:
//! the proofs of knowledge (bound to the predecessor's hash), that the new τ, α, β are the old
//! ones times the proven secrets, and that every sequence is geometric with the same τ (random
//! linear combinations: two multi-scalar multiplications and one pairing equation per sequence).

use crate::{SetupError, decode, encode, pok::Pok, pok::random_nonzero, transcript_hash};
use ark_bn254::{Bn254, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM, pairing::Pairing};
use ark_ff::One;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rand_core::{CryptoRng, RngCore};
use rayon::prelude::*;
use zeroize::Zeroize;

const MAGIC: &[u8; 8] = b"NOXPOT01";
/// Largest supported size (2^20: circuits of up to about a million constraints).
pub const MAX_SIZE: usize = 1 << 20;

/// One contribution's record: what it extended and its proofs of knowledge.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct Contribution {
    /// [`transcript_hash`] of the transcript this contribution extended.
    pub previous: [u8; 32],
    /// Knowledge of the τ factor.
    pub tau: Pok,
    /// Knowledge of the α factor.
    pub alpha: Pok,
    /// Knowledge of the β factor.
    pub beta: Pok,
}

/// A powers-of-tau transcript.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct Phase1 {
    /// `n`.
    pub size: u64,
    /// `τ^i·G1`, `i < 2n − 1`.
    pub tau_g1: Vec<G1Affine>,
    /// `τ^i·G2`, `i < n`.
    pub tau_g2: Vec<G2Affine>,
    /// `α·τ^i·G1`, `i < n`.
    pub alpha_tau_g1: Vec<G1Affine>,
    /// `β·τ^i·G1`, `i < n`.
    pub beta_tau_g1: Vec<G1Affine>,
    /// `β·G2`.
    pub beta_g2: G2Affine,
    /// Every contribution so far, oldest first.
    pub contributions: Vec<Contribution>,
}

fn message(previous: &[u8; 32], what: &str) -> Vec<u8> {
    let mut m = b"NOX zk setup phase 1 ".to_vec();
    m.extend_from_slice(what.as_bytes());
    m.extend_from_slice(previous);
    m
}

/// `base[i] · factor · step^i`, normalised.
fn scale_g1(base: &[G1Affine], factor: Fr, step: Fr) -> Vec<G1Affine> {
    let powers = powers(factor, step, base.len());
    let v: Vec<G1Projective> = base.par_iter().zip(powers.par_iter()).map(|(p, s)| *p * s).collect();
    G1Projective::normalize_batch(&v)
}

fn scale_g2(base: &[G2Affine], factor: Fr, step: Fr) -> Vec<G2Affine> {
    let powers = powers(factor, step, base.len());
    let v: Vec<G2Projective> = base.par_iter().zip(powers.par_iter()).map(|(p, s)| *p * s).collect();
    G2Projective::normalize_batch(&v)
}

fn powers(first: Fr, step: Fr, n: usize) -> Vec<Fr> {
    let mut out = Vec::with_capacity(n);
    let mut cur = first;
    for _ in 0..n {
        out.push(cur);
        cur *= step;
    }
    out
}

/// `Σ r_i · points[i]` and `Σ r_i · points[i + 1]` for `i < points.len() − 1`.
fn shifted_combinations<G: AffineRepr>(points: &[G], r: &[Fr]) -> (G::Group, G::Group)
where
    G::Group: VariableBaseMSM<MulBase = G, ScalarField = Fr>,
{
    let k = points.len() - 1;
    let lo = G::Group::msm_unchecked(&points[..k], &r[..k]);
    let hi = G::Group::msm_unchecked(&points[1..], &r[..k]);
    (lo, hi)
}

fn same_ratio(a1: G1Projective, b2: G2Affine, c1: G1Projective, d2: G2Affine) -> bool {
    // e(a1, b2) == e(c1, d2)
    Bn254::pairing(a1, b2) == Bn254::pairing(c1, d2)
}

impl Phase1 {
    /// The starting transcript of size `n` (τ = α = β = 1).
    pub fn new(n: usize) -> Result<Phase1, SetupError> {
        if !(2..=MAX_SIZE).contains(&n) || !n.is_power_of_two() {
            return Err(SetupError::BadSize(n));
        }
        let g1 = G1Affine::generator();
        let g2 = G2Affine::generator();
        Ok(Phase1 {
            size: n as u64,
            tau_g1: vec![g1; 2 * n - 1],
            tau_g2: vec![g2; n],
            alpha_tau_g1: vec![g1; n],
            beta_tau_g1: vec![g1; n],
            beta_g2: g2,
            contributions: Vec::new(),
        })
    }

    /// `n` as a usize.
    pub fn n(&self) -> usize {
        self.size as usize
    }

    /// The file encoding.
    pub fn to_bytes(&self) -> Result<Vec<u8>, SetupError> {
        encode(MAGIC, self)
    }

    /// Parses a file (points checked) and its shape.
    pub fn from_bytes(bytes: &[u8]) -> Result<Phase1, SetupError> {
        let p: Phase1 = decode(MAGIC, bytes)?;
        let n = usize::try_from(p.size).map_err(|_| SetupError::BadSize(usize::MAX))?;
        if !(2..=MAX_SIZE).contains(&n) || !n.is_power_of_two() {
            return Err(SetupError::BadSize(n));
        }
        if p.tau_g1.len() != 2 * n - 1 || p.tau_g2.len() != n || p.alpha_tau_g1.len() != n || p.beta_tau_g1.len() != n {
            return Err(SetupError::Format("sequence lengths do not match the size"));
        }
        Ok(p)
    }

    /// Adds a contribution with secrets from `rng`; the secrets are erased before returning.
    pub fn contribute<R: RngCore + CryptoRng>(&self, rng: &mut R) -> Result<Phase1, SetupError> {
        let previous = transcript_hash(&self.to_bytes()?);
        let mut t = random_nonzero(rng);
        let mut a = random_nonzero(rng);
        let mut b = random_nonzero(rng);
        let contribution = Contribution {
            previous,
            tau: Pok::prove(&t, &message(&previous, "tau"), rng),
            alpha: Pok::prove(&a, &message(&previous, "alpha"), rng),
            beta: Pok::prove(&b, &message(&previous, "beta"), rng),
        };
        let mut next = Phase1 {
            size: self.size,
            tau_g1: scale_g1(&self.tau_g1, Fr::one(), t),
            tau_g2: scale_g2(&self.tau_g2, Fr::one(), t),
            alpha_tau_g1: scale_g1(&self.alpha_tau_g1, a, t),
            beta_tau_g1: scale_g1(&self.beta_tau_g1, b, t),
            beta_g2: (self.beta_g2 * b).into_affine(),
            contributions: self.contributions.clone(),
        };
        next.contributions.push(contribution);
        t.zeroize();
        a.zeroize();
        b.zeroize();
        Ok(next)
    }

    /// Whether this is exactly the starting transcript of its size.
    pub fn is_initial(&self) -> bool {
        Phase1::new(self.n()).is_ok_and(|p| &p == self)
    }

    /// Checks that this transcript's secrets are not the public starting ones, so that a key may
    /// be made from it: at least one contribution; the first extends the starting transcript of
    /// this size; every proof of knowledge verifies for the transcript it names; none of `τ·G1`,
    /// `τ·G2`, `α·G1`, `β·G1`, `β·G2` is its generator; and with a single contribution, those
    /// points are exactly its proven secrets. The starting transcript (τ = α = β = 1) passes
    /// [`Phase1::verify`]'s structure checks but every secret of it is public: a key grown from
    /// it is forgeable whatever phase 2 does (`tests/forgery.rs`). This does not replace
    /// verifying the chain of contributions step by step (only that shows the secrets are the
    /// contributors' product); it refuses the transcript whose secrets are known to everyone.
    pub fn check_contributed(&self) -> Result<(), SetupError> {
        let none = |why| Err(SetupError::Uncontributed { phase: 1, why });
        let Some(first) = self.contributions.first() else {
            return none("no contribution: τ = α = β = 1");
        };
        let g1 = G1Affine::generator();
        let g2 = G2Affine::generator();
        if self.tau_g1[1] == g1
            || self.tau_g2[1] == g2
            || self.alpha_tau_g1[0] == g1
            || self.beta_tau_g1[0] == g1
            || self.beta_g2 == g2
        {
            return none("τ, α or β is still 1: a point is its generator");
        }
        for c in &self.contributions {
            for (pok, what) in [(&c.tau, "tau"), (&c.alpha, "alpha"), (&c.beta, "beta")] {
                if !pok.verify(&message(&c.previous, what)) {
                    return none("a contribution's proof of knowledge does not verify");
                }
            }
        }
        if first.previous != transcript_hash(&Phase1::new(self.n())?.to_bytes()?) {
            return none("the first contribution does not extend the starting transcript");
        }
        if let [only] = self.contributions.as_slice()
            && (self.tau_g1[1] != only.tau.g1
                || self.alpha_tau_g1[0] != only.alpha.g1
                || self.beta_tau_g1[0] != only.beta.g1)
        {
            return none("the secrets are not the single contribution's proven ones");
        }
        Ok(())
    }

    /// Checks that `next` is `prev` plus one valid contribution. `rng` draws the random
    /// coefficients of the batched checks (the verifier's own randomness).
    pub fn verify<R: RngCore + CryptoRng>(prev: &Phase1, next: &Phase1, rng: &mut R) -> Result<(), SetupError> {
        let bad = |m| Err(SetupError::Invalid(m));
        if prev.size != next.size {
            return bad("the transcripts have different sizes");
        }
        let k = prev.contributions.len();
        if next.contributions.len() != k + 1 || next.contributions[..k] != prev.contributions[..] {
            return bad("the new transcript does not extend the previous one's contributions by one");
        }
        let c = &next.contributions[k];
        if c.previous != transcript_hash(&prev.to_bytes()?) {
            return bad("the contribution names another previous transcript");
        }
        for (pok, what) in [(&c.tau, "tau"), (&c.alpha, "alpha"), (&c.beta, "beta")] {
            if !pok.verify(&message(&c.previous, what)) {
                return bad("a proof of knowledge does not verify");
            }
        }
        let g2 = G2Affine::generator();
        // The new τ, α, β are the old ones times the proven secrets.
        if !same_ratio(next.tau_g1[1].into(), g2, prev.tau_g1[1].into(), c.tau.g2)
            || !same_ratio(next.alpha_tau_g1[0].into(), g2, prev.alpha_tau_g1[0].into(), c.alpha.g2)
            || !same_ratio(next.beta_tau_g1[0].into(), g2, prev.beta_tau_g1[0].into(), c.beta.g2)
        {
            return bad("the update does not match the proven secrets");
        }
        next.check_structure(rng)
    }

    /// Checks the transcript's internal consistency: starts at the generators, every sequence
    /// geometric with the same τ, `β·G2` matching `β·G1`.
    pub fn check_structure<R: RngCore + CryptoRng>(&self, rng: &mut R) -> Result<(), SetupError> {
        let bad = |m| Err(SetupError::Invalid(m));
        let g1 = G1Affine::generator();
        let g2 = G2Affine::generator();
        if self.tau_g1[0] != g1 || self.tau_g2[0] != g2 {
            return bad("the powers do not start at the generators");
        }
        if self.tau_g1[1].is_zero() || self.alpha_tau_g1[0].is_zero() || self.beta_tau_g1[0].is_zero() {
            return bad("a secret is zero");
        }
        let r: Vec<Fr> = (0..self.tau_g1.len()).map(|_| random_nonzero(rng)).collect();
        let tau2 = self.tau_g2[1];
        let (lo, hi) = shifted_combinations(&self.tau_g1, &r);
        if !same_ratio(hi, g2, lo, tau2) {
            return bad("the τ powers in G1 are not a geometric sequence");
        }
        let (lo, hi) = shifted_combinations(&self.tau_g2, &r);
        if Bn254::pairing(self.tau_g1[1], lo) != Bn254::pairing(g1, hi) {
            return bad("the τ powers in G2 are not the G1 powers");
        }
        for seq in [&self.alpha_tau_g1, &self.beta_tau_g1] {
            let (lo, hi) = shifted_combinations(seq, &r);
            if !same_ratio(hi, g2, lo, tau2) {
                return bad("the α·τ or β·τ powers are not a geometric sequence in τ");
            }
        }
        if !same_ratio(self.beta_tau_g1[0].into(), g2, g1.into(), self.beta_g2) {
            return bad("β·G2 does not match β·G1");
        }
        Ok(())
    }
}
