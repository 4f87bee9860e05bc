//! Admission: the checks a relayer makes before any chain call (docs/spec/relay.md §3). Pure:
//! the caller passes the time. Every refusal here costs the relayer one Groth16 verification at
//! most, and nothing at all before the proof for a bundle that is not addressed to it.
//!
//! The payment is one private transaction of the 2-in/2-out statement
//! (`abi.encode(ShieldedPool.Transaction)`, docs/design/zk-payment.md §9): its proof is
//! verified here for exactly the public inputs the pool will feed its verifier when this
//! relayer submits the bundle — the context hash recomputed with this relayer as `relayer`, the
//! execution hash of the bundle's own action, the fee, chain, pool, deadline, recipient and the
//! two note ciphertexts — so a payment made for another relayer, action, fee or notes is
//! refused before it costs a simulation.

use crate::abi::Transaction;
use alloy_primitives::{Address, U256};
use alloy_sol_types::SolValue;
use ark_bn254::{Bn254, Fr};
use nox_zk::field;
use nox_zk::groth16::{self, VerifyingKey};
use nox_zk::transfer::{self, TransferContext, TransferPublic};

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
    /// The private transaction inside the payment data (its proof verified).
    pub transaction: Transaction,
    /// Its two nullifiers (distinct; both are spent by the bundle).
    pub nullifiers: [U256; 2],
    /// The fee (equal to the transaction's).
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

/// The nullifiers and deadline a payment claims, if its data decodes (nothing is proven yet):
/// what the guard looks at before spending a proof check.
pub fn claimed(payment_data: &[u8]) -> Option<([U256; 2], u64)> {
    let t = Transaction::abi_decode(payment_data).ok()?;
    Some((t.nullifiers, u64::try_from(t.deadline).unwrap_or(u64::MAX)))
}

/// Admits or refuses `s` at unix time `now`, verifying its payment proof off-chain with `vk`
/// (the verifying key of the pool's transfer verifier) for the public values the chain will
/// use: this relayer as the relayer, the execution hash of the bundle's own action (target,
/// calldata, bound gas) and fee, the chain, the pool.
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
    let t = Transaction::abi_decode_validate(&b.paymentData)
        .map_err(|e| (Reason::Malformed, format!("payment data is not an encoded Transaction: {e}")))?;
    if !t.publicIn.is_zero() {
        return refuse(
            Reason::Malformed,
            "a paid transaction cannot bring value in (publicIn must be 0: deposit directly)",
        );
    }
    if t.fee != b.fee {
        return refuse(Reason::Malformed, "the transaction's fee differs from the bundle's fee");
    }
    if t.asset != b.asset {
        return refuse(Reason::Malformed, "the transaction's asset differs from the bundle's asset");
    }
    let gas = u64::try_from(b.action.gas).map_err(|_| (Reason::Malformed, "the action's gas is ≥ 2^64".to_owned()))?;
    let fee = u128::try_from(t.fee).map_err(|_| (Reason::Malformed, "fee ≥ 2^128".to_owned()))?;
    let public_out = u128::try_from(t.publicOut).map_err(|_| (Reason::Malformed, "publicOut ≥ 2^128".to_owned()))?;
    if (t.recipient == Address::ZERO) != (public_out == 0) {
        return refuse(Reason::Malformed, "the recipient must be set exactly when publicOut is not zero");
    }
    let public_amount = transfer::public_amount(0, public_out, fee)
        .ok_or_else(|| (Reason::Malformed, "publicOut + fee ≥ 2^128".to_owned()))?;
    if t.nullifiers[0] == t.nullifiers[1] {
        return refuse(Reason::Malformed, "the two nullifiers are equal (the same note twice)");
    }
    if !a.assets.contains(&t.asset) {
        return refuse(Reason::UnsupportedAsset, format!("fees in {} are not accepted here", t.asset));
    }
    let deadline = u64::try_from(t.deadline).unwrap_or(u64::MAX);
    if deadline < now.saturating_add(a.min_validity) {
        return refuse(
            Reason::Expired,
            format!("the payment's deadline {deadline} is less than {} s away", a.min_validity),
        );
    }
    if deadline == u64::MAX {
        return refuse(Reason::DeadlineTooFar, "the payment's deadline is ≥ 2^64 - 1");
    }
    let (execution_hash, _) = field::execution_hash(&b.action.target.0.0, &b.action.data, fee, gas);
    let context = TransferContext {
        public_in: 0,
        public_out,
        fee,
        relayer: a.relayer.0.0,
        execution_hash,
        recipient: t.recipient.0.0,
        chain_id: a.chain_id,
        pool: a.pool.0.0,
        deadline,
        notes_hash: transfer::notes_hash(&t.notes[0], &t.notes[1]),
    };
    let public = TransferPublic {
        root: scalar(t.root, "root")?,
        nullifiers: [scalar(t.nullifiers[0], "nullifier 1")?, scalar(t.nullifiers[1], "nullifier 2")?],
        commitments: [scalar(t.commitments[0], "commitment 1")?, scalar(t.commitments[1], "commitment 2")?],
        public_amount,
        asset: field::address(&t.asset.0.0),
        context: context.hash(),
    };
    let words: [u8; 256] = proof_bytes(&t.proof);
    let proof = groth16::proof_from_evm(&words).map_err(|e| (Reason::BadProof, format!("proof: {e}")))?;
    transfer::verify(vk, &public, &proof)
        .map_err(|e| (Reason::BadProof, format!("the payment proof does not verify: {e}")))?;
    Ok(Admitted { nullifiers: t.nullifiers, fee: t.fee, asset: t.asset, deadline, transaction: t })
}

fn scalar(x: U256, what: &str) -> Result<Fr, Refusal> {
    field::from_be32(&x.to_be_bytes::<32>()).map_err(|_| (Reason::Malformed, format!("{what} is not a field element")))
}

fn proof_bytes(words: &[U256; 8]) -> [u8; 256] {
    let mut out = [0u8; 256];
    for (chunk, w) in out.chunks_exact_mut(32).zip(words) {
        chunk.copy_from_slice(&w.to_be_bytes::<32>());
    }
    out
}
