//! Quoting and simulation: the fee plan, the quote a client pays against, the L1 data fee and
//! the simulated run of the exact transaction.

use super::*;

impl Relayer {
    pub(super) async fn fee_plan(&self) -> Result<(u64, FeePlan), String> {
        let block = self
            .provider
            .get_block_by_number(BlockNumberOrTag::Latest)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the node has no latest block")?;
        let next = block.header.inner.next_block_base_fee(BaseFeeParams::ethereum()).unwrap_or(0);
        let p = &self.config.policy;
        Ok((block.header.inner.number, FeePlan::new(u128::from(next), p.priority_fee_wei, p.base_fee_headroom_bps)))
    }

    /// The value of `fee` of `asset` in wei (ETH: itself; a token: what selling it yields).
    pub(super) async fn value_wei(&self, asset: Address, fee: U256) -> Result<U256, PriceError> {
        if asset == Address::ZERO {
            return Ok(fee);
        }
        Ok(self.feed.price(&self.provider, asset).await?.map_or(U256::ZERO, |p| p.value_in_wei(fee)))
    }

    /// The smallest fee in `asset` worth `wei`.
    pub(super) async fn fee_for_wei(&self, asset: Address, wei: U256) -> Result<Option<U256>, PriceError> {
        if asset == Address::ZERO {
            return Ok(Some(wei));
        }
        Ok(self.feed.price(&self.provider, asset).await?.and_then(|p| p.asset_for_wei(wei)))
    }

    /// The current price: served from a cache refreshed at most every
    /// [`Policy::quote_cache_ms`] (one refresh at a time; concurrent askers share it), so a
    /// flood of quotes costs no chain reads and quotes never wait on simulations. A token
    /// without a price now (its mean price window not filled) is left out.
    pub async fn quote(&self) -> Result<Quote, String> {
        let mut cache = self.quote_cache.lock().await;
        let ttl = Duration::from_millis(self.config.policy.quote_cache_ms);
        if let Some((at, quote)) = cache.as_ref()
            && at.elapsed() < ttl
        {
            return Ok(quote.clone());
        }
        let quote = self.fresh_quote().await?;
        *cache = Some((Instant::now(), quote.clone()));
        Ok(quote)
    }

    pub(super) async fn fresh_quote(&self) -> Result<Quote, String> {
        let (block, plan) = self.fee_plan().await?;
        let p = &self.config.policy;
        let per_million_wei = required_wei(1_000_000, plan.max_fee_per_gas, p.margin_bps);
        let l1_data_gas = self.reference_l1_gas(&plan).await?;
        let mut prices = Vec::new();
        for asset in &self.admission.assets {
            match self.fee_for_wei(*asset, per_million_wei).await {
                Ok(Some(per_million_gas)) => prices.push(AssetPrice { asset: *asset, per_million_gas }),
                Ok(None) | Err(PriceError::NotReady(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(Quote {
            chain_id: self.config.chain_id,
            executor: self.config.executor,
            relayer: self.account,
            pool: self.config.pool,
            block,
            base_fee: U256::from(plan.base_fee),
            priority_fee: U256::from(plan.priority_fee),
            max_fee_per_gas: U256::from(plan.max_fee_per_gas),
            margin_bps: p.margin_bps,
            gas_extra_bps: p.gas_extra_bps,
            prices,
            payment_gas: p.payment_gas,
            insertion_gas: p.insertion_gas(),
            l1_data_gas,
        })
    }

    /// The L1 data fee (wei) of the signed transaction `signed` on this chain, at the prices
    /// posted now (0 on an L1).
    pub(super) async fn l1_fee(&self, signed: &[u8]) -> Result<U256, String> {
        if self.fee_model == FeeModel::L1 {
            return Ok(U256::ZERO);
        }
        let pricing =
            nox_chain::l2fee::read_pricing(&self.provider, self.fee_model).await.map_err(|e| e.to_string())?;
        Ok(pricing.fee(signed))
    }

    /// A quote's `l1_data_gas`: the data fee of a representative bundle
    /// ([`crate::price::reference_bundle_calldata`] with [`Policy::l1_reference_action_bytes`]
    /// of action calldata), signed as it would be sent, in gas at the plan's max fee.
    pub(super) async fn reference_l1_gas(&self, plan: &FeePlan) -> Result<u64, String> {
        if self.fee_model == FeeModel::L1 {
            return Ok(0);
        }
        let p = &self.config.policy;
        let calldata = crate::price::reference_bundle_calldata(self.config.pool, p.l1_reference_action_bytes);
        let limit = crate::price::gas_limit(p.payment_gas, 0, p.gas_extra_bps);
        let nonce = self.next_nonce().await;
        let (_, signed) = self.sign(self.request(&calldata, limit, plan), nonce).await?;
        let fee = self.l1_fee(&signed).await?;
        Ok(crate::price::l1_fee_gas(fee, plan.max_fee_per_gas))
    }

    pub(super) fn request(&self, calldata: &[u8], gas: u64, plan: &FeePlan) -> TransactionRequest {
        TransactionRequest::default()
            .with_from(self.account)
            .with_to(self.config.executor)
            .with_input(Bytes::copy_from_slice(calldata))
            .with_chain_id(self.config.chain_id)
            .with_gas_limit(gas)
            .with_max_fee_per_gas(plan.max_fee_per_gas)
            .with_max_priority_fee_per_gas(plan.priority_fee)
    }

    /// Runs the transaction on the pending state: `eth_simulateV1`, or `eth_call` plus
    /// `eth_estimateGas` where the node lacks it. `Err` is a refusal.
    pub(super) async fn simulate(&self, tx: &TransactionRequest) -> Result<Simulated, Outcome> {
        let payload = SimulatePayload {
            block_state_calls: vec![SimBlock { calls: vec![tx.clone()], ..Default::default() }],
            ..Default::default()
        };
        match self.provider.simulate(&payload).block_id(BlockId::pending()).await {
            Ok(blocks) => {
                let call =
                    blocks.first().and_then(|b| b.calls.first()).ok_or_else(|| chain_refusal("empty simulation"))?;
                if !call.status {
                    return Err(revert_refusal(&call.return_data, call.error.as_ref().map(|e| e.message.as_str())));
                }
                let action_success = crate::abi::executeCall::abi_decode_returns(&call.return_data)
                    .map_err(|e| chain_refusal(format!("simulation returned no action status: {e}")))?;
                Ok(Simulated { gas_used: call.gas_used, action_success })
            }
            Err(e) if e.as_error_resp().is_some_and(|r| r.code == -32601) => self.simulate_fallback(tx).await,
            Err(e) => Err(chain_refusal(e)),
        }
    }

    pub(super) async fn simulate_fallback(&self, tx: &TransactionRequest) -> Result<Simulated, Outcome> {
        let returned = match self.provider.call(tx.clone()).block(BlockId::pending()).await {
            Ok(r) => r,
            Err(e) => {
                let data = e.as_error_resp().and_then(|r| r.as_revert_data()).unwrap_or_default();
                return Err(revert_refusal(&data, Some(&e.to_string())));
            }
        };
        let action_success = crate::abi::executeCall::abi_decode_returns(&returned)
            .map_err(|e| chain_refusal(format!("eth_call returned no action status: {e}")))?;
        let gas_used = self.provider.estimate_gas(tx.clone()).block(BlockId::pending()).await.map_err(chain_refusal)?;
        Ok(Simulated { gas_used, action_success })
    }
}
