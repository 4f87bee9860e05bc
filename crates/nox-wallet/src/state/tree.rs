//! The pool's Merkle tree as the wallet keeps it, appended one aligned batch at a time.

use super::BATCH_SIZE;
use crate::error::WalletError;
use ark_bn254::Fr;
use nox_zk::{MerklePath, TREE_DEPTH, merkle::zeros, poseidon};

/// The pool's tree as the wallet keeps it: every node of every non-empty subtree, appended one
/// aligned batch of [`BATCH_SIZE`] = 32 leaves at a time. A batch costs 31 hashes for its subtree and
/// one per level above it (58 Poseidon hashes), where appending leaf by leaf costs 32 per leaf (1,024
/// per batch):
/// what makes a sync of 10,000 notes take well under the 2 s. Hashing is `nox_zk`'s
/// (`Poseidon(left, right)`, empty subtrees `zeros()`), so its roots and paths are
/// `nox_zk::Tree`'s (checked against it in tests/wallet.rs, and against every published root).
#[derive(Clone, Debug)]
pub(super) struct BatchTree {
    /// `levels[0]` are the leaves, `levels[TREE_DEPTH]` the root (once anything is inserted).
    levels: Vec<Vec<Fr>>,
}

impl BatchTree {
    pub(super) fn new() -> Self {
        BatchTree { levels: vec![Vec::new(); TREE_DEPTH + 1] }
    }

    pub(super) fn len(&self) -> u64 {
        self.levels[0].len() as u64
    }

    pub(super) fn leaves(&self) -> &[Fr] {
        &self.levels[0]
    }

    pub(super) fn node(&self, lvl: usize, pos: usize) -> Fr {
        self.levels[lvl].get(pos).copied().unwrap_or(zeros()[lvl])
    }

    pub(super) fn root(&self) -> Fr {
        self.node(TREE_DEPTH, 0)
    }

    /// Appends one aligned batch (the tree always ends at a batch boundary).
    pub(super) fn push_batch(&mut self, batch: &[Fr; BATCH_SIZE as usize]) -> Result<(), WalletError> {
        let start = self.levels[0].len();
        if (start as u64 + BATCH_SIZE) > 1u64 << TREE_DEPTH {
            return Err(WalletError::Inconsistent("a batch beyond the tree's 2^32 leaves".into()));
        }
        self.levels[0].extend_from_slice(batch);
        let (mut lo, mut hi) = (start, start + BATCH_SIZE as usize);
        for lvl in 0..TREE_DEPTH {
            let (plo, phi) = (lo / 2, (hi - 1) / 2 + 1);
            for p in plo..phi {
                let h = poseidon::hash(&[self.node(lvl, 2 * p), self.node(lvl, 2 * p + 1)])?;
                let row = &mut self.levels[lvl + 1];
                match row.get_mut(p) {
                    Some(slot) => *slot = h,
                    None => row.push(h),
                }
            }
            (lo, hi) = (plo, phi);
        }
        Ok(())
    }

    pub(super) fn path(&self, index: u64) -> Result<MerklePath, WalletError> {
        if index >= self.len() {
            return Err(WalletError::BadRequest("no such leaf"));
        }
        let mut pos = index as usize;
        let mut siblings = Vec::with_capacity(TREE_DEPTH);
        for lvl in 0..TREE_DEPTH {
            siblings.push(self.node(lvl, pos ^ 1));
            pos /= 2;
        }
        Ok(MerklePath { index, siblings })
    }

    /// The siblings above the batch subtree starting at leaf `start` (the insertion witness).
    pub(super) fn batch_siblings(&self, start: u64) -> Result<Vec<Fr>, WalletError> {
        let levels = BATCH_SIZE.trailing_zeros() as usize;
        if !start.is_multiple_of(BATCH_SIZE) || (start + BATCH_SIZE) > 1u64 << TREE_DEPTH {
            return Err(WalletError::BadRequest("a batch starts at a free multiple of 16"));
        }
        let pos = (start as usize) >> levels;
        Ok((levels..TREE_DEPTH).map(|lvl| self.node(lvl, (pos >> (lvl - levels)) ^ 1)).collect())
    }
}
