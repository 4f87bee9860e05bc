//! Applying the pool's events to a [`PoolView`], in chain order: queueing commitments,
//! recognising this wallet's notes (and corrupt ones addressed to it), marking spends by
//! nullifier, and inserting batches with the root checked.

use super::*;

impl PoolView {
    fn enqueue(&mut self, queue_index: u64, commitment: Fr) -> Result<(), WalletError> {
        if queue_index != self.next_queue {
            return Err(WalletError::Inconsistent(format!(
                "queue index {queue_index} where {} was expected (missed or repeated events)",
                self.next_queue
            )));
        }
        self.queue.insert(queue_index, commitment);
        self.next_queue += 1;
        Ok(())
    }

    /// Applies one event with the seed's keys. On error the view must be discarded (it may be
    /// half-updated). Prefer [`PoolView::apply_all`] for many events: it derives the keys once.
    pub fn apply(&mut self, seed: &Seed, event: &PoolEvent) -> Result<(), WalletError> {
        self.apply_all(seed, std::slice::from_ref(event))
    }

    /// Applies events in chain order with the seed's keys (a full view only).
    pub fn apply_all<'a>(
        &mut self,
        seed: &Seed,
        events: impl IntoIterator<Item = &'a PoolEvent>,
    ) -> Result<(), WalletError> {
        if self.mode != Mode::Full {
            return Err(WalletError::ViewMode("a viewing-only view is fed with the viewing key, not the seed"));
        }
        let keys = Keys::full(seed)?;
        events.into_iter().try_for_each(|e| self.apply_with(&keys, e))
    }

    /// Applies events in chain order with a viewing key (a view made by
    /// [`PoolView::new_viewing_only`]): incoming notes, no spends.
    pub fn apply_viewing<'a>(
        &mut self,
        vk: &ViewingKey,
        events: impl IntoIterator<Item = &'a PoolEvent>,
    ) -> Result<(), WalletError> {
        if self.mode != Mode::ViewingOnly {
            return Err(WalletError::ViewMode("a full view is fed with the seed: a viewing key would miss spends"));
        }
        let keys = Keys::viewing(vk);
        events.into_iter().try_for_each(|e| self.apply_with(&keys, e))
    }

    fn apply_with(&mut self, keys: &Keys<'_>, event: &PoolEvent) -> Result<(), WalletError> {
        match event {
            PoolEvent::Deposited { queue_index, commitment, asset, amount, memo } => {
                self.enqueue(*queue_index, *commitment)?;
                self.deposits.push(DepositSeen {
                    queue_index: *queue_index,
                    asset: *asset,
                    amount: *amount,
                    time_s: None,
                });
                self.recognise(keys, *queue_index, *commitment, *asset, memo, Some(*amount), Origin::Deposit)?;
            }
            PoolEvent::Transacted { first_queue_index, nullifiers, commitments, notes, asset, .. } => {
                let mut ours = false;
                if let Some(sk) = &keys.sk {
                    for n in self.notes.iter_mut().filter(|n| !n.spent && n.asset == *asset) {
                        let Some(leaf) = n.leaf_index else { continue };
                        let nf = match n.nullifier {
                            Some(nf) => nf,
                            None => {
                                let nf = sk.nullifier(&n.commitment, leaf)?;
                                n.nullifier = Some(nf);
                                nf
                            }
                        };
                        if nullifiers.contains(&nf) {
                            n.spent = true;
                            ours = true;
                        }
                    }
                }
                let origin = if ours { Origin::Own } else { Origin::Received };
                for j in 0..2 {
                    let q = first_queue_index
                        .checked_add(j as u64)
                        .ok_or(WalletError::Inconsistent("queue index overflows".into()))?;
                    self.enqueue(q, commitments[j])?;
                    self.recognise(keys, q, commitments[j], *asset, &notes[j], None, origin)?;
                }
            }
            PoolEvent::BatchInserted { start_leaf, first_queue, count, new_root } => {
                self.insert_batch(keys, *start_leaf, *first_queue, *count, *new_root)?;
            }
        }
        Ok(())
    }

    /// Opens one ciphertext; keeps the note if it is ours and matches, records it as corrupt if it
    /// is addressed to us and does not.
    #[allow(clippy::too_many_arguments)]
    fn recognise(
        &mut self,
        keys: &Keys<'_>,
        queue_index: u64,
        commitment: Fr,
        asset: Fr,
        ct: &[u8],
        amount: Option<u128>,
        origin: Origin,
    ) -> Result<(), WalletError> {
        let corrupt = |reason, claimed_value| CorruptNote { queue_index, commitment, asset, reason, claimed_value };
        match memo::open(keys.vk(), ct, &asset) {
            Opened::NotMine => {}
            Opened::Corrupt(_) => self.corrupt.push(corrupt(CorruptReason::Undecryptable, None)),
            Opened::Mine { value, blinding } => {
                let matches =
                    amount.is_none_or(|a| a == value) && keys.vk().commitment(value, asset, blinding)? == commitment;
                if !matches {
                    self.corrupt.push(corrupt(CorruptReason::CommitmentMismatch, Some(value)));
                } else if value != 0 {
                    self.notes.push(OwnedNote {
                        value,
                        asset,
                        blinding,
                        commitment,
                        queue_index,
                        leaf_index: None,
                        nullifier: None,
                        spent: false,
                        origin,
                    });
                }
            }
        }
        Ok(())
    }

    fn insert_batch(
        &mut self,
        keys: &Keys<'_>,
        start: u64,
        first: u64,
        count: u64,
        new_root: Fr,
    ) -> Result<(), WalletError> {
        let bad = |m: String| Err(WalletError::Inconsistent(m));
        if start != self.tree.len() {
            return bad(format!("batch starts at leaf {start}, the tree ends at {}", self.tree.len()));
        }
        if count == 0 || count > BATCH_SIZE {
            return bad(format!("batch of {count} leaves"));
        }
        if self.queue.keys().next() != Some(&first) {
            return bad(format!("batch starts at queue index {first}, the queue does not"));
        }
        let leaves: Vec<Fr> =
            (first..first + count).map(|q| self.queue.get(&q).copied()).collect::<Option<_>>().ok_or(
                WalletError::Inconsistent(format!("batch inserts queue {first}..{} not all queued", first + count)),
            )?;
        let mut batch = [Fr::from(0u64); BATCH_SIZE as usize];
        batch[..leaves.len()].copy_from_slice(&leaves);
        self.tree.push_batch(&batch)?;
        for (i, _) in leaves.iter().enumerate() {
            let q = first + i as u64;
            let index = start + i as u64;
            self.queue.remove(&q);
            for n in self.notes.iter_mut().filter(|n| n.queue_index == q) {
                n.leaf_index = Some(index);
                if let Some(sk) = &keys.sk {
                    n.nullifier = Some(sk.nullifier(&n.commitment, index)?);
                }
            }
        }
        if self.tree.root() != new_root {
            return bad("the batch's leaves do not produce the published root".into());
        }
        self.root = new_root;
        Ok(())
    }
}
