//! A paid bundle: one private transaction (docs/design/zk-payment.md §9) whose fee goes to the
//! relayer that submits it, bound to (that relayer, the action's execution hash, chain, pool,
//! deadline, the output ciphertexts), its proof, and the `BatchExecutor.execute` calldata the
//! relayer will send unchanged (docs/spec/relay.md §2).
//!
//! Two shapes, one statement:
//! - a **payment-only bundle** — a private transfer, split, join or a withdrawal to an address,
//!   paid through the mixnet: the action is [`Action::none`] (`target = address(0)`, no data, no
//!   gas), which the executor calls and which does nothing; the transaction's own outputs (and
//!   `publicOut` to a recipient) are the point;
//! - a **paid action** — a call the relayer makes (a contract call, the swap adaptor): the
//!   transaction pays the fee and returns the change to the sender.
//!
//! Nothing here does I/O: the wallet's synced [`PoolView`] and the proving key come from the
//! caller, so the same code serves the CLI, a daemon or a browser build.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::SolValue;
use ark_bn254::{Bn254, Fr};
use nox_relayer::{Quote, Submission, abi};
use nox_wallet::{PaymentAddress, PoolView, PreparedOutput, PreparedTransaction, Seed, SpentInput, TxRequest};
use nox_zk::{field, groth16, transfer};
use rand_core_06::{CryptoRng, RngCore};

use crate::PayError;

/// What the relayer is paid to do: call `target` with `data`, giving it exactly `gas` gas (no
/// ETH value: relayers do not front value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// The called contract (`address(0)`: no action, see [`Action::none`]).
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

impl Action {
    /// No action: a payment-only bundle (`{target: 0, value: 0, gas: 0, data: ""}`). The
    /// executor's call to `address(0)` succeeds and does nothing; the bundle exists for its
    /// payment — a private transaction whose fee is the relayer's.
    pub fn none() -> Self {
        Action { target: Address::ZERO, data: Bytes::new(), gas: 0 }
    }

    /// Whether this is [`Action::none`].
    pub fn is_none(&self) -> bool {
        self.target.is_zero() && self.data.is_empty() && self.gas == 0
    }

    /// The raw execution hash `keccak256(target ‖ data ‖ fee ‖ gas)` the executor computes and
    /// the payment binds.
    pub fn execution_hash(&self, fee: u128) -> [u8; 32] {
        field::execution_hash(&self.target.0.0, &self.data, fee, self.gas).0
    }
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

/// Who a payment pays and where: the relayer (the bundle's submitter), its executor, chain and
/// pool — a quote's identity fields ([`Payee::of`]), or a relayer named by hand (`nox wallet pay`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payee {
    /// The chain.
    pub chain_id: u64,
    /// The BatchExecutor the bundle goes to.
    pub executor: Address,
    /// The relayer the payment credits (the only submitter it pays).
    pub relayer: Address,
    /// The shielded pool.
    pub pool: Address,
}

impl Payee {
    /// The quoting relayer.
    pub fn of(quote: &Quote) -> Self {
        Payee { chain_id: quote.chain_id, executor: quote.executor, relayer: quote.relayer, pool: quote.pool }
    }
}

/// A private transaction paid to a relayer: `outputs` to their shielded addresses,
/// `public_out` to `recipient`, `fee` to the relayer, change back to the sender, for `action`
/// (or [`Action::none`]).
#[derive(Clone, Debug)]
pub struct Payment<'a> {
    /// The relayer paid (its address, executor, chain, pool: [`Payee::of`] a quote).
    pub payee: Payee,
    /// The transaction's asset, which is also the fee's (ETH: `Address::ZERO`).
    pub asset: Address,
    /// The fee, in the asset's base unit.
    pub fee: u128,
    /// What the relayer is paid to do ([`Action::none`] for a payment-only bundle).
    pub action: Action,
    /// Shielded outputs besides the change (at most one if there is change, two if not).
    pub outputs: Vec<(PaymentAddress, u128)>,
    /// A join instead: the wallet's two smallest spendable notes become one, less the fee
    /// (`outputs` and `public_out` must then be empty).
    pub join: bool,
    /// Value leaving the pool to `recipient` (a withdrawal paid through the mixnet).
    pub public_out: u128,
    /// The receiver of `public_out` (`Address::ZERO` iff it is 0).
    pub recipient: Address,
    /// Unix second after which the pool refuses the payment.
    pub deadline: u64,
    /// Notes already spent inside the action (a withdrawal made by the same bundle), by
    /// nullifier: the payment spends other notes.
    pub avoid: &'a [Fr],
}

impl Payment<'_> {
    /// The raw execution hash the payment binds (the executor's for this action and fee).
    pub fn raw_execution_hash(&self) -> [u8; 32] {
        self.action.execution_hash(self.fee)
    }

    /// The transaction the wallet must prove: `fee` of `asset` to the quote's relayer, bound to
    /// the execution hash of this very action, `publicIn = 0` (a payment never pulls value).
    pub fn request(&self) -> TxRequest {
        TxRequest {
            asset: asset_word(self.asset),
            outputs: self.outputs.clone(),
            public_in: 0,
            public_out: self.public_out,
            fee: self.fee,
            recipient: self.recipient.0.0,
            relayer: self.payee.relayer.0.0,
            execution_hash: self.raw_execution_hash(),
            chain_id: self.payee.chain_id,
            pool: self.payee.pool.0.0,
            deadline: self.deadline,
            avoid: self.avoid.to_vec(),
        }
    }

    /// Prepares the transaction from the wallet's view (a join: [`PoolView::prepare_join`]).
    pub fn prepare<R: RngCore + CryptoRng>(
        &self,
        view: &PoolView,
        seed: &Seed,
        rng: &mut R,
    ) -> Result<PreparedTransaction, PayError> {
        let req = self.request();
        Ok(if self.join { view.prepare_join(seed, &req, rng)? } else { view.prepare_transaction(seed, &req, rng)? })
    }

    /// The bundle for this payment, from the prepared transaction and its proof (see [`prove`]).
    pub fn bundle(&self, prepared: &PreparedTransaction, proof: &[u8; 256]) -> PaidBundle {
        let t = transaction_struct(proof, prepared);
        let bundle = abi::Bundle {
            payment: self.payee.pool,
            paymentData: Bytes::from(t.abi_encode()),
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
            submission: Submission::new(self.payee.chain_id, self.payee.executor, self.payee.relayer, bundle),
            nullifiers: t.nullifiers,
            inputs: prepared.inputs.clone(),
            outputs: prepared.outputs.clone(),
            change: prepared.change,
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
        let prepared = self.prepare(view, seed, rng)?;
        let proof = prove(pk, &prepared, rng)?;
        Ok(self.bundle(&prepared, &proof))
    }
}

/// A bundle ready for a relayer, and what it does to the wallet.
#[derive(Clone, Debug)]
pub struct PaidBundle {
    /// The relay request (flags off: set `pay_on_revert` / `simulate_only` as wanted).
    pub submission: Submission,
    /// The two nullifiers the transaction publishes (the exit refuses a spent one).
    pub nullifiers: [U256; 2],
    /// The notes it spends.
    pub inputs: Vec<SpentInput>,
    /// The two notes it makes (requested, change, padding).
    pub outputs: [PreparedOutput; 2],
    /// Value of the change note back to the sender (spendable once inserted).
    pub change: u128,
}

/// Proves a prepared transaction and checks the proof before it leaves: a proof that does not
/// verify here is never sent anywhere.
pub fn prove<R: RngCore + CryptoRng>(
    pk: &groth16::ProvingKey<Bn254>,
    prepared: &PreparedTransaction,
    rng: &mut R,
) -> Result<[u8; 256], PayError> {
    // The prover's randomness as a seed: `prove_seeded` is compiled (optimised) in nox-zk, where
    // an instance of the generic `prove` here would be unoptimised in a debug build.
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    rng.fill_bytes(seed.as_mut());
    let proof = transfer::prove_seeded(pk, &prepared.public, &prepared.witness, *seed).map_err(PayError::Proving)?;
    transfer::verify(&pk.vk, &prepared.public, &proof).map_err(PayError::Proving)?;
    Ok(groth16::proof_to_evm(&proof))
}

/// `ShieldedPool.Transaction` for a proven transaction.
pub fn transaction_struct(proof: &[u8; 256], p: &PreparedTransaction) -> abi::Transaction {
    let mut words = [U256::ZERO; 8];
    for (w, chunk) in words.iter_mut().zip(proof.chunks_exact(32)) {
        *w = U256::from_be_slice(chunk);
    }
    let f = &p.fields;
    abi::Transaction {
        proof: words,
        root: U256::from_be_bytes(f.root),
        nullifiers: f.nullifiers.map(U256::from_be_bytes),
        commitments: f.commitments.map(U256::from_be_bytes),
        asset: Address::from(f.asset),
        publicIn: U256::from(f.public_in),
        publicOut: U256::from(f.public_out),
        fee: U256::from(f.fee),
        recipient: Address::from(f.recipient),
        deadline: U256::from(f.deadline),
        notes: f.notes.clone().map(Bytes::from),
    }
}
