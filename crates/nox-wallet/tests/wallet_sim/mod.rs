//! The simulated pool of `wallet.rs`: a `ShieldedPool` that queues commitments, inserts aligned
//! batches, keeps its roots and nullifiers and checks each `Transaction` as the contract does
//! (the statement with `transfer::is_satisfied`, no proof); the wallets synchronised with it; and
//! the request builders the tests share.

use super::*;

pub(crate) fn rng() -> ChaCha20Rng {
    ChaCha20Rng::from_seed([7; 32])
}

pub(crate) const CHAIN: u64 = 31337;
pub(crate) const POOL: [u8; 20] = [0x33; 20];
pub(crate) const DEADLINE: u64 = 4_102_444_800;
pub(crate) const RELAYER: [u8; 20] = [0x11; 20];
pub(crate) const ACTION: [u8; 32] = [0x22; 32];

pub(crate) fn eth() -> Fr {
    Fr::from(0u64)
}

/// What the pool refused, in the simulator.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    UnknownRoot,
    SpentNullifier,
    Context,
    PublicAmount,
    Statement,
}

/// A pool simulator: queue, tree, known roots, spent nullifiers, events.
pub(crate) struct Pool {
    pub(crate) queue: Vec<Fr>,
    pub(crate) inserted: usize,
    pub(crate) tree: Tree,
    pub(crate) roots: Vec<Fr>,
    pub(crate) nullifiers: Vec<Fr>,
    pub(crate) events: Vec<PoolEvent>,
}

impl Pool {
    pub(crate) fn new() -> Self {
        let tree = Tree::new();
        Pool { queue: vec![], inserted: 0, roots: vec![tree.root()], tree, nullifiers: vec![], events: vec![] }
    }

    /// A deposit of `amount` of `asset` to `to`, with its note ciphertext, as `deposit` emits it.
    pub(crate) fn deposit(&mut self, to: &PaymentAddress, asset: Fr, amount: u128, rng: &mut ChaCha20Rng) {
        let n = nox_zk::Note::new(amount, asset, to.owner(), rng);
        let memo = memo::seal(to, &asset, amount, &n.blinding, rng);
        let commitment = note::commitment(amount, asset, n.inner().unwrap()).unwrap();
        self.events.push(PoolEvent::Deposited {
            queue_index: self.queue.len() as u64,
            commitment,
            asset,
            amount,
            memo,
        });
        self.queue.push(commitment);
    }

    /// `transact` / `pay` of a prepared transaction, submitted by `relayer` (zero: direct) for
    /// `action`: the pool's checks, then the `Transacted` event built from the `Transaction`.
    pub(crate) fn transact(
        &mut self,
        p: &PreparedTransaction,
        relayer: [u8; 20],
        action: [u8; 32],
    ) -> Result<(), Refused> {
        let t = &p.fields;
        let root = field::from_be32(&t.root).unwrap();
        if !self.roots.contains(&root) {
            return Err(Refused::UnknownRoot);
        }
        let nullifiers = t.nullifiers.map(|n| field::from_be32(&n).unwrap());
        if nullifiers.iter().any(|n| self.nullifiers.contains(n)) || nullifiers[0] == nullifiers[1] {
            return Err(Refused::SpentNullifier);
        }
        let context = TransferContext {
            public_in: t.public_in,
            public_out: t.public_out,
            fee: t.fee,
            relayer,
            execution_hash: action,
            recipient: t.recipient,
            chain_id: CHAIN,
            pool: POOL,
            deadline: t.deadline,
            notes_hash: transfer::notes_hash(&t.notes[0], &t.notes[1]),
        };
        if context.hash() != p.public.context {
            return Err(Refused::Context);
        }
        if transfer::public_amount(t.public_in, t.public_out, t.fee) != Some(p.public.public_amount) {
            return Err(Refused::PublicAmount);
        }
        let mut asset = [0u8; 32];
        asset[12..].copy_from_slice(&t.asset);
        let commitments = t.commitments.map(|c| field::from_be32(&c).unwrap());
        // The verifier's inputs are the pool's own values: the proof is for exactly these.
        let public = transfer::TransferPublic {
            root,
            nullifiers,
            commitments,
            public_amount: p.public.public_amount,
            asset: field::from_be32(&asset).unwrap(),
            context: context.hash(),
        };
        if !transfer::is_satisfied(&public, &p.witness).unwrap() {
            return Err(Refused::Statement);
        }
        self.nullifiers.extend(nullifiers);
        self.events.push(PoolEvent::Transacted {
            first_queue_index: self.queue.len() as u64,
            nullifiers,
            commitments,
            notes: t.notes.clone(),
            asset: public.asset,
            public_in: t.public_in,
            public_out: t.public_out,
            fee: t.fee,
        });
        self.queue.extend(commitments);
        Ok(())
    }

    /// Inserts up to `BATCH_SIZE` queued leaves, padding the subtree with zeros.
    pub(crate) fn insert(&mut self) {
        let start = self.tree.len();
        let count = (self.queue.len() - self.inserted).min(nox_wallet::state::BATCH_SIZE as usize);
        for i in 0..count {
            self.tree.push(self.queue[self.inserted + i]).unwrap();
        }
        while !self.tree.len().is_multiple_of(nox_wallet::state::BATCH_SIZE) {
            self.tree.push(Fr::from(0u64)).unwrap();
        }
        self.events.push(PoolEvent::BatchInserted {
            start_leaf: start,
            first_queue: self.inserted as u64,
            count: count as u64,
            new_root: self.tree.root(),
        });
        self.roots.push(self.tree.root());
        self.inserted += count;
    }

    /// Inserts everything queued.
    pub(crate) fn insert_all(&mut self) {
        while self.inserted < self.queue.len() {
            self.insert();
        }
    }
}

/// A wallet: its seed and its view, synchronised with the pool by applying the events it has
/// not seen.
pub(crate) struct Wallet {
    pub(crate) seed: Seed,
    pub(crate) view: PoolView,
    pub(crate) seen: usize,
}

impl Wallet {
    pub(crate) fn new(rng: &mut ChaCha20Rng) -> Self {
        Wallet { seed: Seed::random(rng), view: PoolView::new(), seen: 0 }
    }

    pub(crate) fn address(&self) -> PaymentAddress {
        self.seed.address().unwrap()
    }

    pub(crate) fn sync(&mut self, pool: &Pool) {
        self.view.apply_all(&self.seed, &pool.events[self.seen..]).unwrap();
        self.seen = pool.events.len();
    }

    /// (spendable, pending) of ETH.
    pub(crate) fn eth(&self) -> (u128, u128) {
        let b = self.view.balance(&eth());
        (b.spendable, b.pending)
    }

    /// Unspent note values of ETH, sorted.
    pub(crate) fn note_values(&self) -> Vec<u128> {
        let mut v: Vec<u128> = self.view.notes().iter().filter(|n| !n.spent).map(|n| n.value).collect();
        v.sort_unstable();
        v
    }
}

/// A request paid through the mixnet: relayer and action bound, no public input.
pub(crate) fn paid(outputs: Vec<(PaymentAddress, u128)>, fee: u128) -> TxRequest {
    TxRequest {
        asset: eth(),
        outputs,
        public_in: 0,
        public_out: 0,
        fee,
        recipient: [0; 20],
        relayer: RELAYER,
        execution_hash: ACTION,
        chain_id: CHAIN,
        pool: POOL,
        deadline: DEADLINE,
        avoid: vec![],
    }
}

/// A direct request (the wallet submits `transact` itself): no relayer, no fee.
pub(crate) fn direct(outputs: Vec<(PaymentAddress, u128)>) -> TxRequest {
    TxRequest { relayer: [0; 20], execution_hash: [0; 32], fee: 0, ..paid(outputs, 0) }
}

/// Helper: `Fr::pow` for a small exponent without importing `Field` in every test.
pub(crate) trait PowU64 {
    fn pow_u64(self, e: u64) -> Fr;
}
impl PowU64 for Fr {
    fn pow_u64(self, e: u64) -> Fr {
        (0..e).fold(Fr::from(1u64), |acc, _| acc * self)
    }
}
