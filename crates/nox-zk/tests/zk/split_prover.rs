//! The split prover (issue 31): proofs from 1, 2 and 3 parts verify with the real verifying key
//! and, with the same blinding r, s, equal arkworks' own proof bit for bit; bad inputs are refused.

use crate::transfer::tx;
use ark_bn254::{Bn254, Fr};
use ark_groth16::Groth16;
use ark_std::UniformRand;
use nox_zk::{
    ZkError,
    split_prover::{Part, Prepared, finish, finish_evm, msm_part, prepare},
    transfer::{self, Matrices},
};

fn parts(prep: &Prepared, n: u32) -> Vec<Part> {
    let (pk, _) = transfer::testnet_keys().expect("setup");
    (0..n).map(|k| msm_part(pk, prep, k, n).expect("part")).collect()
}

#[test]
fn split_proofs_verify_and_equal_arkworks_bit_for_bit() {
    let (pk, vk) = transfer::testnet_keys().expect("setup");
    let (p, w) = tx(60, &[60, 40], &[70, 25], 0, 0, 5).expect("honest");
    let prep = prepare(&p, &w).expect("prepare");
    // The encodings round-trip (what the Workers pass each other).
    let prep = Prepared::from_bytes(&prep.to_bytes()).expect("prepared round-trips");
    let m = Matrices::get().expect("matrices");
    let z = transfer::assignment(&p, &w).expect("assignment");
    let mut rng = crate::common::rng(7);
    for n in 1..=3u32 {
        let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
        let mut ps = parts(&prep, n);
        ps.reverse(); // any order
        let ps: Vec<Part> = ps.iter().map(|x| Part::from_bytes(&x.to_bytes()).expect("part round-trips")).collect();
        let proof = finish(pk, &ps, r, s).expect("finish");
        transfer::verify(vk, &p, &proof).expect("a split proof verifies");
        let theirs = Groth16::<Bn254>::create_proof_with_reduction_and_matrices(
            pk,
            r,
            s,
            m.matrices(),
            m.num_instance(),
            m.num_constraints(),
            &z,
        )
        .expect("arkworks");
        assert_eq!(proof, theirs, "n = {n}: the split proof must equal arkworks' with the same r, s");
    }
    // The wallet's path: seeded blinding, verified, EVM-encoded.
    let evm = finish_evm(pk, &prep, &parts(&prep, 2), [5; 32]).expect("finish_evm");
    transfer::verify(vk, &p, &nox_zk::groth16::proof_from_evm(&evm).expect("decodes")).expect("verifies");
}

#[test]
fn bad_inputs_are_refused() {
    let (pk, _) = transfer::testnet_keys().expect("setup");
    let (p, w) = tx(61, &[100], &[100], 0, 0, 0).expect("honest");
    let prep = prepare(&p, &w).expect("prepare");
    let bad = |r: Result<Part, ZkError>| matches!(r, Err(ZkError::BadPart(_)));
    assert!(bad(msm_part(pk, &prep, 2, 2)), "part index ≥ n");
    assert!(bad(msm_part(pk, &prep, 0, 0)), "zero parts");
    // Another circuit's key (the insertion key) is refused by shape.
    let (ipk, _) = crate::common::insert_keys();
    assert!(matches!(msm_part(ipk, &prep, 0, 1), Err(ZkError::Encoding(_))));
    let ps = parts(&prep, 3);
    let (r, s) = (Fr::from(3u64), Fr::from(4u64));
    assert!(matches!(finish(pk, &ps[..2], r, s), Err(ZkError::BadPart(_))), "a part missing");
    assert!(matches!(finish(pk, &[ps[0], ps[0], ps[1]], r, s), Err(ZkError::BadPart(_))), "a part twice");
    assert!(matches!(finish(pk, &[], r, s), Err(ZkError::BadPart(_))), "no parts");
    let two = parts(&prep, 2);
    assert!(matches!(finish(pk, &[ps[0], two[1], ps[2]], r, s), Err(ZkError::BadPart(_))), "mixed splits");
    // Encodings: truncated, wrong magic, a point off its curve, a non-canonical scalar.
    let b = ps[1].to_bytes();
    assert!(Part::from_bytes(&b[..b.len() - 1]).is_err());
    let mut m = b.clone();
    m[0] ^= 1;
    assert!(Part::from_bytes(&m).is_err());
    let mut off = b.clone();
    off[12] ^= 1;
    assert!(Part::from_bytes(&off).is_err(), "a point off the curve");
    let pb = prep.to_bytes();
    assert!(Prepared::from_bytes(&pb[..pb.len() - 32]).is_err(), "truncated");
    let mut nc = pb.clone();
    nc[12..44].fill(0xff);
    assert!(Prepared::from_bytes(&nc).is_err(), "a scalar ≥ r");
    // A witness that does not satisfy the statement is refused before any MSM.
    let (p2, _) = tx(62, &[100], &[100], 0, 0, 0).expect("another");
    assert!(matches!(prepare(&p2, &w), Err(ZkError::Snark(_))));
}
