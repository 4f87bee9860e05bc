//! The note tree: a binary Merkle tree of depth [`TREE_DEPTH`] over Poseidon (width 3), empty
//! leaves 0, level-`i` empty node `Z[i+1] = Poseidon(Z[i], Z[i])`.
//!
//! [`Tree`] is an in-memory append-only tree for tests, vectors and a wallet's local view; a
//! wallet with the whole chain's leaves rebuilds it and reads its path from it.

use crate::{
    error::ZkError,
    insert::{BATCH_LEVELS, BATCH_SIZE, InsertPublic, InsertWitness},
    poseidon,
};
use ark_bn254::Fr;
use std::sync::OnceLock;

/// Depth of the note tree: 2^32 leaves (docs/design/zk-payment.md §4).
pub const TREE_DEPTH: usize = 32;

/// The roots of empty subtrees: `zeros()[i]` is the root of an empty tree of height `i`.
pub fn zeros() -> &'static [Fr; TREE_DEPTH + 1] {
    static Z: OnceLock<[Fr; TREE_DEPTH + 1]> = OnceLock::new();
    Z.get_or_init(|| {
        let mut z = [Fr::from(0u64); TREE_DEPTH + 1];
        for i in 0..TREE_DEPTH {
            // Width-3 parameters exist (tested), so this cannot fail.
            z[i + 1] = poseidon::hash(&[z[i], z[i]]).unwrap_or_default();
        }
        z
    })
}

/// A Merkle authentication path: the leaf's position and its siblings from the leaf level up.
/// Part of a prover's witness (the position identifies the note): zeroized on drop.
#[derive(Clone, Debug, PartialEq, Eq, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct MerklePath {
    /// Leaf position; bit `i` says whether the node at level `i` is a right child.
    pub index: u64,
    /// `TREE_DEPTH` siblings, leaf level first.
    pub siblings: Vec<Fr>,
}

impl MerklePath {
    /// The root reached from `leaf` along this path.
    pub fn root(&self, leaf: Fr) -> Result<Fr, ZkError> {
        if self.siblings.len() != TREE_DEPTH {
            return Err(ZkError::BadPath("wrong number of siblings"));
        }
        if TREE_DEPTH < 64 && self.index >> TREE_DEPTH != 0 {
            return Err(ZkError::BadPath("index beyond the tree"));
        }
        let mut cur = leaf;
        for (i, sib) in self.siblings.iter().enumerate() {
            cur =
                if (self.index >> i) & 1 == 1 { poseidon::hash(&[*sib, cur])? } else { poseidon::hash(&[cur, *sib])? };
        }
        Ok(cur)
    }
}

/// An append-only Merkle tree kept whole in memory (levels of non-empty nodes only).
#[derive(Clone, Debug, Default)]
pub struct Tree {
    levels: Vec<Vec<Fr>>,
}

impl Tree {
    /// An empty tree.
    pub fn new() -> Self {
        Tree { levels: vec![Vec::new(); TREE_DEPTH + 1] }
    }

    /// Number of leaves.
    pub fn len(&self) -> u64 {
        self.levels[0].len() as u64
    }

    /// Whether the tree has no leaves.
    pub fn is_empty(&self) -> bool {
        self.levels[0].is_empty()
    }

    /// Appends a leaf; returns its index.
    pub fn push(&mut self, leaf: Fr) -> Result<u64, ZkError> {
        let index = self.len();
        if TREE_DEPTH < 64 && index >> TREE_DEPTH != 0 {
            return Err(ZkError::TreeFull);
        }
        self.levels[0].push(leaf);
        let mut pos = index as usize;
        for lvl in 0..TREE_DEPTH {
            let parent = pos / 2;
            let left = self.node(lvl, parent * 2);
            let right = self.node(lvl, parent * 2 + 1);
            let h = poseidon::hash(&[left, right])?;
            let row = &mut self.levels[lvl + 1];
            if parent < row.len() {
                row[parent] = h;
            } else {
                row.push(h);
            }
            pos = parent;
        }
        Ok(index)
    }

    fn node(&self, lvl: usize, pos: usize) -> Fr {
        self.levels[lvl].get(pos).copied().unwrap_or(zeros()[lvl])
    }

    /// The current root.
    pub fn root(&self) -> Fr {
        self.node(TREE_DEPTH, 0)
    }

    /// Appends one batch (docs/design/zk-payment.md §4.3): `leaves` (1 to [`BATCH_SIZE`]) then
    /// zeros up to [`BATCH_SIZE`] slots, as one aligned subtree. Returns the insertion statement
    /// and its witness. The tree's length must be a multiple of [`BATCH_SIZE`] (every batch fills
    /// all its slots).
    pub fn insert_batch(&mut self, leaves: &[Fr]) -> Result<(InsertPublic, InsertWitness), ZkError> {
        if leaves.is_empty() || leaves.len() > BATCH_SIZE {
            return Err(ZkError::BadBatch("a batch holds 1 to BATCH_SIZE leaves"));
        }
        let start = self.len();
        if !start.is_multiple_of(BATCH_SIZE as u64) {
            return Err(ZkError::BadBatch("the tree does not end at a batch boundary"));
        }
        if TREE_DEPTH < 64 && (start + BATCH_SIZE as u64) > 1u64 << TREE_DEPTH {
            return Err(ZkError::TreeFull);
        }
        let old_root = self.root();
        let pos = (start as usize) >> BATCH_LEVELS;
        let siblings =
            (BATCH_LEVELS..TREE_DEPTH).map(|lvl| self.node(lvl, (pos >> (lvl - BATCH_LEVELS)) ^ 1)).collect();
        let mut batch = [Fr::from(0u64); BATCH_SIZE];
        batch[..leaves.len()].copy_from_slice(leaves);
        for leaf in batch {
            self.push(leaf)?;
        }
        let public = InsertPublic { old_root, new_root: self.root(), start_index: start, leaves: batch };
        Ok((public, InsertWitness { siblings }))
    }

    /// The path of leaf `index`.
    pub fn path(&self, index: u64) -> Result<MerklePath, ZkError> {
        if index >= self.len() {
            return Err(ZkError::BadPath("no such leaf"));
        }
        let mut pos = index as usize;
        let mut siblings = Vec::with_capacity(TREE_DEPTH);
        for lvl in 0..TREE_DEPTH {
            siblings.push(self.node(lvl, pos ^ 1));
            pos /= 2;
        }
        Ok(MerklePath { index, siblings })
    }
}
