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
//!
//! The module is split by what a reader looks for: `context` holds the public
//! inputs and the context hash the pool recomputes; `witness` the private
//! witness and [`build`], which pads and checks a wallet's request; `circuit`
//! the constraints listed above; `prover` the keys, the shared constraint
//! matrices, proving and verification.

mod circuit;
mod context;
mod prover;
mod witness;

pub use circuit::{TransferCircuit, constraint_count, is_satisfied};
pub use context::{TransferContext, TransferPublic, notes_hash, public_amount};
pub use prover::{
    Keys, Matrices, ProveTimes, assignment, check_shape, prove, prove_evm, prove_seeded, prove_timed,
    proving_key_from_bytes, proving_key_to_bytes, setup, testnet_keys, testnet_setup, verify,
};
pub use witness::{OutputNote, SpentNote, TransferRequest, TransferWitness, build};

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
