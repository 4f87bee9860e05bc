//! A paid bundle: the action, a fee priced from a relayer's quote, the gas-payment spend bound
//! to (that relayer, the action's execution hash, chain, pool, deadline), its proof, and the
//! `BatchExecutor.execute` calldata the relayer will send unchanged (docs/spec/relay.md §2).
//!
//! Nothing here does I/O: the wallet's synced [`PoolView`] and the proving key come from the
//! caller, so the same code serves the CLI, a daemon or a browser build.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::SolValue;
use ark_bn254::{Bn254, Fr};
use nox_relayer::{Quote, Submission, abi};
use nox_wallet::{PoolView, PreparedSpend, Seed, SpendKind, SpendRequest};
use nox_zk::{PublicInputs, field, groth16};
use rand_core_06::{CryptoRng, RngCore};

use crate::PayError;

/// What the relayer is paid to do: call `target` with `data`, giving it exactly `gas` gas (no
/// ETH value: relayers do not front value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// The called contract.
    pub target: Address,
    /// The calldata.
    pub data: Bytes,
    /// The gas the executor must forward to the call (`BatchExecutor.Action.gas`). It is bound
    /// into the execution hash the payment proves, and the executor reverts the whole bundle
    /// (nothing paid) unless the relayer's gas limit lets it forward all of it, so a relayer
    /// cannot be paid for a starved action. Price the fee for this same figure
    /// ([`fee_from_quote`]).
    pub gas: u64,
}

/// `uint160(asset)` as the field element the circuit and the wallet use (0 for ETH).
pub fn asset_word(asset: Address) -> Fr {
    field::address(&asset.0.0)
}

/// The fee for an action of `action_gas` from `quote`, paid in `asset`, at `percent` % of the
/// quoted price (100 = exactly the quote; more leaves room for the base fee to rise before the
/// relayer sends).
pub fn fee_from_quote(quote: &Quote, asset: Address, action_gas: u64, percent: u32) -> Result<u128, PayError> {
    let priced = quote.fee_for_action(asset, action_gas).ok_or(PayError::Unpriced(asset))?;
    let fee = priced.saturating_mul(U256::from(percent)) / U256::from(100u64);
    u128::try_from(fee).map_err(|_| PayError::FeeTooLarge)
}

/// A gas payment to the quoting relayer for `action`.
#[derive(Clone, Debug)]
pub struct Payment<'a> {
    /// The relayer's quote (its address, executor, chain).
    pub quote: &'a Quote,
    /// The fee's asset (ETH: `Address::ZERO`).
    pub asset: Address,
    /// The fee, in the asset's base unit.
    pub fee: u128,
    /// What the relayer is paid to do.
    pub action: Action,
    /// Unix second after which the pool refuses the payment.
    pub deadline: u64,
    /// Notes already spent inside the action (a withdrawal made by the same bundle), by
    /// commitment: the payment comes from another note.
    pub avoid: &'a [Fr],
}

impl Payment<'_> {
    /// The spend the wallet must prove: `fee` of `asset` to the quote's relayer, bound to the
    /// execution hash `keccak256(target ‖ data ‖ fee ‖ gas)` of this very action.
    pub fn spend_request(&self) -> SpendRequest {
        let a = &self.action;
        let (action_hash, _) = field::execution_hash(&a.target.0.0, &a.data, self.fee, a.gas);
        SpendRequest {
            asset: asset_word(self.asset),
            amount: self.fee,
            kind: SpendKind::Pay { relayer: self.quote.relayer.0.0, action_hash },
            chain_id: self.quote.chain_id,
            pool: self.quote.pool.0.0,
            deadline: self.deadline,
        }
    }

    /// Prepares the spend from the wallet's view (choosing a note not in `avoid`).
    pub fn prepare(&self, view: &PoolView, seed: &Seed) -> Result<PreparedSpend, PayError> {
        Ok(view.prepare_spend_avoiding(seed, &self.spend_request(), self.avoid)?)
    }

    /// The bundle for this payment, from the prepared spend and its proof (see [`prove`]).
    pub fn bundle(&self, prepared: &PreparedSpend, proof: &[u8; 256]) -> PaidBundle {
        let spend = spend_struct(proof, &prepared.public, self.asset, self.deadline);
        let bundle = abi::Bundle {
            payment: self.quote.pool,
            paymentData: Bytes::from(spend.abi_encode()),
            asset: self.asset,
            fee: U256::from(self.fee),
            action: abi::Action {
                target: self.action.target,
                value: U256::ZERO,
                gas: U256::from(self.action.gas),
                data: self.action.data.clone(),
            },
        };
        PaidBundle {
            submission: Submission::new(self.quote.chain_id, self.quote.executor, self.quote.relayer, bundle),
            change_value: prepared.change_value,
            spent_commitment: prepared.spent_commitment,
        }
    }

    /// [`Payment::prepare`], [`prove`] and [`Payment::bundle`] in one.
    pub fn build<R: RngCore + CryptoRng>(
        &self,
        view: &PoolView,
        seed: &Seed,
        pk: &groth16::ProvingKey<Bn254>,
        rng: &mut R,
    ) -> Result<PaidBundle, PayError> {
        let prepared = self.prepare(view, seed)?;
        let proof = prove(pk, &prepared, rng)?;
        Ok(self.bundle(&prepared, &proof))
    }
}

/// A bundle ready for a relayer, and what it does to the wallet.
#[derive(Clone, Debug)]
pub struct PaidBundle {
    /// The relay request (flags off: set `pay_on_revert` / `simulate_only` as wanted).
    pub submission: Submission,
    /// Value of the payment's change note (spendable once inserted).
    pub change_value: u128,
    /// Commitment of the note the payment spends.
    pub spent_commitment: Fr,
}

/// Proves a prepared spend (payment or withdrawal) and checks the proof before it leaves: a
/// proof that does not verify here is never sent anywhere.
pub fn prove<R: RngCore + CryptoRng>(
    pk: &groth16::ProvingKey<Bn254>,
    prepared: &PreparedSpend,
    rng: &mut R,
) -> Result<[u8; 256], PayError> {
    let proof = groth16::prove(pk, &prepared.public, &prepared.witness, rng).map_err(PayError::Proving)?;
    groth16::verify(&pk.vk, &prepared.public, &proof).map_err(PayError::Proving)?;
    Ok(groth16::proof_to_evm(&proof))
}

/// `ShieldedPool.Spend` for a proven spend with public values `p`.
pub fn spend_struct(proof: &[u8; 256], p: &PublicInputs, asset: Address, deadline: u64) -> abi::Spend {
    let u = |x: &Fr| U256::from_be_bytes(field::to_be32(x));
    let mut words = [U256::ZERO; 8];
    for (w, chunk) in words.iter_mut().zip(proof.chunks_exact(32)) {
        *w = U256::from_be_slice(chunk);
    }
    abi::Spend {
        proof: words,
        root: u(&p.root),
        nullifier: u(&p.nullifier),
        changeCommitment: u(&p.change_commitment),
        asset,
        fee: u(&p.fee),
        deadline: U256::from(deadline),
    }
}
