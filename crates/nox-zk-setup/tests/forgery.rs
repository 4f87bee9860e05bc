//! Issue 29 item 4: a key grown from public secrets is forgeable, and the ceremony refuses to
//! make one. Two attacks, each first performed against the key the old code produced, then
//! refused:
//!
//! 1. Powers of tau with no contribution (τ = α = β = 1, public), then an honest phase-2
//!    contribution (δ secret): knowing τ, α and β the forger computes the discrete logarithm of
//!    every `gamma_abc_g1` point and builds a proof from `δ·G1` alone (the simulator's trapdoor).
//! 2. Honest powers of tau, but no phase-2 contribution (δ = 1): the forger needs no secret at
//!    all, only the key's `α·G1`, `β·G1`, `β·G2` and `gamma_abc_g1`.
//!
//! The forged statement is false: "I know w with w² = 5" where 5 is a quadratic non-residue in
//! BN254's scalar field, so no witness exists and no honest prover could produce the proof.

use ark_bn254::{Bn254, Fr, G1Affine, G1Projective, G2Affine};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{Field, One, Zero};
use ark_groth16::{Groth16, Proof, ProvingKey};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use ark_r1cs_std::{alloc::AllocVar, eq::EqGadget, fields::fp::FpVar};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, ConstraintSystemRef, OptimizationGoal, R1CS_PREDICATE_LABEL,
    SynthesisError, SynthesisMode,
};
use ark_snark::SNARK;
use nox_zk_setup::{Phase1, Phase2, SetupError, pok::random_nonzero};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn rng(seed: u8) -> ChaCha20Rng {
    ChaCha20Rng::from_seed([seed; 32])
}

/// Public `x`, private `w`, `w² = x`.
#[derive(Clone)]
struct Square {
    x: Fr,
    w: Option<Fr>,
}

impl ConstraintSynthesizer<Fr> for Square {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let x = FpVar::new_input(cs.clone(), || Ok(self.x))?;
        let w = FpVar::new_witness(cs, || self.w.ok_or(SynthesisError::AssignmentMissing))?;
        (&w * &w).enforce_equal(&x)
    }
}

fn blank() -> Square {
    Square { x: Fr::zero(), w: None }
}

/// The false statement: 5 has no square root in Fr.
fn false_statement() -> Fr {
    let x = Fr::from(5u64);
    assert!(x.legendre().is_qnr(), "5 must be a non-residue for the statement to be false");
    x
}

/// The discrete logarithms of `gamma_abc_g1` (γ = 1) for powers with known τ, α, β: each input
/// variable's `β·u_i(τ) + α·v_i(τ) + w_i(τ)`, from the circuit's public matrices exactly as
/// phase 2 arranges them (input i also on the A side of row `constraints + i`).
fn input_dlogs(circuit: Square, tau: Fr, alpha: Fr, beta: Fr) -> Vec<Fr> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Setup);
    circuit.generate_constraints(cs.clone()).expect("synthesis");
    cs.finalize();
    let (nc, ni) = (cs.num_constraints(), cs.num_instance_variables());
    let m = cs.to_matrices().expect("matrices").remove(R1CS_PREDICATE_LABEL).expect("R1CS");
    let domain = Radix2EvaluationDomain::<Fr>::new(nc + ni).expect("domain");
    let lag = domain.evaluate_all_lagrange_coefficients(tau);
    let mut uvw = vec![[Fr::zero(); 3]; ni];
    for (k, matrix) in m.iter().enumerate() {
        for (j, row) in matrix.iter().enumerate() {
            for (coeff, i) in row {
                if *i < ni {
                    uvw[*i][k] += *coeff * lag[j];
                }
            }
        }
    }
    for (i, e) in uvw.iter_mut().enumerate() {
        e[0] += lag[nc + i];
    }
    uvw.iter().map(|[u, v, w]| beta * u + alpha * v + w).collect()
}

/// Attack 1: τ, α, β known, δ unknown. With `ic` the discrete log of the statement's input
/// point and random b, c: `A = ((αβ + ic)/b)·G1 + (c/b)·δG1`, `B = b·G2`, `C = c·G1`, so
/// `e(A, B) = e(G1, G2)^(αβ + ic + cδ) = e(α·G1, β·G2)·e(IC, G2)·e(C, δ·G2)`.
fn forge_with_known_powers(pk: &ProvingKey<Bn254>, x: Fr, tau: Fr, alpha: Fr, beta: Fr) -> Option<Proof<Bn254>> {
    let dlogs = input_dlogs(blank(), tau, alpha, beta);
    let g1 = G1Affine::generator();
    // The forger can check it really knows the discrete logs.
    let known = dlogs.iter().zip(&pk.vk.gamma_abc_g1).all(|(d, p)| (g1 * d).into_affine() == *p);
    if !known {
        return None;
    }
    let ic = dlogs[0] + x * dlogs[1];
    let mut r = rng(90);
    let (b, c) = (random_nonzero(&mut r), random_nonzero(&mut r));
    let b_inv = b.inverse().expect("nonzero");
    let a = g1 * ((alpha * beta + ic) * b_inv) + pk.delta_g1 * (c * b_inv);
    Some(Proof { a: a.into_affine(), b: (G2Affine::generator() * b).into_affine(), c: (g1 * c).into_affine() })
}

/// Attack 2: δ = 1, no secret known. With random a, b: `A = α·G1 + a·G1`, `B = β·G2 + b·G2`,
/// `C = b·α·G1 + a·β·G1 + ab·G1 − IC`, so `e(A, B) = e(α, β)·e(IC, G2)·e(C, G2)`.
fn forge_with_delta_one(pk: &ProvingKey<Bn254>, x: Fr) -> Proof<Bn254> {
    let mut r = rng(91);
    let (a, b) = (random_nonzero(&mut r), random_nonzero(&mut r));
    let (g1, g2) = (G1Affine::generator(), G2Affine::generator());
    let ic: G1Projective = pk.vk.gamma_abc_g1[0].into_group() + pk.vk.gamma_abc_g1[1] * x;
    let big_a = pk.vk.alpha_g1.into_group() + g1 * a;
    let big_b = pk.vk.beta_g2.into_group() + g2 * b;
    let big_c = pk.vk.alpha_g1 * b + pk.beta_g1 * a + g1 * (a * b) - ic;
    Proof { a: big_a.into_affine(), b: big_b.into_affine(), c: big_c.into_affine() }
}

fn accepts(pk: &ProvingKey<Bn254>, x: Fr, proof: &Proof<Bn254>) -> bool {
    Groth16::<Bn254>::verify(&pk.vk, &[x], proof).expect("verify")
}

#[test]
fn a_key_from_uncontributed_powers_of_tau_is_forgeable_and_refused() {
    let x = false_statement();
    let p0 = Phase1::new(16).expect("new");
    // The attack against the old path: phase 2 over the starting powers, an honest δ
    // contribution, finalize accepted it (it only checked phase 2).
    let initial = Phase2::new_unchecked(&p0, blank()).expect("δ = 1 key over τ = 1");
    let q1 = initial.contribute(&mut rng(1)).expect("contribute");
    Phase2::verify(&initial, &initial, &q1, &mut rng(2)).expect("the δ contribution itself is valid");
    let pk = q1.finalize(&initial, &mut rng(3)).expect("phase 2 alone is fine");
    let one = Fr::one();
    let forged = forge_with_known_powers(pk, x, one, one, one).expect("τ = α = β = 1 are known");
    assert!(accepts(pk, x, &forged), "a proof of w² = 5 without any witness verifies");

    // The fix: no key is made from those powers, wherever a phase-1 file is read.
    assert!(matches!(p0.check_contributed(), Err(SetupError::Uncontributed { phase: 1, .. })));
    assert!(matches!(Phase2::new(&p0, blank()), Err(SetupError::Uncontributed { phase: 1, .. })));
    // Dressed-up variants: contribution records over starting points, contributed points with
    // the records stripped, a proof of knowledge moved to another secret.
    let p1 = p0.contribute(&mut rng(4)).expect("contribute");
    let p2 = p1.contribute(&mut rng(5)).expect("contribute");
    let mut bad = p0.clone();
    bad.contributions = p1.contributions.clone();
    assert!(matches!(bad.check_contributed(), Err(SetupError::Uncontributed { phase: 1, .. })), "generators");
    let mut bad = p1.clone();
    bad.contributions.clear();
    assert!(bad.check_contributed().is_err(), "records stripped");
    let mut bad = p1.clone();
    bad.contributions[0].alpha = bad.contributions[0].tau.clone();
    assert!(bad.check_contributed().is_err(), "proof of knowledge for another message");
    let mut bad = p2.clone();
    bad.contributions[0].previous = [9; 32];
    assert!(bad.check_contributed().is_err(), "first contribution not on the starting transcript");

    // Honest powers pass, and the same attack fails: the forger no longer knows the logs.
    p1.check_contributed().expect("one contribution");
    p2.check_contributed().expect("two contributions");
    let honest = Phase2::new(&p2, blank()).expect("contributed powers");
    let q = honest.contribute(&mut rng(6)).expect("contribute");
    let pk = q.finalize(&honest, &mut rng(7)).expect("honest key");
    assert!(forge_with_known_powers(pk, x, one, one, one).is_none());
    let proof =
        Groth16::<Bn254>::prove(pk, Square { x: Fr::from(9u64), w: Some(Fr::from(3u64)) }, &mut rng(8)).expect("prove");
    assert!(accepts(pk, Fr::from(9u64), &proof), "a true statement still proves");
}

#[test]
fn a_key_without_a_delta_contribution_is_forgeable_and_refused() {
    let x = false_statement();
    let p1 = Phase1::new(16).expect("new").contribute(&mut rng(10)).expect("contribute");
    let initial = Phase2::new(&p1, blank()).expect("δ = 1 key");
    // δ = 1: forged from the key's public points, with τ, α, β secret.
    let forged = forge_with_delta_one(initial.proving_key(), x);
    assert!(accepts(initial.proving_key(), x, &forged), "forged without any secret");

    assert!(matches!(initial.finalize(&initial, &mut rng(11)), Err(SetupError::Uncontributed { phase: 2, .. })));
    let q1 = initial.contribute(&mut rng(12)).expect("contribute");
    let q2 = q1.contribute(&mut rng(13)).expect("contribute");
    let mut bad = q1.clone();
    bad.key.delta_g1 = initial.key.delta_g1;
    bad.key.vk.delta_g2 = initial.key.vk.delta_g2;
    assert!(matches!(bad.check_contributed(), Err(SetupError::Uncontributed { phase: 2, .. })), "δ reset");
    let mut bad = q2.clone();
    bad.contributions[0].previous = [3; 32];
    assert!(bad.finalize(&initial, &mut rng(14)).is_err(), "proof of knowledge for another transcript");
    let mut bad = q1.clone();
    bad.contributions.clear();
    assert!(bad.finalize(&initial, &mut rng(14)).is_err(), "records stripped");

    for q in [&q1, &q2] {
        let pk = q.finalize(&initial, &mut rng(15)).expect("contributed δ");
        assert!(!accepts(pk, x, &forge_with_delta_one(pk, x)), "the δ = 1 forgery fails once δ is secret");
    }
}
