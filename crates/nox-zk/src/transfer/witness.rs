//! The private witness of a transaction and [`build`], which turns what a wallet wants to
//! spend and make ([`TransferRequest`]) into public inputs and a padded, checked witness.

use super::{INS, OUTS, TransferPublic, circuit::low128, public_amount};
use crate::{
    VALUE_BITS,
    error::ZkError,
    merkle::{MerklePath, TREE_DEPTH, zeros},
    note::{Note, SpendingKey, random_scalar},
    poseidon,
};
use ark_bn254::Fr;
use rand_core::{CryptoRng, RngCore};

/// One input of the witness: a note and its path (any path for a zero-value dummy).
#[derive(Clone, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct SpentNote {
    /// The note (its `owner` must be the witness key's owner tag).
    pub note: Note,
    /// Its path under `root` (for a dummy, anything of the right length).
    pub path: MerklePath,
}

/// One output of the witness.
#[derive(Clone, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct OutputNote {
    /// Its value: a field element so that a test can try what a cheating prover would (an
    /// honest one is below 2^128, [`OutputNote::new`]).
    pub value: Fr,
    /// `Poseidon(owner, blinding)` of the receiving note.
    pub inner: Fr,
}

impl OutputNote {
    /// An output of `value` to the note owner and blinding whose `Poseidon(owner, blinding)` is
    /// `inner`.
    pub fn new(value: u128, inner: Fr) -> Self {
        OutputNote { value: Fr::from(value), inner }
    }
}

/// The private witness: zeroized on drop.
#[derive(zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct TransferWitness {
    /// The spending key owning both inputs.
    pub sk: SpendingKey,
    /// The two inputs (zero-value dummies where fewer are spent).
    pub inputs: [SpentNote; INS],
    /// The two outputs (zero-value where fewer are made).
    pub outputs: [OutputNote; OUTS],
    /// `|publicAmount|`, below 2^128 for an honest prover (a field element, as for outputs).
    pub public_magnitude: Fr,
    /// Whether `publicAmount` is negative (value leaves the notes: withdrawal and/or fee).
    pub public_negative: bool,
}

/// What a wallet spends and makes in one transaction, before the witness is built.
pub struct TransferRequest {
    /// The spending key of the inputs (moved into the witness, which zeroizes it).
    pub sk: SpendingKey,
    /// The current root the paths lead to.
    pub root: Fr,
    /// 0 to 2 real inputs (each with its path under `root`).
    pub inputs: Vec<SpentNote>,
    /// 0 to 2 real outputs.
    pub outputs: Vec<OutputNote>,
    /// The asset.
    pub asset: Fr,
    /// Value entering the pool with the transaction (a deposit into the outputs).
    pub public_in: u128,
    /// Value leaving the pool to the withdrawal recipient.
    pub public_out: u128,
    /// The relayer's fee.
    pub fee: u128,
    /// The context hash the pool will compute (docs/design/zk-payment.md §9).
    pub context: Fr,
}

/// Builds the public inputs and witness of a transaction, padding with zero-value dummy inputs
/// (random blinding, so a fresh random nullifier) and zero-value outputs owned by the sender.
/// Refuses what no proof could show: more than two inputs or outputs, an input not owned by `sk`
/// or of another asset, a real input whose path does not lead to `root`, and an unbalanced
/// transaction (`in₁ + in₂ + publicIn ≠ out₁ + out₂ + publicOut + fee`).
pub fn build<R: RngCore + CryptoRng>(
    req: TransferRequest,
    rng: &mut R,
) -> Result<(TransferPublic, TransferWitness), ZkError> {
    if req.inputs.len() > INS || req.outputs.len() > OUTS {
        return Err(ZkError::BadTransfer("at most two inputs and two outputs"));
    }
    let owner = req.sk.owner()?;
    let mut inputs = req.inputs;
    for s in &inputs {
        if s.note.owner != owner {
            return Err(ZkError::BadTransfer("an input is not owned by the spending key"));
        }
        if s.note.asset != req.asset {
            return Err(ZkError::BadTransfer("an input is of another asset"));
        }
        if s.path.root(s.note.commitment()?)? != req.root {
            return Err(ZkError::BadPath("an input's path does not lead to the root"));
        }
    }
    while inputs.len() < INS {
        let note = Note::new(0, req.asset, owner, rng);
        let path = MerklePath { index: rng.next_u64() >> (64 - TREE_DEPTH), siblings: zeros()[..TREE_DEPTH].to_vec() };
        inputs.push(SpentNote { note, path });
    }
    let mut outputs = req.outputs;
    while outputs.len() < OUTS {
        outputs.push(OutputNote::new(0, poseidon::hash(&[owner, random_scalar(rng)])?));
    }
    // Every term is below 2^128 and there are at most five per side, so the sums (in the field)
    // stay below 2^131 < r: equal in the field means equal over the integers.
    let mut credit = Fr::from(req.public_in);
    for s in &inputs {
        credit += Fr::from(s.note.value);
    }
    let mut debit = Fr::from(req.public_out) + Fr::from(req.fee);
    for o in &outputs {
        if o.value != Fr::from(low128(&o.value)) {
            return Err(ZkError::ValueOutOfRange { bits: VALUE_BITS });
        }
        debit += o.value;
    }
    if credit != debit {
        return Err(ZkError::BadTransfer("inputs + public in ≠ outputs + public out + fee"));
    }
    let public_amount =
        public_amount(req.public_in, req.public_out, req.fee).ok_or(ZkError::ValueOutOfRange { bits: VALUE_BITS })?;
    let debit = req.public_out.checked_add(req.fee).ok_or(ZkError::ValueOutOfRange { bits: VALUE_BITS })?;
    let (public_magnitude, public_negative) =
        if req.public_in >= debit { (req.public_in - debit, false) } else { (debit - req.public_in, true) };
    let public_magnitude = Fr::from(public_magnitude);
    let [in0, in1] = [&inputs[0], &inputs[1]].map(|s| (s.note.commitment(), s.path.index));
    let (cm0, cm1) = (in0.0?, in1.0?);
    let nullifiers = [req.sk.nullifier(&cm0, in0.1)?, req.sk.nullifier(&cm1, in1.1)?];
    if nullifiers[0] == nullifiers[1] {
        return Err(ZkError::BadTransfer("the same note twice"));
    }
    let commitments = [
        poseidon::hash(&[outputs[0].value, req.asset, outputs[0].inner])?,
        poseidon::hash(&[outputs[1].value, req.asset, outputs[1].inner])?,
    ];
    let public = TransferPublic {
        root: req.root,
        nullifiers,
        commitments,
        public_amount,
        asset: req.asset,
        context: req.context,
    };
    let mut it_in = inputs.into_iter();
    let mut it_out = outputs.into_iter();
    let pair_in = (it_in.next(), it_in.next());
    let pair_out = (it_out.next(), it_out.next());
    let (Some(i0), Some(i1), Some(o0), Some(o1)) = (pair_in.0, pair_in.1, pair_out.0, pair_out.1) else {
        return Err(ZkError::BadTransfer("at most two inputs and two outputs"));
    };
    let witness =
        TransferWitness { sk: req.sk, inputs: [i0, i1], outputs: [o0, o1], public_magnitude, public_negative };
    Ok((public, witness))
}
