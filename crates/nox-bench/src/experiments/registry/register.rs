//! Registering many nodes quickly: every transaction signed locally with explicit nonce, gas
//! limit and fees, many in flight, receipts checked after each phase.

use super::*;

/// A provider that only signs (every field is set by the caller: one RPC call per transaction).
pub(crate) fn signing_provider(url: &str, wallet: EthereumWallet) -> Result<DynProvider, BenchError> {
    let url = url.parse().map_err(err)?;
    Ok(ProviderBuilder::new().disable_recommended_fillers().wallet(wallet).connect_http(url).erased())
}

pub(crate) fn tx(
    chain_id: u64,
    from: Address,
    to: Address,
    nonce: u64,
    gas: u64,
    input: Vec<u8>,
) -> TransactionRequest {
    TransactionRequest::default()
        .with_from(from)
        .with_to(to)
        .with_nonce(nonce)
        .with_gas_limit(gas)
        .with_max_fee_per_gas(MAX_FEE)
        .with_max_priority_fee_per_gas(PRIORITY_FEE)
        .with_chain_id(chain_id)
        .with_input(Bytes::from(input))
}

/// Sends each sender's transactions in nonce order (the next only after the node accepted the
/// previous one, never waiting for a receipt), senders in parallel with at most `in_flight`
/// sends outstanding; returns every hash.
pub(crate) async fn send_all(
    provider: &DynProvider,
    per_sender: Vec<Vec<TransactionRequest>>,
    in_flight: usize,
) -> Result<Vec<TxHash>, BenchError> {
    let gate = Arc::new(Semaphore::new(in_flight.max(1)));
    let mut tasks = JoinSet::new();
    for chain in per_sender {
        let (provider, gate) = (provider.clone(), gate.clone());
        tasks.spawn(async move {
            let mut hashes = Vec::with_capacity(chain.len());
            for request in chain {
                let _permit = gate.acquire().await.map_err(err)?;
                hashes.push(*provider.send_transaction(request).await.map_err(err)?.tx_hash());
            }
            Ok::<_, BenchError>(hashes)
        });
    }
    let mut hashes = Vec::new();
    while let Some(done) = tasks.join_next().await {
        hashes.extend(done.map_err(err)??);
    }
    Ok(hashes)
}

/// Waits (≤ 60 s) for every receipt and checks that none reverted. A transaction still pending
/// after 100 ms gets an `evm_mine` (Anvil's automine mines on arrival; counted in `nudges`).
pub(crate) async fn check_receipts(
    provider: &DynProvider,
    hashes: &[TxHash],
    what: &str,
    nudges: &AtomicU64,
) -> Result<(), BenchError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    for hash in hashes {
        let mut nudge_at = Instant::now() + Duration::from_millis(100);
        loop {
            if let Some(receipt) = provider.get_transaction_receipt(*hash).await.map_err(err)? {
                if !receipt.status() {
                    return Err(BenchError::Failed(format!("{what}: transaction {hash} reverted")));
                }
                break;
            }
            if Instant::now() > deadline {
                return Err(BenchError::Failed(format!("{what}: no receipt for {hash} within 60 s")));
            }
            if Instant::now() > nudge_at {
                provider.raw_request::<_, Value>("evm_mine".into(), ()).await.map_err(err)?;
                nudges.fetch_add(1, Ordering::SeqCst);
                nudge_at = Instant::now() + Duration::from_millis(100);
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    Ok(())
}

pub(crate) async fn register_batch(
    url: &str,
    deployment: &Deployment,
    deployer: &PrivateKeySigner,
    batch: &[GenNode],
    in_flight: usize,
    nudges: &AtomicU64,
) -> Result<(), BenchError> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut wallet = EthereumWallet::from(deployer.clone());
    for node in batch {
        wallet.register_signer(node.operator.clone());
    }
    let provider = signing_provider(url, wallet)?;
    let chain_id = deployment.chain_id;
    let stake = U256::from(STAKE);

    // 1. Gas money: Anvil's cheatcode, no transaction.
    let gate = Arc::new(Semaphore::new(in_flight.max(1)));
    let mut tasks = JoinSet::new();
    for node in batch {
        let (provider, gate, address) = (provider.clone(), gate.clone(), node.operator.address());
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await.map_err(err)?;
            let one_eth = U256::from(10u64).pow(U256::from(18u64));
            provider.raw_request::<_, Value>("anvil_setBalance".into(), (address, one_eth)).await.map_err(err)
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(err)??;
    }

    // 2. The stake, from the deployer (consecutive nonces, sent without waiting).
    let base = provider.get_transaction_count(deployer.address()).await.map_err(err)?;
    let transfers = batch
        .iter()
        .zip(base..)
        .map(|(node, nonce)| {
            let input = NoxStakeToken::transferCall { to: node.operator.address(), value: stake }.abi_encode();
            tx(chain_id, deployer.address(), deployment.stake_token, nonce, GAS_TRANSFER, input)
        })
        .collect();
    let hashes = send_all(&provider, vec![transfers], in_flight).await?;
    check_receipts(&provider, &hashes, "stake transfer", nudges).await?;

    // 3. Each operator approves and registers (nonces 0 and 1 of a fresh account).
    let mut txs = Vec::with_capacity(batch.len());
    for node in batch {
        let from = node.operator.address();
        let approve = NoxStakeToken::approveCall { spender: deployment.registry, value: stake }.abi_encode();
        let approve = tx(chain_id, from, deployment.stake_token, 0, GAS_APPROVE, approve);
        let register = NodeRegistry::registerCall {
            identityKey: node.identity.verifying_key().to_bytes().into(),
            linkKey: node.link_key.into(),
            linkAddress: node.address.to_string(),
            role: ROLE_RELAY,
            stake,
        }
        .abi_encode();
        txs.push(vec![approve, tx(chain_id, from, deployment.registry, 1, GAS_REGISTER, register)]);
    }
    let hashes = send_all(&provider, txs, in_flight).await?;
    check_receipts(&provider, &hashes, "approve/register", nudges).await
}
