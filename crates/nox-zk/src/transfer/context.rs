//! The public inputs of a private transaction as the verifier orders them, and the `context`
//! input the pool recomputes from everything else the transaction acts on (statement 6 in the
//! module doc of `transfer`).

use super::{INS, OUTS, TRANSFER_NUM_PUBLIC_INPUTS};
use ark_bn254::Fr;

/// The public inputs of one private transaction, each as the pool computes or checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferPublic {
    /// A root in the pool's window of recent roots.
    pub root: Fr,
    /// The inputs' nullifiers (the pool refuses a seen one, and two equal ones).
    pub nullifiers: [Fr; INS],
    /// The output commitments, queued for insertion.
    pub commitments: [Fr; OUTS],
    /// `publicIn − publicOut − fee` as a field element (`r − |x|` when negative), computed by
    /// the pool.
    pub public_amount: Fr,
    /// The asset (`uint160` of the token address, 0 for ETH).
    pub asset: Fr,
    /// [`TransferContext::hash`]: `keccak256(abi.encode(publicIn, publicOut, fee, relayer,
    /// executionHash, recipient, chainId, pool, deadline, notesHash)) mod r`, computed by the pool
    /// from the transaction it executes.
    pub context: Fr,
}

impl TransferPublic {
    /// The inputs in the verifier's order.
    pub fn to_vec(&self) -> Vec<Fr> {
        let mut v = Vec::with_capacity(TRANSFER_NUM_PUBLIC_INPUTS);
        v.push(self.root);
        v.extend_from_slice(&self.nullifiers);
        v.extend_from_slice(&self.commitments);
        v.extend([self.public_amount, self.asset, self.context]);
        v
    }

    /// The inputs as EVM words (`uint256[8]`).
    pub fn to_evm(&self) -> [[u8; 32]; TRANSFER_NUM_PUBLIC_INPUTS] {
        let mut out = [[0u8; 32]; TRANSFER_NUM_PUBLIC_INPUTS];
        for (o, x) in out.iter_mut().zip(self.to_vec()) {
            *o = crate::field::to_be32(&x);
        }
        out
    }
}

/// `keccak256(abi.encode(keccak256(n0), keccak256(n1)))`: the hash of the two output-note
/// ciphertexts that [`TransferContext`] binds, exactly as `ShieldedPool._context` computes it. A
/// relayer that swaps or alters either ciphertext changes the context, so the proof fails on chain.
pub fn notes_hash(n0: &[u8], n1: &[u8]) -> [u8; 32] {
    use sha3::{Digest, Keccak256};
    let mut h = Keccak256::new();
    h.update(Keccak256::digest(n0));
    h.update(Keccak256::digest(n1));
    h.finalize().into()
}

/// Everything a private transaction acts on besides its notes' values: the proof binds it through
/// the `context` public input (docs/design/zk-payment.md §9). The pool recomputes it from the
/// transaction it executes (`ShieldedPool._context`), so a proof made for any other value of any
/// field does not verify.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TransferContext {
    /// Value entering the pool (a direct `transact` only; 0 in `pay`).
    pub public_in: u128,
    /// Value leaving the pool to `recipient`.
    pub public_out: u128,
    /// The relayer's fee (`pay` only; 0 in a direct `transact`).
    pub fee: u128,
    /// The bundle's submitter in `pay`; the zero address in a direct `transact`.
    pub relayer: [u8; 20],
    /// The raw `actionHash` (the executor's in `pay`; the argument of a direct `transact`, zero
    /// for a plain transaction).
    pub execution_hash: [u8; 32],
    /// The receiver of `public_out`; the zero address iff `public_out == 0`.
    pub recipient: [u8; 20],
    /// The chain id.
    pub chain_id: u64,
    /// The pool's address.
    pub pool: [u8; 20],
    /// The last block timestamp at which the pool accepts the transaction.
    pub deadline: u64,
    /// [`notes_hash`] of the two output ciphertexts.
    pub notes_hash: [u8; 32],
}

impl TransferContext {
    /// `abi.encode(uint256 publicIn, uint256 publicOut, uint256 fee, address relayer, bytes32
    /// executionHash, address recipient, uint256 chainId, address pool, uint256 deadline,
    /// bytes32 notesHash)`: ten 32-byte words.
    pub fn abi_encode(&self) -> [u8; 320] {
        let mut out = [0u8; 320];
        let uint = |x: u128| {
            let mut w = [0u8; 32];
            w[16..].copy_from_slice(&x.to_be_bytes());
            w
        };
        let addr = |a: &[u8; 20]| {
            let mut w = [0u8; 32];
            w[12..].copy_from_slice(a);
            w
        };
        let words = [
            uint(self.public_in),
            uint(self.public_out),
            uint(self.fee),
            addr(&self.relayer),
            self.execution_hash,
            addr(&self.recipient),
            uint(u128::from(self.chain_id)),
            addr(&self.pool),
            uint(u128::from(self.deadline)),
            self.notes_hash,
        ];
        for (chunk, w) in out.chunks_exact_mut(32).zip(words) {
            chunk.copy_from_slice(&w);
        }
        out
    }

    /// The `context` public input: `uint256(keccak256(abi_encode())) % r`.
    pub fn hash(&self) -> Fr {
        use ark_ff::PrimeField;
        use sha3::{Digest, Keccak256};
        Fr::from_be_bytes_mod_order(&Keccak256::digest(self.abi_encode()))
    }
}

/// `publicIn − publicOut − fee` as the field element the pool feeds the verifier: `x` if
/// non-negative, `r − |x|` if negative. `None` if `|x| ≥ 2^128` (the pool refuses it).
pub fn public_amount(public_in: u128, public_out: u128, fee: u128) -> Option<Fr> {
    let debit = public_out.checked_add(fee)?;
    if public_in >= debit { Some(Fr::from(public_in - debit)) } else { Some(-Fr::from(debit - public_in)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_default();
        }
        out
    }

    /// A vector computed independently with Foundry's `cast` (`cast keccak`, `cast abi-encode
    /// "f(uint256,uint256,uint256,address,bytes32,address,uint256,address,uint256,bytes32)" …`).
    /// Its keccak (0xbc43…0fe9) is above r, so the reduction is exercised too.
    #[test]
    fn context_matches_an_independently_computed_vector() {
        let nh = notes_hash(&[0xaa; 5], &[1, 2, 3, 4, 5]);
        assert_eq!(nh, hex32("11520e4d7847611216ccb9a3848e9ec97c18cd72d4598b39a676e6015e5b2127"));
        let ctx = TransferContext {
            public_in: 7,
            public_out: 1_000_000_000_000_000_000,
            fee: 250_000,
            relayer: [0x11; 20],
            execution_hash: [0x22; 32],
            recipient: [0x33; 20],
            chain_id: 31337,
            pool: [0x44; 20],
            deadline: 1_700_000_000,
            notes_hash: nh,
        };
        let want = hex32("2b161749a9310163c3d5d0f3a2271e327c77d004015571aa148139c8392a0fe6");
        assert_eq!(crate::field::to_be32(&ctx.hash()), want);
        // Every field is bound: changing any one changes the hash.
        let mut variants = vec![ctx.clone(); 10];
        variants[0].public_in += 1;
        variants[1].public_out += 1;
        variants[2].fee += 1;
        variants[3].relayer[19] ^= 1;
        variants[4].execution_hash[0] ^= 1;
        variants[5].recipient[0] ^= 1;
        variants[6].chain_id += 1;
        variants[7].pool[0] ^= 1;
        variants[8].deadline += 1;
        variants[9].notes_hash = notes_hash(&[1, 2, 3, 4, 5], &[0xaa; 5]);
        for v in variants {
            assert_ne!(v.hash(), ctx.hash(), "{v:?}");
        }
    }
}
