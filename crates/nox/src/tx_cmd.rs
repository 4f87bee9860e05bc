//! `nox tx`: an anonymous paid transaction. The client asks an exit's relayer for its price
//! through the mixnet, proves a gas payment from the shielded pool to that relayer bound to the
//! exact action, sends the bundle through the mixnet to the same exit, and waits for the
//! receipt, which comes back through SURBs (docs/spec/relay.md). Chain reads (the wallet's pool
//! view) go through `--rpc`, normally a `nox client --rpc` endpoint, so through the mixnet too.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::{SolCall, SolValue};
use clap::{Args, Subcommand};
use nox_client::ClientHandle;
use nox_message::{RequestBody, Status};
use nox_relayer::{Outcome, Quote, RelayRequest, Submission};
use nox_sphinx::NodeId;
use nox_wallet::{SpendKind, SpendRequest};
use nox_zk::field;

use crate::client_cmd::TopologyArgs;
use crate::wallet_cmd::{self, ChainArgs, CmdResult, Ticker};

/// Largest relay answer expected (a quote or an outcome is a few hundred bytes).
const RELAY_REPLY_LEN: usize = 4096;

/// `nox tx …`
#[derive(Subcommand)]
pub enum TxCommand {
    /// Ask an exit's relayer for its current price (through the mixnet).
    Quote(QuoteArgs),
    /// Pay a relayer from the shielded pool for one action and have it submit the bundle.
    Send(Box<SendArgs>),
    /// A private swap of ETH from the shielded pool for the testnet's NOX token on Uniswap v2,
    /// delivered to a fresh address; the gas is paid from another note.
    Swap(Box<SwapArgs>),
}

/// `nox tx swap`
#[derive(Args)]
pub struct SwapArgs {
    /// Wallet and pool; `--testnet` also names the mixnet and the Uniswap deployment.
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub mix: MixArgs,
    /// Wei of ETH to swap (withdrawn from one note; the fee comes from another).
    #[arg(long)]
    pub amount: u128,
    /// Where the tokens go (a fresh address keeps the swap unlinked).
    #[arg(long)]
    pub to: Address,
    /// Largest accepted slippage from the quoted output, basis points.
    #[arg(long, default_value_t = 100)]
    pub slippage_bps: u32,
    /// Gas of the swap action (withdrawal proof check + swap).
    #[arg(long, default_value_t = 450_000)]
    pub action_gas: u64,
    /// Fee as a percentage of the quoted price.
    #[arg(long, default_value_t = 150)]
    pub fee_percent: u32,
    /// A fixed fee instead (wei).
    #[arg(long)]
    pub fee: Option<u128>,
    /// Have the relayer simulate and price only.
    #[arg(long)]
    pub simulate_only: bool,
    /// Seconds the proofs and the swap stay valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
}

/// Which network and exit.
#[derive(Args, Clone)]
pub struct MixArgs {
    /// The exit (index in the topology's exit list); a random exit without it.
    #[arg(long)]
    pub exit: Option<usize>,
    /// Loopix λ_P cover rate while the command runs (packets per second; 0 = off).
    #[arg(long, default_value_t = 2.0)]
    pub cover_rate: f64,
    /// Seconds to wait for each answer (the relayer waits for inclusion before it answers).
    #[arg(long, default_value_t = 180)]
    pub timeout_secs: u64,
}

/// `nox tx quote`
#[derive(Args)]
pub struct QuoteArgs {
    /// A testnet directory (its topology).
    #[arg(long)]
    pub testnet: PathBuf,
    #[command(flatten)]
    pub mix: MixArgs,
}

/// `nox tx send`
#[derive(Args)]
pub struct SendArgs {
    /// Wallet and pool; `--testnet` also names the mixnet (its topology).
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub mix: MixArgs,
    /// The action's target.
    #[arg(long)]
    pub target: Address,
    /// The action's calldata (hex).
    #[arg(long, default_value = "0x")]
    pub data: Bytes,
    /// ERC-20 token to pay the fee in; ETH without it.
    #[arg(long)]
    pub asset: Option<Address>,
    /// Gas the action itself needs (the relayer adds the payment's and its margins).
    #[arg(long, default_value_t = 100_000)]
    pub action_gas: u64,
    /// Fee as a percentage of the quoted price (room for the base fee to rise meanwhile).
    #[arg(long, default_value_t = 150)]
    pub fee_percent: u32,
    /// A fixed fee instead (the asset's base unit).
    #[arg(long)]
    pub fee: Option<u128>,
    /// Submit even if the action reverts in simulation (the fee is paid either way).
    #[arg(long)]
    pub pay_on_revert: bool,
    /// Have the relayer simulate and price only.
    #[arg(long)]
    pub simulate_only: bool,
    /// Seconds the payment stays valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
}

/// Runs a `nox tx` command.
pub fn run(command: TxCommand) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        match command {
            TxCommand::Quote(a) => {
                let (client, exit) = connect(&a.testnet, &a.mix).await?;
                let quote = quote(&client, exit).await?;
                println!("{}", serde_json::to_string_pretty(&quote).map_err(|e| e.to_string())?);
                Ok(())
            }
            TxCommand::Send(a) => send(&a).await,
            TxCommand::Swap(a) => swap(&a).await,
        }
    })
}

async fn connect(testnet: &std::path::Path, mix: &MixArgs) -> CmdResult<(ClientHandle, NodeId)> {
    let topology = TopologyArgs {
        testnet: Some(testnet.to_owned()),
        topology: None,
        directory: Vec::new(),
        authority: None,
        timeout_secs: mix.timeout_secs,
    };
    let client = crate::client_cmd::start(&topology, mix.cover_rate).await?;
    let exits = client.exits();
    let exit = match mix.exit {
        Some(i) => *exits.get(i).ok_or_else(|| format!("--exit {i}: the topology has {} exits", exits.len()))?,
        None => {
            let mut b = [0u8; 8];
            getrandom(&mut b);
            *exits.get(u64::from_le_bytes(b) as usize % exits.len().max(1)).ok_or("the topology has no exit")?
        }
    };
    Ok((client, exit))
}

fn getrandom(out: &mut [u8]) {
    use rand_core::{RngCore, SeedableRng};
    rand_chacha::ChaCha20Rng::from_os_rng().fill_bytes(out);
}

async fn relay(client: &ClientHandle, exit: NodeId, request: &RelayRequest) -> CmdResult<Vec<u8>> {
    let response = client
        .request_via(RequestBody::Relay(request.encode()), RELAY_REPLY_LEN, Some(exit))
        .await
        .map_err(|e| format!("through the mixnet: {e}"))?;
    if response.status != Status::Ok {
        return Err(format!("the exit answered {:?}: {}", response.status, String::from_utf8_lossy(&response.body)));
    }
    Ok(response.body)
}

async fn quote(client: &ClientHandle, exit: NodeId) -> CmdResult<Quote> {
    let body = relay(client, exit, &RelayRequest::Quote).await?;
    serde_json::from_slice(&body).map_err(|e| format!("the relayer's quote does not parse: {e}"))
}

/// A connected session: the pinned exit's relayer, its quote, the wallet's synced view.
struct Session {
    client: ClientHandle,
    exit: NodeId,
    quote: Quote,
    quoted_in: Duration,
    seed: nox_wallet::Seed,
    at: wallet_cmd::PoolAt,
    provider: alloy::providers::DynProvider,
    view: nox_wallet::PoolView,
    chain_id: u64,
    now: u64,
}

async fn session(chain: &ChainArgs, mix: &MixArgs) -> CmdResult<Session> {
    let testnet = chain.pool.testnet.clone().ok_or("give --testnet (the mixnet and its pool)")?;
    let (client, exit) = connect(&testnet, mix).await?;
    let started = Instant::now();
    let quote = quote(&client, exit).await?;
    let quoted_in = started.elapsed();
    let (seed, at, provider, view) = wallet_cmd::synced(chain).await?;
    let (chain_id, now) = wallet_cmd::chain_context(&provider).await?;
    if quote.chain_id != chain_id || quote.pool != at.pool {
        return Err(format!(
            "the relayer serves pool {} on chain {}, the wallet's is {} on {chain_id}",
            quote.pool, quote.chain_id, at.pool
        ));
    }
    Ok(Session { client, exit, quote, quoted_in, seed, at, provider, view, chain_id, now })
}

/// How the fee is chosen and what the relayer is asked.
struct Payment<'a> {
    asset: Address,
    action_gas: u64,
    fee_percent: u32,
    fee: Option<u128>,
    valid_for: u64,
    pay_on_revert: bool,
    simulate_only: bool,
    /// Notes already used by a spend inside the action (a withdrawal).
    avoid: &'a [ark_bn254::Fr],
    /// Proof time spent before the payment (the action's own proof).
    earlier_proofs: Duration,
}

/// Proves the gas payment for (target, data) to the session's relayer, sends the bundle through
/// the mixnet and reports the outcome.
async fn pay_and_submit(
    s: &Session,
    w: &crate::wallet_cmd::WalletArgs,
    p: &Payment<'_>,
    target: Address,
    data: Bytes,
) -> CmdResult {
    let fee = match p.fee {
        Some(fee) => fee,
        None => {
            let priced =
                s.quote.fee_for_action(p.asset, p.action_gas).ok_or("the relayer does not price this asset")?;
            let fee = priced * U256::from(p.fee_percent) / U256::from(100u64);
            u128::try_from(fee).map_err(|_| "the fee is above 2^128")?
        }
    };
    println!("relayer {} quoted in {:.1} s; paying {fee} of {}", s.quote.relayer, s.quoted_in.as_secs_f64(), p.asset);
    let deadline = s.now + p.valid_for;
    let (action_hash, _) = field::execution_hash(&target.0.0, &data, fee);
    let req = SpendRequest {
        asset: wallet_cmd::asset_word(p.asset),
        amount: fee,
        kind: SpendKind::Pay { relayer: s.quote.relayer.0.0, action_hash },
        chain_id: s.chain_id,
        pool: s.at.pool.0.0,
        deadline,
    };
    let prepared = s.view.prepare_spend_avoiding(&s.seed, &req, p.avoid).map_err(|e| e.to_string())?;
    let proving = Instant::now();
    let proof = wallet_cmd::prove_spend(w, &prepared)?;
    let proved_in = proving.elapsed() + p.earlier_proofs;
    let spend = wallet_cmd::spend_struct(&proof, &prepared.public, p.asset, deadline)?;
    let bundle = nox_relayer::abi::Bundle {
        payment: s.at.pool,
        paymentData: Bytes::from(spend.abi_encode()),
        fee: U256::from(fee),
        action: nox_relayer::abi::Action { target, value: U256::ZERO, data },
    };
    let mut submission = Submission::new(s.chain_id, s.quote.executor, s.quote.relayer, bundle);
    submission.pay_on_revert = p.pay_on_revert;
    submission.simulate_only = p.simulate_only;
    let t = Ticker::start("sent through the mixnet; waiting for the relayer's answer");
    let sending = Instant::now();
    let answer = relay(&s.client, s.exit, &RelayRequest::Submit(Box::new(submission))).await;
    t.finish();
    let outcome: Outcome =
        serde_json::from_slice(&answer?).map_err(|e| format!("the relayer's answer does not parse: {e}"))?;
    let waited = sending.elapsed();
    println!("{}", serde_json::to_string(&outcome).map_err(|e| e.to_string())?);
    let relayer_side = match &outcome {
        Outcome::Included { prepare_ms, inclusion_ms, .. } => {
            format!(" (relayer: checks and simulation {prepare_ms} ms, broadcast to receipt {inclusion_ms} ms)")
        }
        _ => String::new(),
    };
    println!(
        "timing: quote {:.2} s, proofs {:.2} s, submission to answer {:.2} s{relayer_side}",
        s.quoted_in.as_secs_f64(),
        proved_in.as_secs_f64(),
        waited.as_secs_f64()
    );
    match outcome {
        Outcome::Included { action_success, tx_hash, block, .. } => {
            println!(
                "included in block {block} (tx {tx_hash}); the action {}; change {} after it is inserted",
                if action_success { "succeeded" } else { "reverted (the fee was paid)" },
                prepared.change_value
            );
            Ok(())
        }
        Outcome::Simulated { .. } => Ok(()),
        Outcome::Pending { tx_hash, detail } => Err(format!("not yet mined: {tx_hash} ({detail})")),
        Outcome::Refused { reason, detail, required_fee } => Err(format!(
            "refused ({reason:?}): {detail}{}",
            required_fee.map(|f| format!("; a fee of at least {f} would be accepted now")).unwrap_or_default()
        )),
    }
}

async fn send(a: &SendArgs) -> CmdResult {
    let s = session(&a.chain, &a.mix).await?;
    let p = Payment {
        asset: a.asset.unwrap_or(Address::ZERO),
        action_gas: a.action_gas,
        fee_percent: a.fee_percent,
        fee: a.fee,
        valid_for: a.valid_for,
        pay_on_revert: a.pay_on_revert,
        simulate_only: a.simulate_only,
        avoid: &[],
        earlier_proofs: Duration::ZERO,
    };
    pay_and_submit(&s, &a.chain.wallet, &p, a.target, a.data.clone()).await
}

/// A private swap (ETH → the testnet's NOX token on Uniswap v2): a withdrawal proof to the swap
/// adaptor bound to the swap's parameters, and a gas payment from another note for the bundle
/// whose action is the adaptor's `swapExactIn`.
async fn swap(a: &SwapArgs) -> CmdResult {
    use nox_chain::defi::{SwapAdaptor, UniswapV2Router02, swap_hash};
    let testnet = a.chain.pool.testnet.clone().ok_or("give --testnet")?;
    let defi = crate::testnet_chain::load(&testnet)
        .and_then(|c| c.defi)
        .ok_or("this testnet has no Uniswap deployment (chain.json has no defi)")?;
    let s = session(&a.chain, &a.mix).await?;
    let router = UniswapV2Router02::new(defi.router, &s.provider);
    let amounts = router
        .getAmountsOut(U256::from(a.amount), vec![defi.weth, defi.token])
        .call()
        .await
        .map_err(|e| format!("quoting the swap: {e}"))?;
    let expected = *amounts.last().ok_or("empty quote")?;
    let min_out = expected * U256::from(10_000 - a.slippage_bps.min(10_000)) / U256::from(10_000u64);
    let p = SwapAdaptor::Swap {
        tokenOut: defi.token,
        amountOutMin: min_out,
        swapDeadline: U256::from(s.now + a.valid_for),
        recipient: a.to,
    };
    let hash = swap_hash(defi.adaptor, s.chain_id, &p);
    let deadline = s.now + a.valid_for;
    let req = SpendRequest {
        asset: wallet_cmd::asset_word(Address::ZERO),
        amount: a.amount,
        kind: SpendKind::Withdraw { recipient: defi.adaptor.0.0, action_hash: hash.0 },
        chain_id: s.chain_id,
        pool: s.at.pool.0.0,
        deadline,
    };
    let withdrawal = s.view.prepare_spend(&s.seed, &req).map_err(|e| e.to_string())?;
    println!("swapping {} wei for at least {min_out} NOX (quoted {expected}) to {}", a.amount, a.to);
    let proving = Instant::now();
    let proof = wallet_cmd::prove_spend(&a.chain.wallet, &withdrawal)?;
    let earlier_proofs = proving.elapsed();
    let w = wallet_cmd::spend_struct(&proof, &withdrawal.public, Address::ZERO, deadline)?;
    let spend = nox_chain::defi::ShieldedPool::Spend {
        proof: w.proof,
        root: w.root,
        nullifier: w.nullifier,
        changeCommitment: w.changeCommitment,
        asset: w.asset,
        fee: w.fee,
        deadline: w.deadline,
    };
    let data = Bytes::from(SwapAdaptor::swapExactInCall { s: spend, p }.abi_encode());
    let pay = Payment {
        asset: Address::ZERO,
        action_gas: a.action_gas,
        fee_percent: a.fee_percent,
        fee: a.fee,
        valid_for: a.valid_for,
        pay_on_revert: false,
        simulate_only: a.simulate_only,
        avoid: &[withdrawal.spent_commitment],
        earlier_proofs,
    };
    pay_and_submit(&s, &a.chain.wallet, &pay, defi.adaptor, data).await
}
