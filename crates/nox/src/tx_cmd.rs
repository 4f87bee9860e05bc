//! `nox tx`: an anonymous paid transaction. The client asks an exit's relayer for its price
//! through the mixnet, proves a gas payment from the shielded pool to that relayer bound to the
//! exact action, sends the bundle through the mixnet to the same exit, and waits for the
//! receipt, which comes back through SURBs (docs/spec/relay.md). Chain reads (the wallet's pool
//! view) go through `--rpc`, normally a `nox client --rpc` endpoint, so through the mixnet too.
//! The protocol is `nox_pay`'s; this is its command line: the wallet on disk, the testnet's
//! addresses, progress and timings.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy::primitives::{Address, Bytes, U256};
use clap::{Args, Subcommand};
use nox_pay::adaptor::{Swap, Withdrawal};
use nox_pay::{Action, PayError, RelayClient};
use nox_relayer::{Outcome, Quote};

use crate::client_cmd::TopologyArgs;
use crate::wallet_cmd::{self, ChainArgs, CmdResult, Ticker};

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
    /// A gas-paid withdrawal of ETH from the shielded pool to a fresh address: the withdrawal goes
    /// through the testnet's adaptor (the pool cannot be a bundle's action) and the gas is paid
    /// from another note, so the recipient needs no ETH and nothing links it to the depositor.
    Withdraw(Box<WithdrawArgs>),
}

/// `nox tx withdraw`
#[derive(Args)]
pub struct WithdrawArgs {
    #[command(flatten)]
    pub out: AdaptorArgs,
    /// Gas of the withdrawal action (withdrawal proof check + transfer).
    #[arg(long, default_value_t = 350_000)]
    pub action_gas: u64,
}

/// What `nox tx swap` and `nox tx withdraw` share: a withdrawal of `amount` wei from one note
/// through the testnet's adaptor to `to`, the gas paid from another note.
#[derive(Args)]
pub struct AdaptorArgs {
    /// Wallet and pool; `--testnet` also names the mixnet, the adaptor and Uniswap.
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub mix: MixArgs,
    /// Wei of ETH withdrawn (from one note; the fee comes from another).
    #[arg(long)]
    pub amount: u128,
    /// Where the output goes (a fresh address keeps it unlinked).
    #[arg(long)]
    pub to: Address,
    #[command(flatten)]
    pub fee: FeeArgs,
    /// Seconds the proofs (and a swap) stay valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
}

/// How much to pay the relayer.
#[derive(Args, Clone)]
pub struct FeeArgs {
    /// Fee as a percentage of the quoted price (room for the base fee to rise by one block
    /// between the quote and the submission).
    #[arg(long, default_value_t = DEFAULT_FEE_PERCENT)]
    pub fee_percent: u32,
    /// A fixed fee instead (the asset's base unit).
    #[arg(long = "fee")]
    pub fixed: Option<u128>,
    /// Have the relayer simulate and price only.
    #[arg(long)]
    pub simulate_only: bool,
}

pub use nox_pay::DEFAULT_FEE_PERCENT;

/// `nox tx swap`
#[derive(Args)]
pub struct SwapArgs {
    #[command(flatten)]
    pub out: AdaptorArgs,
    /// Largest accepted slippage from the quoted output, basis points.
    #[arg(long, default_value_t = 100)]
    pub slippage_bps: u32,
    /// Gas of the swap action (withdrawal proof check + swap).
    #[arg(long, default_value_t = 450_000)]
    pub action_gas: u64,
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
    /// Gas the action is given, exactly (bound into the payment: the relayer adds the payment's
    /// gas and its margins, and cannot be paid for giving the action less).
    #[arg(long, default_value_t = 100_000)]
    pub action_gas: u64,
    #[command(flatten)]
    pub fee: FeeArgs,
    /// Submit even if the action reverts in simulation (the fee is paid either way).
    #[arg(long)]
    pub pay_on_revert: bool,
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
                let relay = connect(&a.testnet, &a.mix).await?;
                let quote = relay.quote().await.map_err(|e| e.to_string())?;
                println!("{}", serde_json::to_string_pretty(&quote).map_err(|e| e.to_string())?);
                Ok(())
            }
            TxCommand::Send(a) => send(&a).await,
            TxCommand::Swap(a) => {
                through_adaptor(&a.out, AdaptorOut::Swap { slippage_bps: a.slippage_bps }, a.action_gas).await
            }
            TxCommand::Withdraw(a) => through_adaptor(&a.out, AdaptorOut::Same, a.action_gas).await,
        }
    })
}

/// A mixnet client for the testnet's topology, and the relayer of the chosen (or a random) exit.
async fn connect(testnet: &std::path::Path, mix: &MixArgs) -> CmdResult<RelayClient> {
    let topology = TopologyArgs {
        testnet: Some(testnet.to_owned()),
        topology: None,
        directory: Vec::new(),
        authority: None,
        timeout_secs: mix.timeout_secs,
        transport: crate::client_cmd::LinkTransport::Tcp,
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
    Ok(RelayClient::new(client, exit))
}

fn getrandom(out: &mut [u8]) {
    use rand_core::{RngCore, SeedableRng};
    rand_chacha::ChaCha20Rng::from_os_rng().fill_bytes(out);
}

/// A connected session: the pinned exit's relayer, its quote, the wallet's synced view.
struct Session {
    relay: RelayClient,
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
    let relay = connect(&testnet, mix).await?;
    let started = Instant::now();
    let quote = relay.quote().await.map_err(|e| e.to_string())?;
    let quoted_in = started.elapsed();
    let (seed, at, provider, view) = wallet_cmd::synced(chain).await?;
    let (chain_id, now) = wallet_cmd::chain_context(&provider).await?;
    if quote.chain_id != chain_id || quote.pool != at.pool {
        let e = PayError::OtherPool {
            relayer_pool: quote.pool,
            relayer_chain: quote.chain_id,
            pool: at.pool,
            chain: chain_id,
        };
        return Err(e.to_string());
    }
    Ok(Session { relay, quote, quoted_in, seed, at, provider, view, chain_id, now })
}

/// How the fee is chosen and what the relayer is asked.
struct PayOptions<'a> {
    asset: Address,
    action_gas: u64,
    fee: &'a FeeArgs,
    valid_for: u64,
    pay_on_revert: bool,
    /// Notes already used by a spend inside the action (a withdrawal).
    avoid: &'a [ark_bn254::Fr],
    /// Proof time spent before the payment (the action's own proof).
    earlier_proofs: Duration,
}

/// Proves the gas payment for `action` to the session's relayer, sends the bundle through the
/// mixnet and reports the outcome.
async fn pay_and_submit(s: &Session, w: &wallet_cmd::WalletArgs, o: &PayOptions<'_>, action: Action) -> CmdResult {
    let fee = match o.fee.fixed {
        Some(fee) => fee,
        None => {
            nox_pay::fee_from_quote(&s.quote, o.asset, o.action_gas, o.fee.fee_percent).map_err(|e| e.to_string())?
        }
    };
    println!("relayer {} quoted in {:.1} s; paying {fee} of {}", s.quote.relayer, s.quoted_in.as_secs_f64(), o.asset);
    let payment = nox_pay::Payment {
        quote: &s.quote,
        asset: o.asset,
        fee,
        action,
        deadline: s.now + o.valid_for,
        avoid: o.avoid,
    };
    let prepared = payment.prepare(&s.view, &s.seed).map_err(|e| e.to_string())?;
    let proving = Instant::now();
    let proof = wallet_cmd::prove_spend(w, &prepared)?;
    let proved_in = proving.elapsed() + o.earlier_proofs;
    let mut paid = payment.bundle(&prepared, &proof);
    paid.submission.pay_on_revert = o.pay_on_revert;
    paid.submission.simulate_only = o.fee.simulate_only;
    let t = Ticker::start("sent through the mixnet; waiting for the relayer's answer");
    let sending = Instant::now();
    let answer = s.relay.submit(paid.submission).await;
    t.finish();
    let outcome = answer.map_err(|e| e.to_string())?;
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
                paid.change_value
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
    let o = PayOptions {
        asset: a.asset.unwrap_or(Address::ZERO),
        action_gas: a.action_gas,
        fee: &a.fee,
        valid_for: a.valid_for,
        pay_on_revert: a.pay_on_revert,
        avoid: &[],
        earlier_proofs: Duration::ZERO,
    };
    pay_and_submit(&s, &a.chain.wallet, &o, Action { target: a.target, data: a.data.clone(), gas: a.action_gas }).await
}

/// What the adaptor delivers for the withdrawn ETH.
enum AdaptorOut {
    /// The testnet's NOX token, swapped on Uniswap v2, at most `slippage_bps` below the quote.
    Swap { slippage_bps: u32 },
    /// The ETH itself (a gas-paid withdrawal).
    Same,
}

/// A private swap or a gas-paid withdrawal through the testnet's adaptor: a withdrawal proof to
/// the adaptor bound to the output's parameters (`swapHash`), and a gas payment from another
/// note for the bundle whose action is the adaptor's `swapExactIn`.
async fn through_adaptor(a: &AdaptorArgs, out: AdaptorOut, action_gas: u64) -> CmdResult {
    let (chain, amount, to, valid_for) = (&a.chain, a.amount, a.to, a.valid_for);
    use nox_chain::defi::UniswapV2Router02;
    let testnet = chain.pool.testnet.clone().ok_or("give --testnet")?;
    let defi = nox_testnet::chain::load(&testnet)
        .and_then(|c| c.defi)
        .ok_or("this testnet has no Uniswap deployment and adaptor (chain.json has no defi)")?;
    let s = session(chain, &a.mix).await?;
    let (token_out, min_out) = match out {
        AdaptorOut::Swap { slippage_bps } => {
            let router = UniswapV2Router02::new(defi.router, &s.provider);
            let amounts = router
                .getAmountsOut(U256::from(amount), vec![defi.weth, defi.token])
                .call()
                .await
                .map_err(|e| format!("quoting the swap: {e}"))?;
            let expected = *amounts.last().ok_or("empty quote")?;
            let min_out = expected * U256::from(10_000 - slippage_bps.min(10_000)) / U256::from(10_000u64);
            println!("swapping {amount} wei for at least {min_out} NOX (quoted {expected}) to {to}");
            (defi.token, min_out)
        }
        AdaptorOut::Same => {
            println!("withdrawing {amount} wei to {to}");
            (Address::ZERO, U256::from(amount))
        }
    };
    let withdrawal = Withdrawal {
        adaptor: defi.adaptor,
        chain_id: s.chain_id,
        pool: s.at.pool,
        asset: Address::ZERO,
        amount,
        swap: Swap {
            tokenOut: token_out,
            amountOutMin: min_out,
            swapDeadline: U256::from(s.now + valid_for),
            recipient: to,
        },
        deadline: s.now + valid_for,
    };
    let prepared = s.view.prepare_spend(&s.seed, &withdrawal.spend_request()).map_err(|e| e.to_string())?;
    let proving = Instant::now();
    let proof = wallet_cmd::prove_spend(&chain.wallet, &prepared)?;
    let o = PayOptions {
        asset: Address::ZERO,
        action_gas,
        fee: &a.fee,
        valid_for,
        pay_on_revert: false,
        avoid: &[prepared.spent_commitment],
        earlier_proofs: proving.elapsed(),
    };
    pay_and_submit(&s, &chain.wallet, &o, withdrawal.action(&prepared, &proof, action_gas)).await
}
