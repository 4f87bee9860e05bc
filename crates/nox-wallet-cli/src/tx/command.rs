//! `nox tx`'s commands (issue 34, moved out of the binary's `tx_cmd.rs`): an anonymous paid
//! transaction (docs/spec/relay.md). The session — the quote checked against this client's own
//! reading of the chain, the fee under the ceiling, the confirmation, the proof, the relayer
//! hand-off through the mixnet and the report — is the parent module; this one holds the
//! arguments, starts the mixnet client, pins the exit and resolves the pool (every chain read
//! through the mixnet: `--rpc`, or this command's own client; `--direct-rpc` only with a
//! warning), and takes the testnet's Uniswap deployment from its chain.json.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy::primitives::{Address, Bytes};
use clap::{Args, Subcommand};
use nox_client_io::cli::{LinkTransport, TopologyArgs};
use nox_pay::{Action, RelayClient};
use nox_wallet::units::Unit;
use nox_wallet_io::chain::unit_of;
use nox_wallet_io::fee_check::TokenPair;
use rand_core_06::RngCore;

use super::{FeeArgs, FeeFor, Makes, MixArgs, PayOptions, Session};
use crate::advice::WithdrawCommand;
use crate::outcome::report;
use crate::pool::{self, ChainArgs, Testnet, parse_eth_address};
use crate::session::read_provider;
use crate::wallet::{CmdResult, PrivateArgs, SubmitArgs, privacy_advice};
use crate::{CommandError, Landed, Plan, Stop};

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
    /// The mixnet and the exit.
    #[command(flatten)]
    pub mix: MixArgs,
    /// Wei of ETH withdrawn (for a swap, the fee comes from other notes).
    #[arg(long)]
    pub amount: u128,
    /// Where the output goes (a fresh address keeps it unlinked).
    #[arg(long, value_parser = parse_eth_address)]
    pub to: Address,
    /// The relayer's fee.
    #[command(flatten)]
    pub fee: FeeArgs,
    /// Seconds the proofs (and a swap) stay valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
}

/// `nox tx swap`
#[derive(Args)]
pub struct SwapArgs {
    /// The withdrawal.
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

/// `nox tx quote`
#[derive(Args)]
pub struct QuoteArgs {
    /// A testnet directory (its topology).
    #[arg(long)]
    pub testnet: PathBuf,
    /// The mixnet and the exit.
    #[command(flatten)]
    pub mix: MixArgs,
}

/// `nox tx send`
#[derive(Args)]
pub struct SendArgs {
    /// Wallet and pool; `--testnet` also names the mixnet (its topology).
    #[command(flatten)]
    pub chain: ChainArgs,
    /// The mixnet and the exit.
    #[command(flatten)]
    pub mix: MixArgs,
    /// The action's target.
    #[arg(long, value_parser = parse_eth_address)]
    pub target: Address,
    /// The action's calldata (hex).
    #[arg(long, default_value = "0x")]
    pub data: Bytes,
    /// ERC-20 token to pay the fee in; ETH without it.
    #[arg(long, value_parser = parse_eth_address)]
    pub asset: Option<Address>,
    /// Gas the action is given, exactly (bound into the payment: the relayer adds the payment's
    /// gas and its margins, and cannot be paid for giving the action less).
    #[arg(long, default_value_t = 100_000)]
    pub action_gas: u64,
    /// The relayer's fee.
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

/// Runs a `nox tx` command; `testnet` is what `--testnet <dir>` means.
pub fn run(command: TxCommand, testnet: Testnet) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CommandError::Runtime)?;
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
                    transport: LinkTransport::Tcp,
                };
                let quote = connect(&topology, &a.mix, testnet).await?.quote().await?;
                println!("{}", serde_json::to_string_pretty(&quote)?);
                Ok(())
            }
            TxCommand::Send(a) => Stop::finish(send(&a, testnet).await),
            TxCommand::Swap(a) => Stop::finish(swap(&a, testnet).await),
            TxCommand::Withdraw(a) => Stop::finish(withdraw(&a, testnet).await),
        }
    })
}

/// A mixnet client for the testnet's topology, and the relayer of the chosen (or a random) exit.
async fn connect(topology: &TopologyArgs, mix: &MixArgs, testnet: Testnet) -> CmdResult<RelayClient> {
    let client = nox_client_io::cli::start(topology, mix.cover_rate, testnet.client)
        .await
        .map_err(|e| pool::PoolError::Client(Box::new(e)))?;
    let random = rand_core_06::OsRng.next_u64();
    let exit = super::pick_exit(&client.exits(), mix.exit, random)?;
    Ok(RelayClient::new(client, exit))
}

/// The mixnet, the exit's quote, the pool (read through the mixnet: `--rpc`, or this command's
/// own client, never chain.json's URL), then [`super::open`].
async fn session(chain: &ChainArgs, mix: &MixArgs, fee_for: &FeeFor<'_>, testnet: Testnet) -> Result<Session, Stop> {
    let topology = chain.pool.topology(mix.timeout_secs)?.ok_or(CommandError::NoMixnet)?;
    let relay = connect(&topology, mix, testnet).await?;
    let quoted = super::timed_quote(&relay).await?;
    let at = pool::resolve(&chain.pool, Some(relay.client()), testnet).await?;
    let provider = read_provider(&at.rpc)?;
    let pair = chain.pool.testnet.as_deref().and_then(testnet.chain).and_then(|c| c.defi);
    let pair = pair.map(|d| TokenPair { router: d.router, weth: d.weth, token: d.token });
    let sync = |at, provider| async move { Ok(pool::synced_at(chain, &at, &provider).await?) };
    super::open(relay, quoted, at, provider, &chain.wallet, pair, fee_for, sync).await
}

/// A private transaction (`nox wallet send/split/join/withdraw`) paid through the mixnet: a
/// payment-only bundle (no action) whose one proof makes the plan's notes and pays the fee.
pub(crate) async fn paid(p: &PrivateArgs, plan: &Plan, testnet: Testnet) -> Result<(Landed, Unit), Stop> {
    let fee = &p.submit.fee;
    let fee_for = FeeFor {
        asset: plan.asset,
        action_gas: 0,
        action_data_len: 0,
        fee,
        what: plan.what.clone(),
        intent: plan.intent(),
    };
    let s = session(&p.chain, &p.submit.mix, &fee_for, testnet).await?;
    let unit = unit_of(&s.provider, plan.asset).await;
    let o = PayOptions {
        asset: plan.asset,
        fee,
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
    Ok((super::pay_and_submit(&s, &p.chain.wallet, &o, Action::none(), makes).await?, unit))
}

async fn send(a: &SendArgs, testnet: Testnet) -> Result<(), Stop> {
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
    let s = session(&a.chain, &a.mix, &fee_for, testnet).await?;
    super::check_target(&s.provider, a.target, &a.data, a.force).await?;
    let unit = unit_of(&s.provider, asset).await;
    let o = PayOptions {
        asset,
        fee: &a.fee,
        valid_for: a.valid_for,
        pay_on_revert: a.pay_on_revert,
        avoid: &[],
        earlier_proofs: Duration::ZERO,
    };
    let action = Action { target: a.target, data: a.data.clone(), gas: a.action_gas };
    let landed = super::pay_and_submit(&s, &a.chain.wallet, &o, action, Makes::default()).await?;
    report(&landed, &unit, started);
    Ok(())
}

/// `nox tx withdraw`: one paid transaction, `publicOut` to the address (no adaptor, no action).
async fn withdraw(a: &AdaptorArgs, testnet: Testnet) -> Result<(), Stop> {
    let started = Instant::now();
    let submit =
        SubmitArgs { direct: false, key_file: None, mix: a.mix.clone(), fee: a.fee.clone(), valid_for: a.valid_for };
    let private = PrivateArgs { chain: a.chain.clone(), submit, asset: None };
    let unit = Unit::eth();
    let what = format!("a withdrawal of {} to {}", unit.show(a.amount), a.to);
    let plan =
        Plan { asset: Address::ZERO, outputs: Vec::new(), join: false, public_out: a.amount, recipient: a.to, what };
    privacy_advice(&a.chain, Address::ZERO, a.amount, &unit, WithdrawCommand::Tx, testnet).await?;
    let (landed, unit) = paid(&private, &plan, testnet).await?;
    report(&landed, &unit, started);
    Ok(())
}

/// `nox tx swap`: through the testnet's Uniswap deployment and adaptor ([`super::swap`]).
async fn swap(a: &SwapArgs, testnet: Testnet) -> Result<(), Stop> {
    let started = Instant::now();
    let (out, chain) = (&a.out, &a.out.chain);
    let dir = chain.pool.testnet.clone().ok_or(CommandError::NoTestnet)?;
    let defi = (testnet.chain)(&dir).and_then(|c| c.defi).ok_or(CommandError::NoDefi)?;
    let fee_for = FeeFor {
        asset: Address::ZERO,
        action_gas: a.action_gas,
        action_data_len: nox_pay::adaptor::Withdrawal::action_data_len(),
        fee: &out.fee,
        what: format!("a swap of {} wei to {}", out.amount, out.to),
        intent: format!("a swap of {} wei for {} to {}", out.amount, defi.token, out.to),
    };
    let s = session(chain, &out.mix, &fee_for, testnet).await?;
    let venue = super::SwapVenue { router: defi.router, weth: defi.weth, token: defi.token, adaptor: defi.adaptor };
    let terms = (a.slippage_bps, a.action_gas, out.valid_for);
    super::swap(&s, &chain.wallet, venue, (out.amount, out.to), terms, &out.fee, started).await
}
