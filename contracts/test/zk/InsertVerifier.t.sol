// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {InsertVerifier} from "../../src/zk/InsertVerifier.sol";
import {PoolVectors as V} from "./PoolVectors.sol";

/// The generated insertion verifier against the Rust prover's proofs (PoolVectors).
contract InsertVerifierTest is Test {
    uint256 internal constant R = 21888242871839275222246405745257275088548364400416034343698204186575808495617;

    InsertVerifier internal verifier;

    function setUp() public {
        verifier = new InsertVerifier();
    }

    function test_acceptsEveryVectorProof() public view {
        assertTrue(verifier.verifyProof(V.insert1Proof(), V.insert1Inputs()));
        assertTrue(verifier.verifyProof(V.insert2Proof(), V.insert2Inputs()));
        assertTrue(verifier.verifyProof(V.extraProof(), V.extraInputs()));
        assertTrue(verifier.verifyProof(V.fullProof(), V.fullInputs()));
    }

    /// Every one of the 35 inputs is bound (old root, new root, start index, each of the 32 leaves).
    function test_refusesEveryChangedInput() public view {
        uint256[8] memory proof = V.insert2Proof();
        for (uint256 i = 0; i < 35; ++i) {
            uint256[35] memory input = V.insert2Inputs();
            input[i] = (input[i] + 1) % R;
            assertFalse(verifier.verifyProof(proof, input));
        }
    }

    function test_refusesNonCanonicalInputs() public view {
        uint256[8] memory proof = V.insert1Proof();
        for (uint256 i = 0; i < 35; ++i) {
            uint256[35] memory input = V.insert1Inputs();
            input[i] += R;
            assertFalse(verifier.verifyProof(proof, input));
        }
    }

    /// One batch's proof is not another's.
    function test_refusesAnotherBatchsProof() public view {
        assertFalse(verifier.verifyProof(V.insert1Proof(), V.insert2Inputs()));
        assertFalse(verifier.verifyProof(V.extraProof(), V.insert2Inputs()));
    }
}
