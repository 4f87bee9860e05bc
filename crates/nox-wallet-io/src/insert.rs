//! `nox wallet insert`'s batch (issue 34: moved out of the command): the pool's next batch of
//! queued commitments as this wallet's view sees it, its insertion proved and checked, and the
//! `insertBatch` call's arguments. Sending it (and the race with the exits' inserters) is
//! [`crate::insert_race`] and [`crate::send`]; the caller shows the prover's progress.

use alloy::primitives::U256;
use ark_bn254::Fr;
use nox_wallet::PoolView;
use nox_wallet::state::BATCH_SIZE;
use nox_zk::field;
use nox_zk::insert::{InsertPublic, InsertWitness};
use thiserror::Error;

use crate::keys::ProvingKey;

/// Why a batch could not be built or proved.
#[derive(Debug, Error)]
pub enum InsertError {
    /// The view refused the statement.
    #[error("building the batch: {0}")]
    Statement(String),
    /// The prover failed.
    #[error("proving: {0}")]
    Prove(String),
    /// The new proof does not verify against the key's own verifying key.
    #[error("the new proof does not verify: {0}")]
    Verify(String),
}

/// The pool's next batch: from the first queued commitment to the next multiple of
/// `BATCH_SIZE` of the queue index, or to the queue's end (`nox_relayer::inserter::batch_len`).
pub struct Batch {
    /// The queue index of its first commitment.
    pub first_queued: u64,
    /// The tree leaf it starts at.
    pub start: u64,
    /// The commitments it inserts.
    pub leaves: Vec<Fr>,
    public: InsertPublic,
    witness: InsertWitness,
}

/// The arguments of `ShieldedPool.insertBatch`.
pub struct InsertCall {
    /// The proof as eight words.
    pub proof: [U256; 8],
    /// The tree's root after the batch.
    pub new_root: U256,
    /// The leaves the proof covers (a deposit queued meanwhile makes the pool refuse the call
    /// cheaply, `CountMismatch`).
    pub leaves: Vec<U256>,
}

/// The next batch of `view`'s queue; `None` if nothing is queued.
pub fn next_batch(view: &PoolView) -> Result<Option<Batch>, InsertError> {
    let Some(first_queued) = view.queued().next().map(|(i, _)| i) else { return Ok(None) };
    let len = BATCH_SIZE - first_queued % BATCH_SIZE;
    let leaves: Vec<Fr> = view.queued().map(|(_, c)| c).take(len as usize).collect();
    let (public, witness) = view.insert_statement(&leaves).map_err(|e| InsertError::Statement(e.to_string()))?;
    Ok(Some(Batch { first_queued, start: view.next_leaf(), leaves, public, witness }))
}

impl Batch {
    /// Proves the insertion with `pk` (randomness from `seed`), checks the proof against `pk`'s
    /// verifying key, and returns the call's arguments.
    pub fn prove(&self, pk: &ProvingKey, seed: [u8; 32]) -> Result<InsertCall, InsertError> {
        // Seeded: compiled (optimised) in nox-zk, not instantiated unoptimised in a debug build.
        let proof = nox_zk::insert::prove_seeded(pk, &self.public, &self.witness, seed)
            .map_err(|e| InsertError::Prove(e.to_string()))?;
        nox_zk::insert::verify(&pk.vk, &self.public, &proof).map_err(|e| InsertError::Verify(e.to_string()))?;
        let evm = nox_zk::groth16::proof_to_evm(&proof);
        let mut words = [U256::ZERO; 8];
        for (w, chunk) in words.iter_mut().zip(evm.chunks_exact(32)) {
            *w = U256::from_be_slice(chunk);
        }
        Ok(InsertCall {
            proof: words,
            new_root: U256::from_be_bytes(field::to_be32(&self.public.new_root)),
            leaves: self.leaves.iter().map(|c| U256::from_be_bytes(field::to_be32(c))).collect(),
        })
    }
}
