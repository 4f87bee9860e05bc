//! Admission: the checks a relayer makes before any chain call (docs/spec/relay.md §3). Pure:
//! the caller passes the time. Every refusal here costs the relayer one Groth16 verification at
//! most, and nothing at all before the proof for a bundle that is not addressed to it.

use crate::abi::Spend;
use alloy_primitives::{Address, U256};
use alloy_sol_types::SolValue;
use ark_bn254::{Bn254, Fr};
use nox_zk::field;
use nox_zk::groth16::{self, VerifyingKey};

use crate::wire::{Reason, Submission};

/// What a bundle must match to be considered at all.
#[derive(Clone, Debug)]
pub struct Admission {
    /// The chain the relayer submits to.
    pub chain_id: u64,
    /// Its BatchExecutor.
    pub executor: Address,
    /// The relayer's account.
    pub relayer: Address,
    /// The payment plugin accepted: the shielded pool.
    pub pool: Address,
    /// Fee assets the relayer prices.
    pub assets: Vec<Address>,
    /// Seconds a payment must stay valid after admission (time to simulate, send and mine).
    pub min_validity: u64,
}

/// A bundle that passed admission: its payment's public values.
#[derive(Clone, Debug)]
pub struct Admitted {
    /// The spend inside the payment data.
    pub spend: Spend,
    /// The fee (equal to the spend's).
    pub fee: U256,
    /// The fee's asset.
    pub asset: Address,
    /// The payment's deadline, unix seconds.
    pub deadline: u64,
}

/// A refusal: its class and a message for the client.
pub type Refusal = (Reason, String);

fn refuse<T>(reason: Reason, detail: impl Into<String>) -> Result<T, Refusal> {
    Err((reason, detail.into()))
}

/// Admits or refuses `s` at unix time `now`, verifying its payment proof off-chain with `vk`
/// (the verifying key of the pool's spend verifier) for the public values the chain will use:
/// this relayer as the relayer, the execution hash of the bundle's own action (target, calldata,
/// bound gas) and fee.
pub fn admit(a: &Admission, vk: &VerifyingKey<Bn254>, s: &Submission, now: u64) -> Result<Admitted, Refusal> {
    if s.chain_id != a.chain_id {
        return refuse(Reason::WrongChain, format!("this relayer submits on chain {}, not {}", a.chain_id, s.chain_id));
    }
    if s.executor != a.executor {
        return refuse(Reason::WrongExecutor, format!("this relayer submits to the executor {}", a.executor));
    }
    if s.relayer != a.relayer {
        return refuse(Reason::WrongRelayer, format!("the payment must credit this relayer, {}", a.relayer));
    }
    let b = &s.bundle;
    if b.payment != a.pool {
        return refuse(
            Reason::UnsupportedPayment,
            format!("only payments through the shielded pool {} are accepted", a.pool),
        );
    }
    if !b.action.value.is_zero() {
        return refuse(Reason::ActionValue, "the relayer does not send ETH with an action");
    }
    let spend = Spend::abi_decode_validate(&b.paymentData)
        .map_err(|e| (Reason::Malformed, format!("payment data is not an encoded Spend: {e}")))?;
    if spend.fee != b.fee {
        return refuse(Reason::Malformed, "the spend's fee differs from the bundle's fee");
    }
    if spend.asset != b.asset {
        return refuse(Reason::Malformed, "the spend's asset differs from the bundle's asset");
    }
    if u64::try_from(b.action.gas).is_err() {
        return refuse(Reason::Malformed, "the action's gas is ≥ 2^64");
    }
    let fee = u128::try_from(spend.fee).map_err(|_| (Reason::Malformed, "fee ≥ 2^128".to_owned()))?;
    if !a.assets.contains(&spend.asset) {
        return refuse(Reason::UnsupportedAsset, format!("fees in {} are not accepted here", spend.asset));
    }
    let deadline = u64::try_from(spend.deadline).unwrap_or(u64::MAX);
    if deadline < now.saturating_add(a.min_validity) {
        return refuse(
            Reason::Expired,
            format!("the payment's deadline {deadline} is less than {} s away", a.min_validity),
        );
    }
    let public = public_inputs(a, s, &spend, fee)?;
    let words: [u8; 256] = proof_bytes(&spend.proof);
    let proof = groth16::proof_from_evm(&words).map_err(|e| (Reason::BadProof, format!("proof: {e}")))?;
    groth16::verify(vk, &public, &proof)
        .map_err(|e| (Reason::BadProof, format!("the payment proof does not verify: {e}")))?;
    Ok(Admitted { fee: spend.fee, asset: spend.asset, deadline, spend })
}

fn scalar(x: U256, what: &str) -> Result<Fr, Refusal> {
    field::from_be32(&x.to_be_bytes::<32>()).map_err(|_| (Reason::BadProof, format!("{what} is not a field element")))
}

/// The public inputs the pool will feed its verifier for this bundle submitted by this relayer.
fn public_inputs(a: &Admission, s: &Submission, spend: &Spend, fee: u128) -> Result<nox_zk::PublicInputs, Refusal> {
    let action = &s.bundle.action;
    let gas = u64::try_from(action.gas).map_err(|_| (Reason::Malformed, "the action's gas is ≥ 2^64".to_owned()))?;
    let (_, execution_hash) = field::execution_hash(&action.target.0.0, &action.data, fee, gas);
    Ok(nox_zk::PublicInputs {
        root: scalar(spend.root, "root")?,
        nullifier: scalar(spend.nullifier, "nullifier")?,
        change_commitment: scalar(spend.changeCommitment, "change commitment")?,
        fee: Fr::from(fee),
        asset: field::address(&spend.asset.0.0),
        relayer: field::address(&a.relayer.0.0),
        execution_hash,
        chain_id: Fr::from(a.chain_id),
        pool: field::address(&a.pool.0.0),
        deadline: scalar(spend.deadline, "deadline")?,
    })
}

fn proof_bytes(words: &[U256; 8]) -> [u8; 256] {
    let mut out = [0u8; 256];
    for (chunk, w) in out.chunks_exact_mut(32).zip(words) {
        chunk.copy_from_slice(&w.to_be_bytes::<32>());
    }
    out
}
