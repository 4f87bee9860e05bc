//! `nox tx`: an anonymous paid transaction (docs/spec/relay.md). The session — the quote checked
//! against this client's own reading of the chain, the fee under the ceiling, the confirmation,
//! the proof, the relayer hand-off through the mixnet and the report — is
//! `nox_wallet_cli::tx`; this file parses the arguments, starts the mixnet client, pins the exit
//! and resolves the pool (every chain read through the mixnet: `--rpc`, or this command's own
//! client; `--direct-rpc` only with a warning), and supplies the testnet's Uniswap deployment.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy::primitives::{Address, Bytes};
use clap::{Args, Subcommand};
use nox_pay::{Action, RelayClient};
use nox_wallet_cli::tx::{self, FeeFor, Makes, PayOptions, Session};
use nox_wallet_io::fee_check::TokenPair;

use crate::client_cmd::TopologyArgs;
use crate::wallet_cmd::{self, ChainArgs, CmdResult, Landed, Plan, PrivateArgs, Stop, Unit};

pub use nox_wallet_cli::tx::{DEFAULT_FEE_PERCENT, FeeArgs, MixArgs};

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
                let quote = connect(&topology, &a.mix).await?.quote().await.map_err(|e| e.to_string())?;
                println!("{}", serde_json::to_string_pretty(&quote).map_err(|e| e.to_string())?);
                Ok(())
            }
            TxCommand::Send(a) => Stop::finish(send(&a).await),
            TxCommand::Swap(a) => Stop::finish(swap(&a).await),
            TxCommand::Withdraw(a) => Stop::finish(withdraw(&a).await),
        }
    })
}

/// A mixnet client for the testnet's topology, and the relayer of the chosen (or a random) exit.
async fn connect(topology: &TopologyArgs, mix: &MixArgs) -> CmdResult<RelayClient> {
    use rand_core::{RngCore, SeedableRng};
    let client = crate::client_cmd::start(topology, mix.cover_rate).await?;
    let random = rand_chacha::ChaCha20Rng::from_os_rng().next_u64();
    let exit = tx::pick_exit(&client.exits(), mix.exit, random).map_err(|e| e.to_string())?;
    Ok(RelayClient::new(client, exit))
}

/// The mixnet, the exit's quote, the pool (read through the mixnet: `--rpc`, or this command's
/// own client, never chain.json's URL), then `nox_wallet_cli::tx::open`.
async fn session(chain: &ChainArgs, mix: &MixArgs, fee_for: &FeeFor<'_>) -> Result<Session, Stop> {
    let topology =
        chain.pool.topology(mix.timeout_secs)?.ok_or("give --testnet or --chain (the mixnet and its pool)")?;
    let relay = connect(&topology, mix).await?;
    let quoted = tx::timed_quote(&relay).await?;
    let at = wallet_cmd::resolve(&chain.pool, Some(relay.client())).await?;
    let provider = wallet_cmd::read_provider(&at.rpc)?;
    let pair = chain.pool.testnet.as_deref().and_then(nox_testnet::chain::load).and_then(|c| c.defi);
    let pair = pair.map(|d| TokenPair { router: d.router, weth: d.weth, token: d.token });
    let sync = |at, provider| async move { Ok(wallet_cmd::synced_at(chain, &at, &provider).await?) };
    tx::open(relay, quoted, at, provider, &chain.wallet, pair, fee_for, sync).await
}

/// A private transaction (`nox wallet send/split/join/withdraw`) paid through the mixnet: a
/// payment-only bundle (no action) whose one proof makes the plan's notes and pays the fee.
pub(crate) async fn paid(p: &PrivateArgs, plan: &Plan) -> Result<(Landed, Unit), Stop> {
    let fee = &p.submit.fee;
    let fee_for = FeeFor {
        asset: plan.asset,
        action_gas: 0,
        action_data_len: 0,
        fee,
        what: plan.what.clone(),
        intent: plan.intent(),
    };
    let s = session(&p.chain, &p.submit.mix, &fee_for).await?;
    let unit = wallet_cmd::unit_of(&s.provider, plan.asset).await;
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
    Ok((tx::pay_and_submit(&s, &p.chain.wallet, &o, Action::none(), makes).await?, unit))
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
    tx::check_target(&s.provider, a.target, &a.data, a.force).await?;
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
    let landed = tx::pay_and_submit(&s, &a.chain.wallet, &o, action, Makes::default()).await?;
    wallet_cmd::report(&landed, &unit, started);
    Ok(())
}

/// `nox tx withdraw`: one paid transaction, `publicOut` to the address (no adaptor, no action).
async fn withdraw(a: &AdaptorArgs) -> Result<(), Stop> {
    let started = Instant::now();
    let submit = wallet_cmd::SubmitArgs {
        direct: false,
        key_file: None,
        mix: a.mix.clone(),
        fee: a.fee.clone(),
        valid_for: a.valid_for,
    };
    let private = PrivateArgs { chain: a.chain.clone(), submit, asset: None };
    let unit = Unit::eth();
    let what = format!("a withdrawal of {} to {}", unit.show(a.amount), a.to);
    let plan =
        Plan { asset: Address::ZERO, outputs: Vec::new(), join: false, public_out: a.amount, recipient: a.to, what };
    wallet_cmd::privacy_advice(&a.chain, Address::ZERO, a.amount, &unit, wallet_cmd::WithdrawCommand::Tx).await?;
    let (landed, unit) = paid(&private, &plan).await?;
    wallet_cmd::report(&landed, &unit, started);
    Ok(())
}

/// `nox tx swap`: through the testnet's Uniswap deployment and adaptor (`nox_wallet_cli::tx::swap`).
async fn swap(a: &SwapArgs) -> Result<(), Stop> {
    let started = Instant::now();
    let (out, chain) = (&a.out, &a.out.chain);
    let testnet = chain.pool.testnet.clone().ok_or("give --testnet")?;
    let defi = nox_testnet::chain::load(&testnet)
        .and_then(|c| c.defi)
        .ok_or("this testnet has no Uniswap deployment and adaptor (chain.json has no defi)")?;
    let fee_for = FeeFor {
        asset: Address::ZERO,
        action_gas: a.action_gas,
        action_data_len: nox_pay::adaptor::Withdrawal::action_data_len(),
        fee: &out.fee,
        what: format!("a swap of {} wei to {}", out.amount, out.to),
        intent: format!("a swap of {} wei for {} to {}", out.amount, defi.token, out.to),
    };
    let s = session(chain, &out.mix, &fee_for).await?;
    let venue = tx::SwapVenue { router: defi.router, weth: defi.weth, token: defi.token, adaptor: defi.adaptor };
    let terms = (a.slippage_bps, a.action_gas, out.valid_for);
    tx::swap(&s, &chain.wallet, venue, (out.amount, out.to), terms, &out.fee, started).await
}
