//! Building a private transaction (issue 30; docs/design/zk-payment.md §9, docs/spec/notes.md):
//! one 2-in/2-out join-split for a transfer, a split, a join, a withdrawal and the relayer's fee.
//!
//! [`PoolView::prepare_transaction`] picks the fewest spendable notes (one, else two) that cover
//! `Σ outputs + publicOut + fee − publicIn`, lays out the two outputs (the requested ones, change
//! back to the wallet's own address, a zero-value note to itself as padding), seals both
//! ciphertexts, computes the context the pool will compute ([`TransferContext`]) and builds the
//! statement and witness with [`transfer::build`]. Nothing here proves or sends: the caller
//! proves ([`nox_zk::transfer::prove`]) and submits ([`PreparedTransaction::fields`] are the
//! pool's `Transaction` values, less the proof).

use crate::{
    error::WalletError,
    keys::{PaymentAddress, Seed},
    memo,
    state::{OwnedNote, PoolView},
};
use ark_bn254::Fr;
use nox_zk::{
    Note, field,
    note::random_scalar,
    poseidon,
    transfer::{self, OutputNote, SpentNote, TransferContext, TransferPublic, TransferRequest, TransferWitness},
};
use rand_core_06::{CryptoRng, RngCore};

/// What a private transaction should do. The chain-side fields are those of the pool's
/// `Transaction` and of its context (i30.md §1–2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxRequest {
    /// `uint160(asset)`, 0 for ETH.
    pub asset: Fr,
    /// Notes to make, at most two: a payment `(recipient, value)`, or a split's two notes to the
    /// wallet's own address. Change, if any, is added by the wallet.
    pub outputs: Vec<(PaymentAddress, u128)>,
    /// Value entering the pool with the transaction (a direct `transact` only).
    pub public_in: u128,
    /// Value leaving the pool to `recipient` (a withdrawal).
    pub public_out: u128,
    /// The relayer's fee (`pay` only; 0 in a direct `transact`).
    pub fee: u128,
    /// Receiver of `public_out`; the zero address iff `public_out == 0`.
    pub recipient: [u8; 20],
    /// The bundle's submitter in `pay`; the zero address in a direct `transact`.
    pub relayer: [u8; 20],
    /// The raw action hash (the executor's in `pay`; a direct `transact`'s argument, zero for a
    /// plain transaction).
    pub execution_hash: [u8; 32],
    /// `block.chainid` of the pool's chain.
    pub chain_id: u64,
    /// The pool's address.
    pub pool: [u8; 20],
    /// Unix second after which the pool refuses the transaction.
    pub deadline: u64,
    /// Nullifiers of notes not to spend (already in flight in another transaction).
    pub avoid: Vec<Fr>,
}

/// What an output of a prepared transaction is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputRole {
    /// An output the request asked for (a payment, or a split's note).
    Requested,
    /// Change back to the wallet's own address.
    Change,
    /// A zero-value note to the wallet's own address: every transaction has two outputs.
    Padding,
}

/// One output of a prepared transaction, as the CLI describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedOutput {
    /// Who can spend it.
    pub to: PaymentAddress,
    /// Its value.
    pub value: u128,
    /// Requested, change or padding.
    pub role: OutputRole,
    /// Its commitment (the pool queues it).
    pub commitment: Fr,
}

/// One note the transaction spends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpentInput {
    /// The note's commitment.
    pub commitment: Fr,
    /// Its nullifier (pass it in [`TxRequest::avoid`] while the transaction is in flight).
    pub nullifier: Fr,
    /// Its value.
    pub value: u128,
    /// Its leaf.
    pub leaf_index: u64,
}

/// The pool's `Transaction` values, less the proof (`nox-relayer::abi` owns the Solidity
/// struct): every word big-endian, every address 20 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionFields {
    /// The root the inputs' paths lead to.
    pub root: [u8; 32],
    /// Both inputs' nullifiers.
    pub nullifiers: [[u8; 32]; 2],
    /// Both outputs' commitments.
    pub commitments: [[u8; 32]; 2],
    /// The asset's address, zero for ETH.
    pub asset: [u8; 20],
    /// Value entering the pool.
    pub public_in: u128,
    /// Value sent to `recipient`.
    pub public_out: u128,
    /// The relayer's fee.
    pub fee: u128,
    /// Receiver of `public_out`.
    pub recipient: [u8; 20],
    /// Last accepted block timestamp.
    pub deadline: u64,
    /// The two output ciphertexts.
    pub notes: [Vec<u8>; 2],
}

/// A prepared transaction: the statement and witness for the prover, the values for the pool,
/// and a description of what it spends and makes.
pub struct PreparedTransaction {
    /// The public inputs ([`TransferPublic::to_vec`] in the verifier's order).
    pub public: TransferPublic,
    /// The prover's witness (zeroized on drop).
    pub witness: TransferWitness,
    /// The context the proof binds (the pool recomputes it).
    pub context: TransferContext,
    /// The pool's `Transaction` values, less the proof.
    pub fields: TransactionFields,
    /// The real notes spent (0 to 2; the rest of the two inputs are zero-value dummies).
    pub inputs: Vec<SpentInput>,
    /// Both outputs, in the order of `public.commitments` and `fields.notes`.
    pub outputs: [PreparedOutput; 2],
    /// Value returned to the wallet as change (0 if none).
    pub change: u128,
}

/// The notes a transaction spends, chosen from `(index, value)` pairs: the fewest (none if
/// `need` is 0, one, else two) covering `need`; among those, the smallest total (so an exact
/// match first). Errors say whether joining would help.
fn select(mut candidates: Vec<(usize, u128)>, need: u128, pending: u128) -> Result<Vec<usize>, WalletError> {
    if need == 0 {
        return Ok(Vec::new());
    }
    candidates.sort_by_key(|c| c.1);
    if let Some(one) = candidates.iter().find(|c| c.1 >= need) {
        return Ok(vec![one.0]);
    }
    // Two pointers over the sorted values: the smallest pair sum ≥ need.
    let mut best: Option<(u128, usize, usize)> = None;
    let (mut i, mut j) = (0usize, candidates.len().saturating_sub(1));
    while i < j {
        let sum = candidates[i].1.saturating_add(candidates[j].1);
        if sum >= need {
            if best.is_none_or(|b| sum < b.0) {
                best = Some((sum, i, j));
            }
            j -= 1;
        } else {
            i += 1;
        }
    }
    if let Some((_, i, j)) = best {
        return Ok(vec![candidates[i].0, candidates[j].0]);
    }
    let total = candidates.iter().fold(0u128, |t, c| t.saturating_add(c.1));
    let n = candidates.len();
    let largest_pair = match n {
        0 => 0,
        1 => candidates[0].1,
        _ => candidates[n - 1].1.saturating_add(candidates[n - 2].1),
    };
    if total >= need {
        Err(WalletError::NeedsJoin { total, largest_pair, needed: need })
    } else {
        Err(WalletError::InsufficientFunds { have: total, need, pending })
    }
}

/// The asset's 20-byte address, refusing a word above 2^160.
fn asset_address(asset: &Fr) -> Result<[u8; 20], WalletError> {
    let w = field::to_be32(asset);
    if w[..12] != [0u8; 12] {
        return Err(WalletError::BadRequest("the asset is not a 160-bit address"));
    }
    let mut a = [0u8; 20];
    a.copy_from_slice(&w[12..]);
    Ok(a)
}

impl PoolView {
    /// Notes of `asset` a transaction can spend now: inserted, unspent, not in `avoid`.
    pub fn spendable_notes<'a>(&'a self, asset: &'a Fr, avoid: &'a [Fr]) -> impl Iterator<Item = &'a OwnedNote> + 'a {
        self.notes()
            .iter()
            .filter(move |n| n.is_spendable() && n.asset == *asset)
            .filter(move |n| n.nullifier.is_none_or(|nf| !avoid.contains(&nf)))
    }

    /// Prepares the transaction `req` describes: note selection, outputs, ciphertexts, context,
    /// public inputs and witness (see the module doc). Refuses what the pool would refuse.
    pub fn prepare_transaction<R: RngCore + CryptoRng>(
        &self,
        seed: &Seed,
        req: &TxRequest,
        rng: &mut R,
    ) -> Result<PreparedTransaction, WalletError> {
        self.check_request(req)?;
        if req.outputs.len() > transfer::OUTS {
            return Err(WalletError::TooManyOutputs { outputs: req.outputs.len() });
        }
        if req.outputs.iter().any(|o| o.1 == 0) {
            return Err(WalletError::BadRequest("an output of value 0"));
        }
        let overflow = || WalletError::BadRequest("the amounts overflow 128 bits");
        let mut debit = req.public_out.checked_add(req.fee).ok_or_else(overflow)?;
        for o in &req.outputs {
            debit = debit.checked_add(o.1).ok_or_else(overflow)?;
        }
        let (need, surplus) =
            if req.public_in >= debit { (0, req.public_in - debit) } else { (debit - req.public_in, 0) };
        let candidates: Vec<(usize, u128)> = self
            .notes()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_spendable() && n.asset == req.asset)
            .filter(|(_, n)| n.nullifier.is_none_or(|nf| !req.avoid.contains(&nf)))
            .map(|(i, n)| (i, n.value))
            .collect();
        let chosen = select(candidates, need, self.balance(&req.asset).pending)?;
        let inputs: Vec<&OwnedNote> = chosen.iter().map(|&i| &self.notes()[i]).collect();
        let spent = inputs.iter().fold(0u128, |t, n| t.saturating_add(n.value));
        let change = spent - need + surplus;
        self.build(seed, req, &inputs, change, rng)
    }

    /// Prepares a join: the two smallest spendable notes of `req.asset` (not in `req.avoid`)
    /// become one note to the wallet, less `req.fee`. `req.outputs`, `public_in` and `public_out`
    /// must be empty/zero. The CLI repeats it until [`PoolView::prepare_transaction`] finds a
    /// pair (after each join lands and is inserted).
    pub fn prepare_join<R: RngCore + CryptoRng>(
        &self,
        seed: &Seed,
        req: &TxRequest,
        rng: &mut R,
    ) -> Result<PreparedTransaction, WalletError> {
        self.check_request(req)?;
        if !req.outputs.is_empty() || req.public_in != 0 || req.public_out != 0 {
            return Err(WalletError::BadRequest("a join has no outputs, public input or public output"));
        }
        let mut notes: Vec<&OwnedNote> = self.spendable_notes(&req.asset, &req.avoid).collect();
        if notes.len() < 2 {
            return Err(WalletError::NothingToJoin { notes: notes.len() });
        }
        notes.sort_by_key(|n| n.value);
        notes.truncate(2);
        let total = notes[0].value.saturating_add(notes[1].value);
        let change = total.checked_sub(req.fee).ok_or(WalletError::InsufficientFunds {
            have: total,
            need: req.fee,
            pending: 0,
        })?;
        self.build(seed, req, &notes, change, rng)
    }

    /// The pool's rules a request must follow, checked before any work.
    fn check_request(&self, req: &TxRequest) -> Result<(), WalletError> {
        if self.viewing_only() {
            return Err(WalletError::ViewMode("a viewing-only view cannot spend"));
        }
        if (req.public_out == 0) != (req.recipient == [0u8; 20]) {
            return Err(WalletError::BadRequest("the recipient is the zero address exactly when nothing is withdrawn"));
        }
        if req.relayer == [0u8; 20] && req.fee != 0 {
            return Err(WalletError::BadRequest("a fee needs a relayer (a direct transaction pays none)"));
        }
        if req.relayer != [0u8; 20] && req.public_in != 0 {
            return Err(WalletError::BadRequest("value can enter the pool in a direct transaction only"));
        }
        asset_address(&req.asset)?;
        Ok(())
    }

    /// Lays out the outputs, seals them, computes the context and builds the statement.
    fn build<R: RngCore + CryptoRng>(
        &self,
        seed: &Seed,
        req: &TxRequest,
        inputs: &[&OwnedNote],
        change: u128,
        rng: &mut R,
    ) -> Result<PreparedTransaction, WalletError> {
        let me = seed.address()?;
        let mut layout: Vec<(PaymentAddress, u128, OutputRole)> =
            req.outputs.iter().map(|(to, v)| (*to, *v, OutputRole::Requested)).collect();
        if change > 0 {
            if layout.len() >= transfer::OUTS {
                return Err(WalletError::NoRoomForChange { change });
            }
            layout.push((me, change, OutputRole::Change));
        }
        while layout.len() < transfer::OUTS {
            layout.push((me, 0, OutputRole::Padding));
        }

        let mut outputs = Vec::with_capacity(transfer::OUTS);
        let mut out_notes = Vec::with_capacity(transfer::OUTS);
        let mut cts = Vec::with_capacity(transfer::OUTS);
        for (to, value, role) in layout {
            let blinding = random_scalar(rng);
            let inner = poseidon::hash(&[to.owner(), blinding])?;
            let commitment = nox_zk::note::commitment(value, req.asset, inner)?;
            cts.push(memo::seal(&to, &req.asset, value, &blinding, rng));
            out_notes.push(OutputNote::new(value, inner));
            outputs.push(PreparedOutput { to, value, role, commitment });
        }
        let notes: [Vec<u8>; 2] = [cts[0].clone(), cts[1].clone()];

        let context = TransferContext {
            public_in: req.public_in,
            public_out: req.public_out,
            fee: req.fee,
            relayer: req.relayer,
            execution_hash: req.execution_hash,
            recipient: req.recipient,
            chain_id: req.chain_id,
            pool: req.pool,
            deadline: req.deadline,
            notes_hash: transfer::notes_hash(&notes[0], &notes[1]),
        };

        let sk = seed.spending_key();
        let owner = sk.owner()?;
        let mut spent_inputs = Vec::with_capacity(inputs.len());
        let mut witness_inputs = Vec::with_capacity(inputs.len());
        for n in inputs {
            let leaf = n.leaf_index.ok_or(WalletError::Inconsistent("a spendable note without a leaf".into()))?;
            let path = self.path(leaf)?;
            if path.root(n.commitment)? != self.root() {
                return Err(WalletError::Inconsistent("a note's path does not reach the pool root".into()));
            }
            let nullifier = match n.nullifier {
                Some(nf) => nf,
                None => sk.nullifier(&n.commitment, leaf)?,
            };
            spent_inputs.push(SpentInput { commitment: n.commitment, nullifier, value: n.value, leaf_index: leaf });
            witness_inputs
                .push(SpentNote { note: Note { value: n.value, asset: n.asset, owner, blinding: n.blinding }, path });
        }

        let (public, witness) = transfer::build(
            TransferRequest {
                sk,
                root: self.root(),
                inputs: witness_inputs,
                outputs: out_notes,
                asset: req.asset,
                public_in: req.public_in,
                public_out: req.public_out,
                fee: req.fee,
                context: context.hash(),
            },
            rng,
        )?;
        if public.commitments[0] != outputs[0].commitment || public.commitments[1] != outputs[1].commitment {
            return Err(WalletError::Inconsistent("the statement's outputs are not the ones sealed".into()));
        }
        let fields = TransactionFields {
            root: field::to_be32(&public.root),
            nullifiers: public.nullifiers.map(|n| field::to_be32(&n)),
            commitments: public.commitments.map(|c| field::to_be32(&c)),
            asset: asset_address(&req.asset)?,
            public_in: req.public_in,
            public_out: req.public_out,
            fee: req.fee,
            recipient: req.recipient,
            deadline: req.deadline,
            notes: notes.clone(),
        };
        let mut it = outputs.into_iter();
        let (Some(o0), Some(o1)) = (it.next(), it.next()) else {
            return Err(WalletError::Inconsistent("a transaction has two outputs".into()));
        };
        Ok(PreparedTransaction { public, witness, context, fields, inputs: spent_inputs, outputs: [o0, o1], change })
    }
}
