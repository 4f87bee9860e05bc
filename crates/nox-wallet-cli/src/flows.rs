//! The flows of `nox wallet deposit`, `pay`, `insert` and a `--direct` private transaction,
//! once the command has opened the wallet and resolved the pool: everything but argument
//! parsing and the pool's resolution, with the command's output unchanged.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, Bytes},
    providers::DynProvider,
    rpc::types::TransactionReceipt,
};
use nox_chain::pool::ShieldedPool;
use nox_wallet::{PoolView, Seed, units::Unit};
use nox_wallet_io::{bundle::BundleFile, chain::unit_of, insert_race};
use rand_core_06::RngCore;
use zeroize::Zeroizing;

use crate::{
    CliError, Landed, NOT_CONFIRMED, Plan, PoolAt, Stop,
    files::{WalletArgs, os_rng, parse_shielded, read_key_file},
    outcome::already,
    prove::{Ticker, insert_keys, prove_transaction},
    session::{journal_recall, read_provider},
};

/// `nox wallet deposit`'s order.
pub struct DepositOrder<'a> {
    /// Amount in the asset's unit (as the command reads it).
    pub amount: &'a str,
    /// ERC-20 token; ETH without it.
    pub asset: Option<Address>,
    /// Another wallet's shielded address (`nox1…`); this wallet's without it.
    pub to: Option<&'a str>,
    /// The paying account's key file.
    pub key_file: &'a Path,
    /// How long to wait for the receipt.
    pub receipt_timeout: Duration,
}

/// Deposits `order` into the pool `at` (a re-run after a lost receipt finds the earlier
/// deposit instead of depositing again), and reports it; `started` is when the command began.
pub async fn deposit(
    w: &WalletArgs,
    order: &DepositOrder<'_>,
    seed: &Seed,
    at: &PoolAt,
    started: Instant,
) -> Result<(), CliError> {
    let to = match order.to {
        Some(s) => parse_shielded(s)?,
        None => seed.address()?,
    };
    let asset = order.asset.unwrap_or(Address::ZERO);
    let reader = read_provider(&at.rpc)?;
    let unit = unit_of(&reader, asset).await;
    let amount = unit.parse(order.amount)?;
    let note = nox_wallet_io::deposit::DepositNote::new(&to, asset, amount, &mut os_rng())?;
    let signer = read_key_file(order.key_file)?;
    let intent = format!("deposit {} of {asset} to {to} from {} into {}", unit.show(amount), signer.address(), at.pool);
    if let Some((tx_hash, block)) = journal_recall(w, &reader, at.pool, &intent).await? {
        already(tx_hash, block);
        return Ok(());
    }
    let provider = nox_chain::deploy::wallet_provider(&at.rpc, &signer)?;
    let broadcast = |hash| eprintln!("deposit: broadcast as {hash}; waiting for its receipt");
    let d = nox_wallet_io::deposit::deposit(
        &reader,
        &provider,
        at.pool,
        &note,
        &w.dir(),
        intent,
        order.receipt_timeout,
        broadcast,
    )
    .await?;
    println!(
        "deposited {} from {} in block {} (tx {}), queue index {}; gas {}; {:.1} s",
        unit.show(amount),
        signer.address(),
        d.block,
        d.tx_hash,
        d.queue_index.map_or("?".into(), |q| q.to_string()),
        d.gas,
        started.elapsed().as_secs_f64()
    );
    println!("new note: {} to {to}; spendable once a relayer inserts its batch", unit.show(amount));
    Ok(())
}

/// `nox wallet pay`'s order.
pub struct PayOrder<'a> {
    /// The BatchExecutor (the pool's record's without it).
    pub executor: Option<Address>,
    /// The relayer the payment credits.
    pub relayer: Address,
    /// Fee in the asset's base unit.
    pub fee: u128,
    /// The fee's ERC-20 token; ETH without it.
    pub asset: Option<Address>,
    /// The action's target; none: a payment-only bundle.
    pub target: Option<Address>,
    /// The action's calldata.
    pub data: &'a Bytes,
    /// Gas the executor forwards to the action.
    pub action_gas: u64,
    /// Seconds the proof stays valid.
    pub valid_for: u64,
    /// Where the bundle is written.
    pub out: &'a Path,
}

/// Proves a payment for one action from the synced `view` and writes the bundle for a relayer.
pub async fn pay(
    w: &WalletArgs,
    order: &PayOrder<'_>,
    seed: &Seed,
    at: &PoolAt,
    provider: &DynProvider,
    view: &PoolView,
) -> Result<(), CliError> {
    let executor = order.executor.or(at.executor).ok_or(CliError::NoExecutor)?;
    let (chain_id, now) = nox_wallet_io::chain::chain_context(provider).await?;
    let asset = order.asset.unwrap_or(Address::ZERO);
    let unit = unit_of(provider, asset).await;
    let action = match order.target {
        Some(target) => nox_pay::Action { target, data: order.data.clone(), gas: order.action_gas },
        None => nox_pay::Action::none(),
    };
    let payee = nox_pay::Payee { chain_id, executor, relayer: order.relayer, pool: at.pool };
    let payment = nox_pay::Payment {
        payee,
        asset,
        fee: order.fee,
        action,
        outputs: Vec::new(),
        join: false,
        public_out: 0,
        recipient: Address::ZERO,
        deadline: now + order.valid_for,
        avoid: &[],
    };
    let prepared = payment.prepare(view, seed, &mut os_rng())?;
    let proof = prove_transaction(w, &prepared)?;
    let paid = payment.bundle(&prepared, &proof);
    let json = serde_json::to_vec_pretty(&BundleFile::of(&payment, &paid))?;
    std::fs::write(order.out, json).map_err(|source| CliError::File { path: order.out.to_owned(), source })?;
    println!(
        "wrote {}: fee {} to relayer {} for {}; change note {} to this wallet once it lands",
        order.out.display(),
        unit.show(order.fee),
        order.relayer,
        if payment.action.is_none() {
            "no action (payment only)".to_owned()
        } else {
            format!("the action on {}", payment.action.target)
        },
        unit.show(paid.change)
    );
    Ok(())
}

/// Inserts the pool's next queued batch (proved here) from the key file's account, unless an
/// exit's inserter landed it first (then says who); `started` is when the command began.
pub async fn insert(
    w: &WalletArgs,
    key_file: &Path,
    at: &PoolAt,
    view: &PoolView,
    started: Instant,
) -> Result<(), CliError> {
    let Some(batch) = nox_wallet_io::insert::next_batch(view)? else {
        println!("nothing queued");
        return Ok(());
    };
    let (first_queued, start) = (batch.first_queued, batch.start);
    let pk = insert_keys(w)?;
    let t = Ticker::start(&format!("proving the insertion of {} leaves at leaf {start}", batch.leaves.len()));
    let mut seed = Zeroizing::new([0u8; 32]);
    os_rng().fill_bytes(seed.as_mut());
    let call = batch.prove(&pk, *seed);
    // As before the move: a failed proof leaves the ticker unfinished; a proof that does not
    // verify is reported after it.
    if !matches!(call, Err(nox_wallet_io::insert::InsertError::Prove(_))) {
        t.finish();
    }
    let call = call?;
    let signer = read_key_file(key_file)?;
    let sender = nox_chain::deploy::wallet_provider(&at.rpc, &signer)?;
    let pool = ShieldedPool::new(at.pool, &sender);
    let tx = pool.insertBatch(call.proof, call.new_root, call.leaves).into_transaction_request();
    // An exit's inserter may have landed this batch while it was being proved here: re-read the
    // pool and simulate the exact call from our account; a doomed transaction is never sent.
    let already = |by| {
        println!("{}, {:.1} s", insert_race::already_inserted_line(by, first_queued), started.elapsed().as_secs_f64());
    };
    let gas =
        match insert_race::before_send(&sender, at.pool, signer.address(), &tx, first_queued, view.last_block).await? {
            insert_race::BeforeSend::Send { gas } => gas,
            insert_race::BeforeSend::AlreadyInserted(by) => {
                already(by);
                return Ok(());
            }
        };
    let tx = tx.gas_limit(gas.saturating_mul(6) / 5 + 10_000);
    let receipt: TransactionReceipt = match nox_wallet_io::send::send_tx(&sender, tx, "insertBatch").await {
        Ok(receipt) => receipt,
        Err(e) => {
            // Mined after a rival insertion in the same block: nothing left to do but say so.
            let moved = match insert_race::queue_moved_past(&sender, at.pool, first_queued).await {
                Ok(moved) => moved,
                Err(race) => return Err(CliError::InsertAndRace(Box::new((e, race)))),
            };
            if moved {
                let by = insert_race::inserted_by(&sender, at.pool, first_queued, view.last_block).await?;
                eprintln!("our insertBatch lost the race in the same block: {e}");
                already(by);
                return Ok(());
            }
            return Err(e.into());
        }
    };
    println!(
        "inserted {} leaves at leaf {start} in block {} (tx {}); gas {}; {:.1} s",
        batch.leaves.len(),
        receipt.block_number.unwrap_or_default(),
        receipt.transaction_hash,
        receipt.gas_used,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// How a `--direct` private transaction is submitted.
pub struct DirectOrder<'a> {
    /// The submitting account's key file.
    pub key_file: &'a Path,
    /// `--yes`: no question on the terminal.
    pub yes: bool,
    /// Seconds the proof stays valid.
    pub valid_for: u64,
    /// Seconds to wait for the receipt.
    pub timeout_secs: u64,
}

/// Makes `plan` as one private transaction submitted from the key file's account (it pays the
/// gas and is seen sending it), from the synced `view`.
pub async fn direct(
    w: &WalletArgs,
    order: &DirectOrder<'_>,
    plan: &Plan,
    seed: &Seed,
    at: &PoolAt,
    provider: &DynProvider,
    view: &PoolView,
) -> Result<(Landed, Unit), Stop> {
    let intent = format!("{} in {}", plan.intent(), at.pool);
    if let Some((tx_hash, block)) = journal_recall(w, provider, at.pool, &intent).await? {
        return Err(Stop::Already { tx_hash, block });
    }
    let unit = unit_of(provider, plan.asset).await;
    let signer = read_key_file(order.key_file)?;
    let question =
        format!("{} directly from {} (it pays the gas and is seen sending it)?", plan.what, signer.address());
    if !crate::prompt::confirmed_on_terminal(order.yes, &question)? {
        return Err(NOT_CONFIRMED.into());
    }
    let (chain_id, now) = nox_wallet_io::chain::chain_context(provider).await.map_err(CliError::from)?;
    let deadline = now + order.valid_for;
    let direct = nox_wallet_io::direct::DirectPlan {
        asset: plan.asset,
        outputs: plan.outputs.clone(),
        join: plan.join,
        public_out: plan.public_out,
        recipient: plan.recipient,
    };
    let prepared = direct.prepare(view, seed, chain_id, at.pool, deadline, &mut os_rng()).map_err(Stop::wallet)?;
    let proof = prove_transaction(w, &prepared)?;
    let t = nox_wallet_io::direct::transaction(&prepared, &proof).map_err(CliError::from)?;
    eprintln!(
        "submitting directly from {} (--direct): that account pays the gas and is seen sending this transaction",
        signer.address()
    );
    let sender = nox_chain::deploy::wallet_provider(&at.rpc, &signer).map_err(CliError::from)?;
    let timeout = Duration::from_secs(order.timeout_secs);
    let broadcast = |hash| eprintln!("transact: broadcast as {hash}; waiting for its receipt");
    let receipt = nox_wallet_io::direct::submit(
        provider,
        &sender,
        at.pool,
        &prepared,
        t,
        deadline,
        &w.dir(),
        intent,
        timeout,
        broadcast,
    )
    .await
    .map_err(CliError::from)?;
    let landed = Landed {
        tx_hash: receipt.transaction_hash,
        block: receipt.block_number.unwrap_or_default(),
        gas_used: receipt.gas_used,
        fee: 0,
        outputs: prepared.outputs.clone(),
        spent: prepared.inputs.iter().map(|i| i.value).collect(),
    };
    Ok((landed, unit))
}
