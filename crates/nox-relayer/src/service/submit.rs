//! Submission: admission, pricing and sending a bundle, then following it to a receipt
//! (rebroadcast, fee bumps, settlement).

use super::*;

impl Relayer {
    /// Admits, simulates, prices and (unless asked only to simulate) submits a bundle, then
    /// waits for its receipt up to the policy's wait.
    pub async fn submit(self: &Arc<Self>, s: Submission) -> Outcome {
        let arrived = Instant::now();
        let key = request_key(&s);
        // Before any proof check: remembered refusals, spent nullifiers, the deadline horizon.
        let early = match self.guard.lock() {
            Ok(mut g) => g.before_admission(&key, crate::check::claimed(&s.bundle.paymentData), unix_now_ms()),
            Err(_) => return chain_refusal("relayer guard lock poisoned"),
        };
        if let Err(d) = early {
            return refused_by(d);
        }
        // Simulate-only requests have their own small budget; submissions keep theirs.
        let budget = if s.simulate_only { &self.simulating } else { &self.permits };
        let Ok(permit) = budget.clone().try_acquire_owned() else {
            return Outcome::refused(Reason::Busy, "too many bundles in flight at this relayer");
        };
        let admission = self.admission.clone();
        let vk = self.vk.clone();
        let checked = {
            let s = s.clone();
            self.verifications.fetch_add(1, Ordering::Relaxed);
            tokio::task::spawn_blocking(move || admit(&admission, &vk, &s, unix_now())).await
        };
        let admitted = match checked {
            Ok(Ok(a)) => a,
            Ok(Err((reason, detail))) => {
                let d = Denied { reason, detail, required_fee: None };
                self.remember(&key, &[], &d);
                return refused_by(d);
            }
            Err(e) => return Outcome::refused(Reason::Malformed, format!("admission failed: {e}")),
        };
        let nullifiers = admitted.nullifiers;
        // Both nullifiers: a payment spending either note of one in flight is a replay, whatever
        // the order of its inputs.
        let fresh = self
            .in_flight
            .lock()
            .map(|mut set| {
                let free = nullifiers.iter().all(|n| !set.contains(n));
                if free {
                    set.extend(nullifiers);
                }
                free
            })
            .unwrap_or(false);
        if !fresh {
            return Outcome::refused(
                Reason::Replayed,
                "a bundle spending this payment's notes is already in flight here",
            );
        }
        let guard = InFlight { relayer: self.clone(), nullifiers };
        // The proof verified: the nullifiers are this payment's. Their simulation budgets, and
        // the global one of simulate-only requests (a copy already in flight spent none).
        let budgeted = match self.guard.lock() {
            Ok(mut g) => g.before_chain_work(nullifiers, s.simulate_only, unix_now_ms()),
            Err(_) => return chain_refusal("relayer guard lock poisoned"),
        };
        if let Err(d) = budgeted {
            return refused_by(d);
        }
        self.simulation_rounds.fetch_add(1, Ordering::Relaxed);
        let mut found_spent = Vec::new();
        let outcome = self.price_and_send(&s, &admitted, guard, arrived, &mut found_spent).await;
        drop(permit);
        match &outcome {
            Outcome::Refused { reason, detail, required_fee } => {
                let d = Denied { reason: *reason, detail: detail.clone(), required_fee: *required_fee };
                self.remember(&key, &found_spent, &d);
            }
            // Mined with its payment through: both nullifiers are spent.
            Outcome::Included { .. } => {
                if let Ok(mut g) = self.guard.lock() {
                    g.spent(&nullifiers, unix_now_ms());
                }
            }
            _ => {}
        }
        outcome
    }

    pub(super) fn remember(&self, key: &B256, spent: &[U256], d: &Denied) {
        if let Ok(mut g) = self.guard.lock() {
            g.remember(key, spent, d, unix_now_ms());
        }
    }

    /// The pool views (both nullifiers unspent, the root known), the action's target, both
    /// simulations, pricing, then the transaction. `found_spent` receives the nullifiers the
    /// pool says are spent (the guard remembers them).
    pub(super) async fn price_and_send(
        self: &Arc<Self>,
        s: &Submission,
        a: &Admitted,
        guard: InFlight,
        arrived: Instant,
        found_spent: &mut Vec<U256>,
    ) -> Outcome {
        let pool = ShieldedPool::new(self.config.pool, &self.provider);
        for n in a.nullifiers {
            match pool.isSpent(n).call().await {
                Ok(true) => found_spent.push(n),
                Ok(false) => {}
                Err(e) => return chain_refusal(e),
            }
        }
        if !found_spent.is_empty() {
            return Outcome::refused(Reason::Spent, "a note of the payment is already spent");
        }
        match pool.isKnownRoot(a.transaction.root).call().await {
            Ok(true) => {}
            Ok(false) => return Outcome::refused(Reason::UnknownRoot, "the proof's root is not in the pool's window"),
            Err(e) => return chain_refusal(e),
        }
        // A call with calldata to an address without code does nothing and succeeds: a typo'd
        // target would be "executed" and the fee paid for nothing (issue 35). Refused; a
        // payment-only bundle (target 0, no calldata) is not a call to anything.
        let action = &s.bundle.action;
        if !action.data.is_empty() && !precompile(action.target) {
            match self.provider.get_code_at(action.target).await {
                Ok(code) if code.is_empty() => {
                    return Outcome::refused(
                        Reason::NoCode,
                        format!("the action calls {} with calldata, but no contract is there", action.target),
                    );
                }
                Ok(_) => {}
                Err(e) => return chain_refusal(e),
            }
        }
        let plan = match self.fee_plan().await {
            Ok((_, plan)) => plan,
            Err(e) => return chain_refusal(e),
        };
        let p = &self.config.policy;
        let first = match self.simulate(&self.request(&s.calldata, p.gas_cap, &plan)).await {
            Ok(sim) => sim,
            Err(refusal) => return refusal,
        };
        let action_gas = u64::try_from(s.bundle.action.gas).unwrap_or(u64::MAX);
        let mut limit = bundle_gas_limit(first.gas_used, p.payment_gas, action_gas, p.gas_extra_bps);
        // The L1 data fee of the transaction as it will be signed (an L2; 0 on an L1). On
        // Arbitrum it is charged as gas at the base fee: the limit must hold it (with the
        // base-fee headroom: fewer wei per gas, more gas) and the gas price covers it; on the OP
        // stack it is charged beside the gas and priced beside it.
        let mut l1_fee = U256::ZERO;
        if self.fee_model != FeeModel::L1 {
            let nonce = self.next_nonce().await;
            let signed = match self.sign(self.request(&s.calldata, limit, &plan), nonce).await {
                Ok((_, signed)) => signed,
                Err(e) => return chain_refusal(e),
            };
            l1_fee = match self.l1_fee(&signed).await {
                Ok(fee) => fee,
                Err(e) => return chain_refusal(e),
            };
            if self.fee_model == FeeModel::Arbitrum {
                let l1_gas = nox_chain::l2fee::ArbFeeParams::gas_for(l1_fee, plan.base_fee.max(1));
                let l1_gas = crate::price::l1_fee_gas(
                    U256::from(l1_gas) * U256::from(crate::price::BPS + p.base_fee_headroom_bps),
                    u128::from(crate::price::BPS),
                );
                limit = limit.saturating_add(l1_gas);
                l1_fee = U256::ZERO;
            }
        }
        // The exact transaction: same sender, calldata, fees and the gas limit it will carry.
        let exact = self.request(&s.calldata, limit, &plan);
        let sim = match self.simulate(&exact).await {
            Ok(sim) => sim,
            Err(refusal) => return refusal,
        };
        if first.action_success && !sim.action_success {
            return Outcome::refused(
                Reason::ActionReverts,
                "the action runs out of gas at the gas limit the relayer sets",
            );
        }
        if !sim.action_success && !s.pay_on_revert {
            return Outcome::refused(
                Reason::ActionReverts,
                "the action reverts in simulation (ask to pay anyway to submit it)",
            );
        }
        // The fee covers the transaction's gas limit and the insertion share of its two
        // output notes (what the relayer's inserter will spend on them), at the same price.
        let priced_gas = limit.saturating_add(p.insertion_gas());
        let required = required_wei(priced_gas, plan.max_fee_per_gas, p.margin_bps)
            .saturating_add(crate::price::with_margin(l1_fee, p.margin_bps));
        let value = match self.value_wei(a.asset, a.fee).await {
            Ok(v) => v,
            Err(e) => return price_refusal(e),
        };
        let required_fee = match self.fee_for_wei(a.asset, required).await {
            Ok(f) => f,
            Err(e) => return price_refusal(e),
        };
        if value < required {
            return Outcome::Refused {
                reason: Reason::Unprofitable,
                detail: format!(
                    "the fee is worth {value} wei; gas limit {limit} and the outputs' insertion share {} gas at {} wei per gas, an L1 data fee of {l1_fee} wei, plus a {} bps margin needs {required} wei",
                    p.insertion_gas(),
                    plan.max_fee_per_gas,
                    p.margin_bps
                ),
                required_fee,
            };
        }
        if s.simulate_only {
            return Outcome::Simulated {
                gas_used: sim.gas_used,
                gas_limit: limit,
                action_success: sim.action_success,
                required_fee: required_fee.unwrap_or(U256::MAX),
                prepare_ms: millis(arrived.elapsed()),
            };
        }
        let nonce = match self.send_new(&exact, a, value).await {
            Ok(nonce) => nonce,
            Err(refusal) => return refusal,
        };
        let prepare_ms = millis(arrived.elapsed());
        let (tx, rx) = oneshot::channel();
        let relayer = self.clone();
        tokio::spawn(async move {
            let mut outcome = relayer.track(nonce, Some(value)).await;
            if let Outcome::Included { prepare_ms: p, .. } = &mut outcome {
                *p = prepare_ms;
            }
            drop(guard);
            let _ = tx.send(outcome);
        });
        let hash = self.latest_hash(nonce).await.unwrap_or_default();
        match tokio::time::timeout(Duration::from_millis(p.wait_ms), rx).await {
            Ok(Ok(outcome)) => outcome,
            _ => Outcome::Pending {
                tx_hash: hash,
                detail: format!("not mined within {} ms; the relayer keeps tracking it", p.wait_ms),
            },
        }
    }

    pub(super) async fn latest_hash(&self, nonce: u64) -> Option<B256> {
        self.journal.lock().await.pending().iter().find(|p| p.nonce == nonce).and_then(|p| p.hashes.last().copied())
    }

    pub(super) async fn sign(&self, tx: TransactionRequest, nonce: u64) -> Result<(B256, Bytes), String> {
        let envelope = tx.with_nonce(nonce).build(&self.wallet).await.map_err(|e| e.to_string())?;
        Ok((*envelope.tx_hash(), Bytes::from(envelope.encoded_2718())))
    }

    /// Signs at the next nonce, journals, broadcasts. The journal lock is held until the
    /// broadcast's answer, so a refused broadcast gives its nonce back and no gap opens.
    pub(super) async fn send_new(
        &self,
        tx: &TransactionRequest,
        a: &Admitted,
        value_wei: U256,
    ) -> Result<u64, Outcome> {
        let mut journal = self.journal.lock().await;
        let nonce = journal.next_nonce();
        let (hash, raw) = self.sign(tx.clone(), nonce).await.map_err(chain_refusal)?;
        journal
            .record(Pending {
                nonce,
                hashes: vec![hash],
                raw: raw.clone(),
                gas_limit: tx.gas.unwrap_or_default(),
                priority_fee: tx.max_priority_fee_per_gas.unwrap_or_default(),
                max_fee_per_gas: tx.max_fee_per_gas.unwrap_or_default(),
                fee: a.fee,
                asset: a.asset,
                nullifier: a.nullifiers[0],
                value_wei,
                bumps: 0,
            })
            .map_err(chain_refusal)?;
        match self.provider.send_raw_transaction(&raw).await {
            Ok(_) => Ok(nonce),
            Err(e) if e.to_string().contains("already known") => Ok(nonce),
            Err(e) => {
                if let Err(j) = journal.unrecord(nonce) {
                    tracing::error!(nonce, error = %j, "relayer: could not take back a refused transaction");
                }
                match node_says(&e) {
                    Some(said) => {
                        tracing::warn!(nonce, error = %e, "relayer: broadcast refused");
                        Err(Outcome::refused(
                            Reason::Chain,
                            format!("the relayer's node refused the transaction: {said}"),
                        ))
                    }
                    None => Err(chain_refusal(e)),
                }
            }
        }
    }

    pub(super) async fn rebroadcast(&self, nonce: u64) {
        let raw = self.journal.lock().await.pending().iter().find(|p| p.nonce == nonce).map(|p| p.raw.clone());
        if let Some(raw) = raw
            && let Err(e) = self.provider.send_raw_transaction(&raw).await
        {
            tracing::info!(nonce, error = %e, "relayer: rebroadcast not accepted (mined or known already?)");
        }
    }

    /// Follows the transaction at `nonce` to a receipt, bumping its fees while the bumped price
    /// stays profitable for a fee worth `value_wei` (unknown after a restart: then it re-prices
    /// from the journal's fee and asset). Settles the journal entry.
    pub(super) async fn track(&self, nonce: u64, value_wei: Option<U256>) -> Outcome {
        let p = &self.config.policy;
        let sent = Instant::now();
        let mut last_send = Instant::now();
        let mut bumping = true;
        let mut nonce_taken_polls = 0u32;
        loop {
            tokio::time::sleep(Duration::from_millis(p.poll_ms)).await;
            let Some(entry) = self.journal.lock().await.pending().iter().find(|e| e.nonce == nonce).cloned() else {
                return Outcome::refused(Reason::Chain, "the transaction left the journal");
            };
            for hash in entry.hashes.iter().rev() {
                match self.provider.get_transaction_receipt(*hash).await {
                    Ok(Some(receipt)) => {
                        self.settle(nonce).await;
                        return receipt_outcome(&receipt, &entry, self.config.executor, millis(sent.elapsed()));
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(nonce, error = %e, "relayer: receipt poll failed"),
                }
            }
            // Our nonce used by a transaction we never signed (the key used elsewhere).
            match self.provider.get_transaction_count(self.account).latest().await {
                Ok(count) if count > nonce => {
                    nonce_taken_polls += 1;
                    if nonce_taken_polls >= 3 {
                        self.settle(nonce).await;
                        return Outcome::refused(Reason::Chain, "the relayer's nonce was used by another transaction");
                    }
                    continue;
                }
                _ => nonce_taken_polls = 0,
            }
            if bumping && entry.bumps < p.max_bumps && last_send.elapsed() >= Duration::from_millis(p.bump_after_ms) {
                bumping = self.bump(&entry, value_wei).await;
                last_send = Instant::now();
            }
        }
    }

    pub(super) async fn settle(&self, nonce: u64) {
        if let Err(e) = self.journal.lock().await.settle(nonce) {
            tracing::error!(nonce, error = %e, "relayer: could not settle a journal entry");
        }
    }

    /// One fee bump of `entry`, if still profitable. Returns whether further bumps may follow.
    pub(super) async fn bump(&self, entry: &Pending, value_wei: Option<U256>) -> bool {
        let p = &self.config.policy;
        let Ok((_, current)) = self.fee_plan().await else { return true };
        let old = FeePlan {
            base_fee: current.base_fee,
            priority_fee: entry.priority_fee,
            max_fee_per_gas: entry.max_fee_per_gas,
        };
        let new = old.bumped(p.bump_bps, &current);
        let value = match value_wei {
            Some(v) => v,
            None => self.value_wei(entry.asset, entry.fee).await.unwrap_or(U256::ZERO),
        };
        let priced_gas = entry.gas_limit.saturating_add(p.insertion_gas());
        // The OP stack's data fee is charged beside the gas (Arbitrum's is in the gas limit).
        let l1_fee = match self.fee_model {
            FeeModel::OpStack => match self.l1_fee(&entry.raw).await {
                Ok(fee) => fee,
                Err(_) => return true,
            },
            _ => U256::ZERO,
        };
        let required = required_wei(priced_gas, new.max_fee_per_gas, p.margin_bps)
            .saturating_add(crate::price::with_margin(l1_fee, p.margin_bps));
        if required > value {
            tracing::info!(nonce = entry.nonce, "relayer: no further fee bump (it would be unprofitable)");
            return false;
        }
        let tx = TransactionRequest::default()
            .with_from(self.account)
            .with_to(self.config.executor)
            .with_input(self.calldata_of(entry).unwrap_or_default())
            .with_chain_id(self.config.chain_id)
            .with_gas_limit(entry.gas_limit)
            .with_max_fee_per_gas(new.max_fee_per_gas)
            .with_max_priority_fee_per_gas(new.priority_fee);
        let Ok((hash, raw)) = self.sign(tx, entry.nonce).await else { return false };
        let mut journal = self.journal.lock().await;
        if let Err(e) = journal.replace(entry.nonce, hash, raw.clone(), new.priority_fee, new.max_fee_per_gas) {
            tracing::error!(nonce = entry.nonce, error = %e, "relayer: could not journal a fee bump");
            return false;
        }
        drop(journal);
        if let Err(e) = self.provider.send_raw_transaction(&raw).await {
            tracing::info!(nonce = entry.nonce, error = %e, "relayer: fee bump not accepted");
        } else {
            tracing::info!(nonce = entry.nonce, max_fee = new.max_fee_per_gas, "relayer: fee bumped");
        }
        true
    }

    /// The calldata of a journaled transaction (decoded from its signed bytes).
    pub(super) fn calldata_of(&self, entry: &Pending) -> Option<Bytes> {
        use alloy::consensus::{Transaction, TxEnvelope};
        use alloy::eips::eip2718::Decodable2718;
        let envelope = TxEnvelope::decode_2718(&mut entry.raw.as_ref()).ok()?;
        Some(envelope.input().clone())
    }
}
