//! `nox tx`: an anonymous paid transaction. The client asks an exit's relayer for its price
//! through the mixnet, proves one private transaction from the shielded pool that pays that
//! relayer's fee, bound to the exact action (or to no action: a payment-only bundle — `nox
//! wallet send/split/join/withdraw` pay through [`paid`]), sends the bundle through the mixnet
//! to the same exit, and waits for the receipt, which comes back through SURBs
//! (docs/spec/relay.md). Every chain read (the wallet's
//! pool view, the fee reading, a swap's quote) goes through the mixnet too: `--rpc` (a `nox
//! client --rpc` endpoint) or, without it, a local endpoint of this command's own mixnet client;
//! only an explicit `--direct-rpc` reads directly, with a warning.
//!
//! The exit is untrusted (issue 29 item 3): before anything is proved, every figure of its quote
//! is checked against this client's own reading of the chain (`nox_pay::bounds`), the fee against
//! `--max-fee` (or a default derived from the client's own estimate), and on a terminal the user
//! confirms. A refusal proves, spends, sends and writes nothing.
//! The protocol is `nox_pay`'s; this is its command line: the wallet on disk, the testnet's
//! addresses, progress and timings.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy::primitives::{Address, Bytes, U256};
use clap::{Args, Subcommand};
use nox_pay::adaptor::{Swap, Withdrawal};
use nox_pay::bounds::Ceiling;
use nox_pay::{Action, PayError, RelayClient};
use nox_relayer::{Outcome, Quote};
use nox_wallet::PreparedTransaction;
use nox_wallet_io::fee_check::{CheckedFee, FeeRequest, TokenPair, check_fee};

use crate::client_cmd::TopologyArgs;
use crate::wallet_cmd::{self, ChainArgs, CmdResult, Landed, Plan, PrivateArgs, Stop, Ticker, Unit};

/// `nox tx …`
#[derive(Subcommand)]
pub enum TxCommand {
    /// Ask an exit's relayer for its current price (through the mixnet).
    Quote(QuoteArgs),
    /// Pay a relayer from the shielded pool for one action and have it submit the bundle.
    Send(Box<SendArgs>),
    /// A private swap of ETH from the shielded pool for the testnet's NOX token on Uniswap v2,
    /// delivered to a fresh address: a withdrawal transaction to the adaptor inside the action,
    /// the gas paid by a second transaction from other notes.
    Swap(Box<SwapArgs>),
    /// A paid withdrawal of ETH from the shielded pool to a fresh address: one transaction whose
    /// proof sends `amount` to the address and the fee to the exit's relayer (no action), so
    /// the recipient needs no ETH and nothing links it to the depositor. The same as `nox wallet
    /// withdraw` (which also takes tokens and decimal amounts).
    Withdraw(Box<AdaptorArgs>),
}

/// What `nox tx swap` and `nox tx withdraw` share: `amount` wei of ETH from the pool to `to`,
/// paid through the mixnet.
#[derive(Args)]
pub struct AdaptorArgs {
    /// Wallet and pool; `--testnet` also names the mixnet, the adaptor and Uniswap.
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub mix: MixArgs,
    /// Wei of ETH withdrawn (for a swap, the fee comes from other notes).
    #[arg(long)]
    pub amount: u128,
    /// Where the output goes (a fresh address keeps it unlinked).
    #[arg(long, value_parser = wallet_cmd::parse_eth_address)]
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
    /// The most this command may pay, in the fee asset: base units (`300000000000000`), or for
    /// ETH a decimal with a unit (`0.0003eth`, `300000gwei`). Without it: 3 × (600,000 + action
    /// gas) × this client's own max fee per gas, read from the chain through the mixnet.
    #[arg(long, value_parser = parse_max_fee)]
    pub max_fee: Option<U256>,
    /// Pay without asking for confirmation (asked only when stdin is a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

fn parse_max_fee(text: &str) -> Result<U256, String> {
    nox_pay::bounds::parse_amount(text).map_err(|e| e.to_string())
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
    /// Gas the swap action is given, exactly (the withdrawal transaction ≈ 400 k + the Uniswap
    /// v2 swap ≈ 120 k, cold accesses): bound into the payment.
    #[arg(long, default_value_t = 600_000)]
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
    #[arg(long, value_parser = wallet_cmd::parse_eth_address)]
    pub target: Address,
    /// The action's calldata (hex).
    #[arg(long, default_value = "0x")]
    pub data: Bytes,
    /// ERC-20 token to pay the fee in; ETH without it.
    #[arg(long, value_parser = wallet_cmd::parse_eth_address)]
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
    /// Send calldata to a target that has no code (refused without it: such a call does nothing
    /// and still pays the fee — usually a typo in `--target`).
    #[arg(long)]
    pub force: bool,
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
                let topology = TopologyArgs {
                    testnet: Some(a.testnet.clone()),
                    topology: None,
                    directory: Vec::new(),
                    authority: None,
                    chain: None,
                    chain_rpc: None,
                    timeout_secs: a.mix.timeout_secs,
                    transport: crate::client_cmd::LinkTransport::Tcp,
                };
                let relay = connect(&topology, &a.mix).await?;
                let quote = relay.quote().await.map_err(|e| e.to_string())?;
                println!("{}", serde_json::to_string_pretty(&quote).map_err(|e| e.to_string())?);
                Ok(())
            }
            TxCommand::Send(a) => Stop::finish(send(&a).await),
            TxCommand::Swap(a) => Stop::finish(swap(&a.out, a.slippage_bps, a.action_gas).await),
            TxCommand::Withdraw(a) => Stop::finish(withdraw(&a).await),
        }
    })
}

/// A mixnet client for the testnet's topology, and the relayer of the chosen (or a random) exit.
async fn connect(topology: &TopologyArgs, mix: &MixArgs) -> CmdResult<RelayClient> {
    let client = crate::client_cmd::start(topology, mix.cover_rate).await?;
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

/// A connected session: the pinned exit's relayer, its quote (checked), the fee chosen, the
/// wallet's synced view.
struct Session {
    relay: RelayClient,
    quote: Quote,
    fee: u128,
    quoted_in: Duration,
    seed: nox_wallet::Seed,
    at: wallet_cmd::PoolAt,
    provider: alloy::providers::DynProvider,
    view: nox_wallet::PoolView,
    chain_id: u64,
    now: u64,
    /// The journal's key for this command.
    intent: String,
}

/// What the fee is for, known before the wallet is touched.
struct FeeFor<'a> {
    asset: Address,
    action_gas: u64,
    /// The action's calldata length (the client's own figure of the L1 data fee is computed on
    /// the bundle that carries it).
    action_data_len: usize,
    fee: &'a FeeArgs,
    /// What the action is, for the confirmation.
    what: String,
    /// What a re-run of the same command has in common with this one (the journal's key,
    /// `wallet_cmd::journal`; the pool is added).
    intent: String,
}

async fn session(chain: &ChainArgs, mix: &MixArgs, fee_for: &FeeFor<'_>) -> Result<Session, Stop> {
    let topology =
        chain.pool.topology(mix.timeout_secs)?.ok_or("give --testnet or --chain (the mixnet and its pool)")?;
    let relay = connect(&topology, mix).await?;
    let started = Instant::now();
    let quote = relay.quote().await.map_err(|e| e.to_string())?;
    let quoted_in = started.elapsed();
    // Reads through the mixnet: --rpc, or this command's own client (never chain.json's URL).
    let at = wallet_cmd::resolve(&chain.pool, Some(relay.client())).await?;
    let provider = wallet_cmd::read_provider(&at.rpc)?;
    let (chain_id, now) = wallet_cmd::chain_context(&provider).await?;
    nox_wallet_io::fee_check::same_pool(&quote, chain_id, at.pool).map_err(|e| e.to_string())?;
    // A re-run after a lost answer: the earlier transaction is looked for first (landed: report
    // it; pending: wait), so nothing is paid twice.
    let intent = format!("{} in {}", fee_for.intent, at.pool);
    if let Some((tx_hash, block)) = wallet_cmd::journal_recall(&chain.wallet, &provider, at.pool, &intent).await? {
        return Err(Stop::Already { tx_hash, block });
    }
    // Nothing is proved, spent or written (the wallet is synced only after this) unless the quote
    // and the fee pass the client's own bounds and the user's ceiling.
    let fee = checked_fee(&quote, &provider, chain.pool.testnet.as_deref(), (chain_id, at.pool), fee_for).await?;
    let (seed, view) = wallet_cmd::synced_at(chain, &at, &provider).await?;
    Ok(Session { relay, quote, fee, quoted_in, seed, at, provider, view, chain_id, now, intent })
}

/// The Uniswap v2 pair of the testnet's token this client values a token fee by (`None`
/// without a testnet or a pair: a token fee is then refused).
fn token_pair(testnet: Option<&std::path::Path>) -> Option<TokenPair> {
    let defi = testnet.and_then(nox_testnet::chain::load).and_then(|c| c.defi)?;
    Some(TokenPair { router: defi.router, weth: defi.weth, token: defi.token })
}

/// The fee to pay: the quote checked against this client's own reading of the chain, the fee
/// (from the quote, or `--fee`) against the ceiling (`nox_wallet_io::fee_check`), and the user's
/// confirmation on a terminal.
async fn checked_fee(
    quote: &Quote,
    provider: &alloy::providers::DynProvider,
    testnet: Option<&std::path::Path>,
    (chain_id, pool): (u64, Address),
    f: &FeeFor<'_>,
) -> CmdResult<u128> {
    let req = FeeRequest {
        asset: f.asset,
        action_gas: f.action_gas,
        action_data_len: f.action_data_len,
        fixed: f.fee.fixed,
        fee_percent: f.fee.fee_percent,
        max_fee: f.fee.max_fee,
    };
    let CheckedFee { fee, value_wei, reading, own_data_fee, ceiling } =
        check_fee(quote, provider, (chain_id, pool), token_pair(testnet), &req).await.map_err(|e| e.to_string())?;
    // The L1 data fee is named only where there is one (an L1's output is unchanged).
    let data_fee = if own_data_fee.is_zero() { String::new() } else { format!(", L1 data fee {own_data_fee} wei") };
    println!(
        "own reading: base fee {} wei, tip {} wei{data_fee}; the quote is within bounds; fee {fee} of {} (worth {} \
         ETH) under the ceiling {}",
        reading.base_fee,
        reading.priority_fee,
        asset_label(f.asset),
        eth(value_wei),
        match ceiling {
            Ceiling::Explicit(max) => format!("{max} (--max-fee)"),
            Ceiling::Default { wei } => format!("{} ETH (default)", eth(wei)),
        }
    );
    let question = format!(
        "pay {fee} of {} (worth {} ETH) to relayer {} for {}?",
        asset_label(f.asset),
        eth(value_wei),
        quote.relayer,
        f.what
    );
    if !wallet_cmd::confirmed_on_terminal(f.fee.yes, &question)? {
        return Err(wallet_cmd::NOT_CONFIRMED.into());
    }
    Ok(fee)
}

fn asset_label(asset: Address) -> String {
    if asset.is_zero() { "ETH (wei)".into() } else { format!("token {asset}") }
}

/// Wei as a decimal number of ETH.
fn eth(wei: U256) -> String {
    let unit = U256::from(10u64).pow(U256::from(18u64));
    let frac = (wei % unit).to_string();
    let frac = format!("{}{frac}", "0".repeat(18usize.saturating_sub(frac.len())));
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() { format!("{}", wei / unit) } else { format!("{}.{frac}", wei / unit) }
}

/// How the fee is chosen and what the relayer is asked.
struct PayOptions<'a> {
    asset: Address,
    fee: &'a FeeArgs,
    valid_for: u64,
    pay_on_revert: bool,
    /// Nullifiers of notes already spent inside the action (a swap's withdrawal).
    avoid: &'a [ark_bn254::Fr],
    /// Proof time spent before the payment (the action's own proof).
    earlier_proofs: Duration,
}

/// What the paid transaction makes besides the fee.
#[derive(Default)]
struct Makes {
    outputs: Vec<(nox_wallet::PaymentAddress, u128)>,
    join: bool,
    public_out: u128,
    recipient: Address,
}

/// Proves the transaction paying the session's relayer for `action` (and making `makes`), sends
/// the bundle through the mixnet and reports the outcome.
async fn pay_and_submit(
    s: &Session,
    w: &wallet_cmd::WalletArgs,
    o: &PayOptions<'_>,
    action: Action,
    makes: Makes,
) -> Result<Landed, Stop> {
    let fee = s.fee;
    println!(
        "relayer {} quoted in {:.1} s; paying {fee} base units of {}",
        s.quote.relayer,
        s.quoted_in.as_secs_f64(),
        asset_label(o.asset)
    );
    let payment = nox_pay::Payment {
        payee: nox_pay::Payee::of(&s.quote),
        asset: o.asset,
        fee,
        action,
        outputs: makes.outputs,
        join: makes.join,
        public_out: makes.public_out,
        recipient: makes.recipient,
        deadline: s.now + o.valid_for,
        avoid: o.avoid,
    };
    let prepared = payment.prepare(&s.view, &s.seed, &mut wallet_rng()).map_err(|e| match e {
        PayError::Wallet(e) => Stop::wallet(e),
        e => Stop::Failed(e.to_string()),
    })?;
    let proving = Instant::now();
    let proof = wallet_cmd::prove_transaction(w, &prepared)?;
    let proved_in = proving.elapsed() + o.earlier_proofs;
    let mut paid = payment.bundle(&prepared, &proof);
    paid.submission.pay_on_revert = o.pay_on_revert;
    paid.submission.simulate_only = o.fee.simulate_only;
    // Journaled before it leaves: if the answer is lost, a re-run finds this transaction (its
    // nullifiers) instead of paying a relayer again.
    let mut entry = wallet_cmd::journal::Entry {
        intent: s.intent.clone(),
        tx_hash: None,
        nullifiers: Some(paid.nullifiers),
        deadline: Some(payment.deadline),
        relayer: Some(s.quote.relayer),
        from_block: s.view.last_block,
    };
    if !o.fee.simulate_only {
        wallet_cmd::journal_record(w, entry.clone())?;
    }
    let t = Ticker::start("sent through the mixnet; waiting for the relayer's answer");
    let sending = Instant::now();
    let answer = s.relay.submit(paid.submission).await;
    t.finish();
    let outcome = match answer {
        Ok(outcome) => outcome,
        Err(e) => return Err(Stop::Failed(wallet_cmd::journal::lost(&entry, &e.to_string()))),
    };
    match &outcome {
        Outcome::Pending { tx_hash, .. } => {
            entry.tx_hash = Some(*tx_hash);
            wallet_cmd::journal_record(w, entry.clone())?;
        }
        _ => wallet_cmd::journal_resolve(w, &entry.intent)?,
    }
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
        Outcome::Included { action_success, tx_hash, block, gas_used, .. } => {
            if !payment.action.is_none() {
                println!("the action {}", if action_success { "succeeded" } else { "reverted (the fee was paid)" });
            }
            Ok(Landed {
                tx_hash,
                block,
                gas_used,
                fee,
                outputs: paid.outputs,
                spent: paid.inputs.iter().map(|i| i.value).collect(),
            })
        }
        Outcome::Simulated { .. } => Err(Stop::Failed("simulated only (--simulate-only): nothing was sent".into())),
        Outcome::Pending { detail, .. } => Err(Stop::Failed(wallet_cmd::journal::lost(
            &entry,
            &format!("the relayer's answer: not yet mined, {detail}"),
        ))),
        Outcome::Refused { reason, detail, required_fee } => Err(Stop::Failed(format!(
            "refused ({reason:?}): {detail}{}",
            required_fee.map(|f| format!("; a fee of at least {f} would be accepted now")).unwrap_or_default()
        ))),
    }
}

fn wallet_rng() -> rand_chacha_03::ChaCha20Rng {
    use rand_core_06::SeedableRng;
    rand_chacha_03::ChaCha20Rng::from_entropy()
}

/// A private transaction (`nox wallet send/split/join/withdraw`) paid through the mixnet: a
/// payment-only bundle (no action) whose one proof makes the plan's notes and pays the fee.
pub(crate) async fn paid(p: &PrivateArgs, plan: &Plan) -> Result<(Landed, Unit), Stop> {
    let asset = plan.asset;
    let fee_for = FeeFor {
        asset,
        action_gas: 0,
        action_data_len: 0,
        fee: &p.submit.fee,
        what: plan.what.clone(),
        intent: plan.intent(),
    };
    let s = session(&p.chain, &p.submit.mix, &fee_for).await?;
    let unit = wallet_cmd::unit_of(&s.provider, asset).await;
    let o = PayOptions {
        asset,
        fee: &p.submit.fee,
        valid_for: p.submit.valid_for,
        pay_on_revert: false,
        avoid: &[],
        earlier_proofs: Duration::ZERO,
    };
    let makes = Makes {
        outputs: plan.outputs.clone(),
        join: plan.join,
        public_out: plan.public_out,
        recipient: plan.recipient,
    };
    let landed = pay_and_submit(&s, &p.chain.wallet, &o, Action::none(), makes).await?;
    Ok((landed, unit))
}

async fn send(a: &SendArgs) -> Result<(), Stop> {
    let started = Instant::now();
    let asset = a.asset.unwrap_or(Address::ZERO);
    let fee_for = FeeFor {
        asset,
        action_gas: a.action_gas,
        action_data_len: a.data.len(),
        fee: &a.fee,
        what: format!("a call to {} ({} bytes of calldata)", a.target, a.data.len()),
        intent: format!("a call to {} with data {} and gas {}, paid in {asset}", a.target, a.data, a.action_gas),
    };
    let s = session(&a.chain, &a.mix, &fee_for).await?;
    // A call with calldata to an address without code does nothing and still pays the fee (a
    // typo'd target): refused before anything is proved, unless --force.
    if !a.data.is_empty() && !a.force {
        use alloy::providers::Provider;
        let code = s.provider.get_code_at(a.target).await.map_err(|e| format!("reading {}'s code: {e}", a.target))?;
        if code.is_empty() {
            return Err(Stop::Failed(format!(
                "--target {} has no code: a call with calldata to it would do nothing and still pay the fee (a typo?); \
                 nothing was proved, spent or sent (--force sends it anyway)",
                a.target
            )));
        }
    }
    let unit = wallet_cmd::unit_of(&s.provider, asset).await;
    let o = PayOptions {
        asset,
        fee: &a.fee,
        valid_for: a.valid_for,
        pay_on_revert: a.pay_on_revert,
        avoid: &[],
        earlier_proofs: Duration::ZERO,
    };
    let action = Action { target: a.target, data: a.data.clone(), gas: a.action_gas };
    let landed = pay_and_submit(&s, &a.chain.wallet, &o, action, Makes::default()).await?;
    wallet_cmd::report(&landed, &unit, started);
    Ok(())
}

/// `nox tx withdraw`: one paid transaction, `publicOut` to the address (no adaptor, no action).
async fn withdraw(a: &AdaptorArgs) -> Result<(), Stop> {
    let started = Instant::now();
    let private = PrivateArgs {
        chain: a.chain.clone(),
        submit: wallet_cmd::SubmitArgs {
            direct: false,
            key_file: None,
            mix: a.mix.clone(),
            fee: a.fee.clone(),
            valid_for: a.valid_for,
        },
        asset: None,
    };
    let unit = Unit::eth();
    let plan = Plan {
        asset: Address::ZERO,
        outputs: Vec::new(),
        join: false,
        public_out: a.amount,
        recipient: a.to,
        what: format!("a withdrawal of {} to {}", unit.show(a.amount), a.to),
    };
    wallet_cmd::privacy_advice(&a.chain, Address::ZERO, a.amount, &unit, wallet_cmd::WithdrawCommand::Tx).await?;
    let (landed, unit) = paid(&private, &plan).await?;
    wallet_cmd::report(&landed, &unit, started);
    Ok(())
}

/// A private swap through the testnet's adaptor: a withdrawal transaction to the adaptor bound
/// to the swap's parameters (`swapHash`) inside the action, and a second transaction paying the
/// relayer from other notes for the bundle whose action is the adaptor's `swapExactIn`.
async fn swap(a: &AdaptorArgs, slippage_bps: u32, action_gas: u64) -> Result<(), Stop> {
    let started = Instant::now();
    let (chain, amount, to, valid_for) = (&a.chain, a.amount, a.to, a.valid_for);
    use nox_chain::defi::UniswapV2Router02;
    let testnet = chain.pool.testnet.clone().ok_or("give --testnet")?;
    let defi = nox_testnet::chain::load(&testnet)
        .and_then(|c| c.defi)
        .ok_or("this testnet has no Uniswap deployment and adaptor (chain.json has no defi)")?;
    let what = format!("a swap of {amount} wei to {to}");
    let intent = format!("a swap of {amount} wei for {} to {to}", defi.token);
    let fee_for = FeeFor {
        asset: Address::ZERO,
        action_gas,
        action_data_len: nox_pay::adaptor::Withdrawal::action_data_len(),
        fee: &a.fee,
        what,
        intent,
    };
    let s = session(chain, &a.mix, &fee_for).await?;
    let router = UniswapV2Router02::new(defi.router, &s.provider);
    let amounts = router
        .getAmountsOut(U256::from(amount), vec![defi.weth, defi.token])
        .call()
        .await
        .map_err(|e| format!("quoting the swap: {e}"))?;
    let expected = *amounts.last().ok_or("empty quote")?;
    let min_out = expected * U256::from(10_000 - slippage_bps.min(10_000)) / U256::from(10_000u64);
    println!("swapping {amount} wei for at least {min_out} NOX (quoted {expected}) to {to}");
    let withdrawal = Withdrawal {
        adaptor: defi.adaptor,
        chain_id: s.chain_id,
        pool: s.at.pool,
        asset: Address::ZERO,
        amount,
        swap: Swap {
            tokenOut: defi.token,
            amountOutMin: min_out,
            swapDeadline: U256::from(s.now + valid_for),
            recipient: to,
        },
        deadline: s.now + valid_for,
    };
    let prepared: PreparedTransaction =
        s.view.prepare_transaction(&s.seed, &withdrawal.request(), &mut wallet_rng()).map_err(Stop::wallet)?;
    let proving = Instant::now();
    let proof = wallet_cmd::prove_transaction(&chain.wallet, &prepared)?;
    let avoid: Vec<ark_bn254::Fr> = prepared.inputs.iter().map(|i| i.nullifier).collect();
    let o = PayOptions {
        asset: Address::ZERO,
        fee: &a.fee,
        valid_for,
        pay_on_revert: false,
        avoid: &avoid,
        earlier_proofs: proving.elapsed(),
    };
    let action = withdrawal.action(&prepared, &proof, action_gas);
    let unit = Unit::eth();
    let landed = pay_and_submit(&s, &chain.wallet, &o, action, Makes::default()).await?;
    println!("the withdrawal inside the action:");
    wallet_cmd::report(
        &Landed {
            tx_hash: landed.tx_hash,
            block: landed.block,
            gas_used: 0,
            fee: 0,
            outputs: prepared.outputs.clone(),
            spent: prepared.inputs.iter().map(|i| i.value).collect(),
        },
        &unit,
        started,
    );
    println!("the payment:");
    wallet_cmd::report(&landed, &unit, started);
    Ok(())
}
