//! Building a spend: a gas payment to a relayer, or a withdrawal (docs/spec/notes.md §3,
//! docs/design/zk-payment.md §5). The wallet picks one of its notes, computes the public inputs
//! exactly as the pool will, and hands the prover the witness.

use crate::{error::WalletError, keys::Seed, state::PoolView};
use ark_bn254::Fr;
use ark_ff::{Field, PrimeField};
use nox_zk::{Note, PublicInputs, Witness, field, note};

/// What the spent amount pays for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpendKind {
    /// A gas payment inside a BatchExecutor bundle: the relayer that will submit the bundle and
    /// the bundle's raw action hash `keccak256(target ‖ calldata ‖ fee)`.
    Pay {
        /// The relayer's address (the bundle's `msg.sender`).
        relayer: [u8; 20],
        /// `BatchExecutor.executionHash(...).raw`.
        action_hash: [u8; 32],
    },
    /// A withdrawal to `recipient`, bound to `action_hash` (zero for a plain withdrawal; a
    /// nonzero hash means only `recipient` itself can submit it).
    Withdraw {
        /// Who receives the amount.
        recipient: [u8; 20],
        /// The action the withdrawal is bound to, or zero.
        action_hash: [u8; 32],
    },
}

/// A spend request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpendRequest {
    /// `uint160(asset)`, 0 for ETH.
    pub asset: Fr,
    /// The fee (pay) or the amount (withdraw).
    pub amount: u128,
    /// Pay or withdraw.
    pub kind: SpendKind,
    /// `block.chainid` of the pool's chain.
    pub chain_id: u64,
    /// The pool's address.
    pub pool: [u8; 20],
    /// Unix second after which the pool refuses the spend.
    pub deadline: u64,
}

/// A prepared spend: the statement, the witness for the prover, and the change note the wallet
/// will recognise when the spend lands.
pub struct PreparedSpend {
    /// The public inputs, in the verifier's order via [`PublicInputs::to_vec`].
    pub public: PublicInputs,
    /// The prover's witness (zeroized on drop).
    pub witness: Witness,
    /// Commitment of the note being spent.
    pub spent_commitment: Fr,
    /// Value of the change note.
    pub change_value: u128,
}

/// `2^160`: a withdrawal's recipient input is `2^160 + uint160(recipient)`, so a withdrawal proof
/// is never a payment proof (whose relayer input is below `2^160`).
pub fn withdraw_domain() -> Fr {
    Fr::from(2u64).pow([160u64])
}

/// The verifier's `relayer` input for a spend kind.
pub fn recipient_input(kind: &SpendKind) -> Fr {
    match kind {
        SpendKind::Pay { relayer, .. } => field::address(relayer),
        SpendKind::Withdraw { recipient, .. } => withdraw_domain() + field::address(recipient),
    }
}

impl PoolView {
    /// Prepares a spend of `req.amount` from the smallest spendable note that covers it, under
    /// the view's current root.
    pub fn prepare_spend(&self, seed: &Seed, req: &SpendRequest) -> Result<PreparedSpend, WalletError> {
        self.prepare_spend_avoiding(seed, req, &[])
    }

    /// [`PoolView::prepare_spend`] from a note other than those committed to in `avoid`: two
    /// spends that land in one transaction (a gas payment and the withdrawal it pays for) must
    /// spend two notes.
    pub fn prepare_spend_avoiding(
        &self,
        seed: &Seed,
        req: &SpendRequest,
        avoid: &[Fr],
    ) -> Result<PreparedSpend, WalletError> {
        let candidate = self
            .notes()
            .iter()
            .filter(|n| !n.spent && n.asset == req.asset && n.leaf_index.is_some() && n.value >= req.amount)
            .filter(|n| !avoid.contains(&n.commitment))
            .min_by_key(|n| n.value);
        let Some(n) = candidate else {
            let b = self.balance(&req.asset);
            return Err(WalletError::InsufficientFunds { needed: req.amount, largest: b.largest, pending: b.pending });
        };
        let leaf = n.leaf_index.ok_or(WalletError::Inconsistent("note without leaf".into()))?;
        let path = self.tree().path(leaf)?;
        if path.root(n.commitment)? != self.root() {
            return Err(WalletError::Inconsistent("the note's path does not reach the pool root".into()));
        }
        let sk = seed.spending_key();
        let nullifier = sk.nullifier(&n.commitment, leaf)?;
        let change_value = n.value - req.amount;
        let change = note::change_note(&sk, &nullifier, change_value, req.asset)?;
        let action_hash = match req.kind {
            SpendKind::Pay { action_hash, .. } | SpendKind::Withdraw { action_hash, .. } => action_hash,
        };
        let public = PublicInputs {
            root: self.root(),
            nullifier,
            change_commitment: change.commitment()?,
            fee: Fr::from(req.amount),
            asset: req.asset,
            relayer: recipient_input(&req.kind),
            execution_hash: Fr::from_be_bytes_mod_order(&action_hash),
            chain_id: Fr::from(req.chain_id),
            pool: field::address(&req.pool),
            deadline: Fr::from(req.deadline),
        };
        let owner = sk.owner()?;
        let witness = Witness {
            sk,
            note: Note { value: n.value, asset: n.asset, owner, blinding: n.blinding },
            path,
            change_inner: change.inner()?,
            change: change_value,
        };
        Ok(PreparedSpend { public, witness, spent_commitment: n.commitment, change_value })
    }
}
