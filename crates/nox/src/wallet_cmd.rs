//! `nox wallet`: the shielded-pool wallet on the command line (issues 12, 30, 35; formats in
//! docs/spec/notes.md). The core is `nox-wallet` (pure); `nox-wallet-io` has the disk (files
//! sealed with the passphrase, written atomically with mode 0600) and the chain reads (the
//! pool's events read in pages, the journal's and the insertion race's checks); this file adds
//! the arguments, transactions sent with alloy, the prover's progress and the output.
//!
//! Every private operation — `send` to a shielded address, `split`, `join`, `withdraw` — is one
//! 2-in/2-out transaction with one proof (docs/design/zk-payment.md §9). By default it is paid
//! through the mixnet: an exit's relayer submits it and takes its fee from the same proof
//! (`nox_pay`, shared with `nox tx`); `--direct` submits it from an Ethereum account of the
//! wallet's (`--key-file`), which pays the gas and appears on chain.
//!
//! Every chain read (and a deposit's or direct transaction's raw transaction) goes through the
//! mixnet (issue 29 item 9, issue 35): through `--rpc`, a `nox client --rpc` endpoint, or,
//! without it, through an in-process mixnet client of the `--testnet`'s topology. A direct read
//! needs an explicit `--direct-rpc URL`, and the command then warns that it reads directly. The
//! URL in the testnet's chain.json is never used for reads.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, Bytes},
    providers::DynProvider,
};
use clap::{Args, Subcommand};
use nox_wallet::{PoolView, Seed};
use nox_wallet_cli::{CliError, advice, files, flows, outcome::already, session};

use crate::tx_cmd::{FeeArgs, MixArgs};

pub use nox_wallet::journal;
pub use nox_wallet::units::{Unit, format_units};
pub use nox_wallet_cli::{
    Landed, NOT_CONFIRMED, Plan, PoolAt, Stop,
    advice::WithdrawCommand,
    files::{RestoreArgs, WalletArgs, parse_shielded},
    outcome::report,
    prompt::confirmed_on_terminal,
    prove::{Ticker, prove_transaction},
    session::{asset_word, fr_address, journal_recall, read_provider},
};
pub use nox_wallet_io::{bundle::BundleFile, chain::unit_of};

/// The exit status of a command that handed a transaction over (broadcast it, or sent it to a
/// relayer) and then lost the answer: the transaction may still land. A re-run of the same
/// command checks the chain for it instead of sending again (`journal`).
pub const EXIT_UNCONFIRMED: u8 = 3;

/// How the error message of such a command starts ([`exit_status`] maps it to
/// [`EXIT_UNCONFIRMED`]).
pub use nox_wallet::journal::UNCONFIRMED;

/// The process exit status for a `nox wallet`/`nox tx` error message: [`EXIT_UNCONFIRMED`] for
/// a transaction whose outcome is unknown, 1 otherwise.
pub fn exit_status(error: &str) -> u8 {
    if error.starts_with(UNCONFIRMED) { EXIT_UNCONFIRMED } else { 1 }
}

/// `nox wallet …`
#[derive(Subcommand)]
pub enum WalletCommand {
    /// Create a wallet: a fresh seed sealed under the passphrase; prints the shielded address.
    New(WalletArgs),
    /// Restore a wallet from a copy of its `wallet.key` (the seed, sealed under its passphrase)
    /// and find its notes on the chain again.
    Restore(RestoreArgs),
    /// Print the wallet's shielded address (`nox1…`): what a payer needs.
    Address(WalletArgs),
    /// Print the wallet's viewing key (`noxview1…`): it shows every note of this wallet (for an
    /// auditor) but cannot spend.
    ViewingKey(WalletArgs),
    /// Read the pool's new events (through the mixnet), with progress: the notes found, and any
    /// note addressed to this wallet that does not open (tampered) is reported.
    Sync(ChainArgs),
    /// Sync, then print the balance of every asset (spendable, pending insertion).
    Balance(ChainArgs),
    /// Deposit into the pool from an Ethereum account (public: the account, asset and amount
    /// are visible; the note it creates is not linkable to its later spends).
    Deposit(DepositArgs),
    /// Pay a shielded address (`nox1…`) privately: one proof, paid through the mixnet unless
    /// `--direct`.
    Send(SendArgs),
    /// Split one note into two of this wallet's (e.g. a payment-sized note and the rest).
    Split(SplitArgs),
    /// Join two of this wallet's notes of an asset (the two smallest) into one.
    Join(PrivateArgs),
    /// Withdraw from the pool to an Ethereum address: one proof, paid through the mixnet unless
    /// `--direct` (a fresh recipient then needs no ETH and nothing links it to the depositor).
    Withdraw(WithdrawArgs),
    /// Prove a payment for one action and write the BatchExecutor bundle for a relayer.
    Pay(PayArgs),
    /// Insert the pool's queued commitments into its tree (a batch of up to 16, proved here):
    /// needed before new notes are spendable. The testnet's relayers do it on their own; anyone
    /// may do it, it costs gas and shows the account that sends it.
    Insert(InsertArgs),
}

/// The pool to use.
#[derive(Args, Clone)]
pub struct PoolArgs {
    /// A testnet directory (`nox testnet up --dir`): its chain.json names the pool, its
    /// topology the mixnet the chain is read through when `--rpc` is not given.
    #[arg(long)]
    pub testnet: Option<PathBuf>,
    /// The JSON-RPC endpoint of a `nox client --rpc` daemon: every chain read goes through the
    /// mixnet. Without it (and without `--direct-rpc`), the command starts its own mixnet
    /// client of the `--testnet`'s topology.
    #[arg(long, conflicts_with = "direct_rpc")]
    pub rpc: Option<String>,
    /// Read the chain directly from this JSON-RPC URL, NOT through the mixnet (its operator sees
    /// every read and your IP address); the command warns when it does.
    #[arg(long, value_name = "URL")]
    pub direct_rpc: Option<String>,
    /// A network on a chain instead of a testnet: a chain preset (`anvil`, a chain id with
    /// `deployments/<id>.json`, or a deployment record file). The pool, the executor and the
    /// first block come from its record; the mixnet from its directory mirrors (or
    /// `--directory`), every node admitted only if the chain's registry lists it.
    #[arg(long, value_name = "PRESET", conflicts_with = "testnet")]
    pub chain: Option<String>,
    /// With `--chain`: a directory mirror (`http://HOST:PORT`; repeat for several) instead of
    /// the record's mirrors.
    #[arg(long, value_name = "URL", requires = "chain")]
    pub directory: Vec<String>,
    /// With `--chain`: the JSON-RPC URL the registry is read from to admit the mirrors' nodes
    /// (default: the preset's). The wallet's own reads still go through the mixnet.
    #[arg(long, value_name = "URL", requires = "chain")]
    pub chain_rpc: Option<String>,
    /// The ShieldedPool address (overrides the testnet's).
    #[arg(long, value_parser = parse_eth_address)]
    pub pool: Option<Address>,
    /// First block to scan when the wallet has no state yet (the pool's deployment block).
    #[arg(long)]
    pub from_block: Option<u64>,
}

/// Wallet and pool.
#[derive(Args, Clone)]
pub struct ChainArgs {
    #[command(flatten)]
    pub wallet: WalletArgs,
    #[command(flatten)]
    pub pool: PoolArgs,
}

/// How a private transaction is submitted and paid.
#[derive(Args, Clone)]
pub struct SubmitArgs {
    /// Submit from an Ethereum account of yours (`--key-file`), which pays the gas and is seen
    /// sending the transaction; without it an exit's relayer submits it, paid from the
    /// transaction itself, and you appear nowhere.
    #[arg(long, requires = "key_file")]
    pub direct: bool,
    /// With `--direct`: file with the hex private key of the submitting account.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    #[command(flatten)]
    pub mix: MixArgs,
    #[command(flatten)]
    pub fee: FeeArgs,
    /// Seconds the proof stays valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
}

/// What every private transaction command takes.
#[derive(Args, Clone)]
pub struct PrivateArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub submit: SubmitArgs,
    /// ERC-20 token address; ETH without it.
    #[arg(long, value_parser = parse_eth_address)]
    pub asset: Option<Address>,
}

/// `nox wallet send`
#[derive(Args, Clone)]
pub struct SendArgs {
    #[command(flatten)]
    pub private: PrivateArgs,
    /// The recipient's shielded address (`nox1…`; `nox wallet address` prints it).
    #[arg(long)]
    pub to: String,
    /// Amount in the asset's unit (`0.05` ETH; a token by its decimals), or base units with a
    /// `wei` suffix (`50000000000000000wei`).
    #[arg(long)]
    pub amount: String,
    /// When no two notes cover the amount but the balance does, join notes first (one more
    /// paid transaction), wait for the joined note to be inserted, then send. Without it the
    /// command asks on a terminal and otherwise stops and says to run `nox wallet join`.
    #[arg(long)]
    pub auto_join: bool,
    /// Seconds `--auto-join` waits for the joined note to be inserted.
    #[arg(long, default_value_t = 300)]
    pub join_wait_secs: u64,
}

/// `nox wallet split`
#[derive(Args, Clone)]
pub struct SplitArgs {
    #[command(flatten)]
    pub private: PrivateArgs,
    /// The new notes' amounts (asset units, as `send --amount`): one amount `a` makes a note of
    /// `a` and one of the rest; two amounts `a,b` make exactly those two notes (the inputs must
    /// then hold `a + b + fee`, the rest stays as change — refused if it would need a third note).
    #[arg(long, value_delimiter = ',', num_args = 1..=2, required = true)]
    pub amounts: Vec<String>,
}

/// `nox wallet withdraw`
#[derive(Args, Clone)]
pub struct WithdrawArgs {
    #[command(flatten)]
    pub private: PrivateArgs,
    /// Amount in the asset's unit (as `send --amount`).
    #[arg(long)]
    pub amount: String,
    /// The Ethereum address that receives it (a fresh address keeps it unlinked).
    #[arg(long, value_parser = parse_eth_address)]
    pub to: Address,
}

/// `nox wallet deposit`
#[derive(Args)]
pub struct DepositArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// Amount in the asset's unit (as `send --amount`).
    #[arg(long)]
    pub amount: String,
    /// ERC-20 token address; ETH without it.
    #[arg(long, value_parser = parse_eth_address)]
    pub asset: Option<Address>,
    /// Make the note for another wallet (`nox1…`); this wallet's own address without it.
    #[arg(long)]
    pub to: Option<String>,
    /// File with the hex private key of the paying Ethereum account.
    #[arg(long)]
    pub key_file: PathBuf,
    /// Seconds to wait for the deposit's receipt. Without one by then (or if the endpoint goes
    /// away) the command prints the transaction hash and exits with status 3; run it again and
    /// it reports the deposit (or waits for it) instead of depositing twice.
    #[arg(long, default_value_t = 120)]
    pub receipt_timeout_secs: u64,
}

/// `nox wallet pay`
#[derive(Args)]
pub struct PayArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// The BatchExecutor the bundle goes to (the testnet's without it).
    #[arg(long, value_parser = parse_eth_address)]
    pub executor: Option<Address>,
    /// The relayer that will submit the bundle (its `msg.sender`): the payment credits it only.
    #[arg(long, value_parser = parse_eth_address)]
    pub relayer: Address,
    /// Fee in the asset's base unit.
    #[arg(long)]
    pub fee: u128,
    /// ERC-20 token address for the fee; ETH without it.
    #[arg(long, value_parser = parse_eth_address)]
    pub asset: Option<Address>,
    /// The action's target (without it, no action: a payment-only bundle).
    #[arg(long, value_parser = parse_eth_address)]
    pub target: Option<Address>,
    /// The action's calldata (hex).
    #[arg(long, default_value = "0x")]
    pub data: Bytes,
    /// Gas the executor must forward to the action (bound into the execution hash; the bundle
    /// reverts if the relayer's gas limit cannot give it).
    #[arg(long, default_value_t = 200_000)]
    pub action_gas: u64,
    /// Seconds the proof stays valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
    /// Where to write the bundle (JSON).
    #[arg(long)]
    pub out: PathBuf,
}

/// `nox wallet insert`
#[derive(Args)]
pub struct InsertArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// File with the hex private key of the account that submits (and pays gas for) the batch.
    #[arg(long)]
    pub key_file: PathBuf,
}

pub type CmdResult<T = ()> = Result<T, String>;

/// Runs a wallet command.
pub fn run(command: WalletCommand) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    match command {
        WalletCommand::New(w) => Ok(files::new_wallet(&w)?),
        WalletCommand::Restore(r) => Ok(files::restore(&r)?),
        WalletCommand::Address(w) => {
            println!("{}", files::open_seed(&w)?.address().map_err(CliError::from)?);
            Ok(())
        }
        WalletCommand::ViewingKey(w) => {
            let seed = files::open_seed(&w)?;
            eprintln!(
                "the viewing key below shows every note of this wallet, sent and received, to whoever holds it; it \
                 cannot spend"
            );
            let vk = seed.viewing_key().map_err(CliError::from)?;
            println!("{}", vk.export().map_err(CliError::from)?.as_str());
            Ok(())
        }
        WalletCommand::Sync(c) => runtime.block_on(async {
            let (_, at, _, view) = synced(&c).await?;
            println!("pool {} synced to block {}", at.pool, view.last_block);
            Ok(())
        }),
        WalletCommand::Balance(c) => runtime.block_on(async {
            let (_, at, provider, view) = synced(&c).await?;
            session::balance_lines(&provider, at.pool, &view).await.iter().for_each(|l| println!("{l}"));
            Ok(())
        }),
        WalletCommand::Deposit(a) => runtime.block_on(async {
            let seed = files::open_seed(&a.chain.wallet)?;
            let at = resolve(&a.chain.pool, None).await?;
            let (to, key_file) = (a.to.as_deref(), &a.key_file);
            let timeout = Duration::from_secs(a.receipt_timeout_secs);
            let order =
                flows::DepositOrder { amount: &a.amount, asset: a.asset, to, key_file, receipt_timeout: timeout };
            Ok(flows::deposit(&a.chain.wallet, &order, &seed, &at, started).await?)
        }),
        WalletCommand::Send(a) => runtime.block_on(send_cmd(&a)),
        WalletCommand::Split(a) => runtime.block_on(split_cmd(&a)),
        WalletCommand::Join(p) => {
            runtime.block_on(make(&p, &Plan::join(p.asset.unwrap_or(Address::ZERO)))).map_err(Stop::message)
        }
        WalletCommand::Withdraw(a) => runtime.block_on(withdraw_cmd(&a)),
        WalletCommand::Pay(a) => runtime.block_on(async {
            let (seed, at, provider, view) = synced(&a.chain).await?;
            let order = flows::PayOrder {
                executor: a.executor,
                relayer: a.relayer,
                fee: a.fee,
                asset: a.asset,
                target: a.target,
                data: &a.data,
                action_gas: a.action_gas,
                valid_for: a.valid_for,
                out: &a.out,
            };
            Ok(flows::pay(&a.chain.wallet, &order, &seed, &at, &provider, &view).await?)
        }),
        WalletCommand::Insert(a) => runtime.block_on(async {
            let (_, at, _, view) = synced(&a.chain).await?;
            Ok(flows::insert(&a.chain.wallet, &a.key_file, &at, &view, started).await?)
        }),
    }
}

/// An Ethereum address as a command-line value (`nox_wallet::units::parse_eth_address`).
pub fn parse_eth_address(text: &str) -> Result<Address, String> {
    nox_wallet::units::parse_eth_address(text).map_err(|e| e.to_string())
}

/// Records that `entry` is being handed over (before it leaves, or right after a broadcast).
pub fn journal_record(w: &WalletArgs, entry: journal::Entry) -> CmdResult {
    w.dir().journal_record(entry).map_err(|e| e.to_string())
}

/// Forgets `intent`'s entry: its outcome is known.
pub fn journal_resolve(w: &WalletArgs, intent: &str) -> CmdResult {
    w.dir().journal_resolve(intent).map_err(|e| e.to_string())
}

/// The chain's id and its latest block's time (`nox_wallet_io::chain`).
pub async fn chain_context(provider: &DynProvider) -> CmdResult<(u64, u64)> {
    nox_wallet_io::chain::chain_context(provider).await.map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------------
// The pool: where it is, and the wallet synced with it

/// The seconds an in-process mixnet client waits for each chain read's answer.
const MIXNET_READ_TIMEOUT_S: u64 = 180;
/// The cover rate of an in-process mixnet client started for chain reads (packets per second),
/// `nox tx`'s default.
const MIXNET_READ_COVER_RATE: f64 = 2.0;
/// The JSON-RPC URL the command reads (and sends) through: `--rpc` (a mixnet daemon), an
/// explicit `--direct-rpc` (with a warning on stderr), or a local endpoint served by a mixnet
/// client — `mixnet` if the caller already runs one (`nox tx`), else one started here from the
/// `--testnet`'s topology. Never the chain.json URL.
pub async fn read_endpoint(p: &PoolArgs, mixnet: Option<&nox_client::ClientHandle>) -> CmdResult<String> {
    if let Some(url) = &p.rpc {
        return Ok(url.clone());
    }
    if let Some(url) = &p.direct_rpc {
        eprintln!(
            "warning: reading the chain directly from {url} (--direct-rpc), not through the mixnet: that node's \
             operator sees every read of this wallet and your IP address"
        );
        return Ok(url.clone());
    }
    let client = match (mixnet, p.topology(MIXNET_READ_TIMEOUT_S)?) {
        (Some(client), _) => client.clone(),
        (None, Some(topology)) => crate::client_cmd::start(&topology, MIXNET_READ_COVER_RATE).await?,
        (None, None) => {
            return Err("no way to read the chain privately: give --testnet <dir> or --chain <preset> (the command \
                        reads through its own mixnet client), or --rpc <URL> of a `nox client --rpc` daemon (start \
                        one with `nox client --testnet <dir> --rpc 127.0.0.1:8645`); --direct-rpc <URL> reads \
                        directly, not privately"
                .into());
        }
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| format!("local endpoint: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(nox_client::serve_rpc(listener, client, nox_client::RpcConfig::default()));
    eprintln!("reading the chain through the mixnet (an in-process client; endpoint http://{addr})");
    Ok(format!("http://{addr}"))
}

impl PoolArgs {
    /// The mixnet this command reaches by itself: the `--testnet`'s topology, or the `--chain`
    /// preset's directory mirrors (`--directory` first) admitted by its registry; `None`: neither.
    pub(crate) fn topology(&self, timeout_secs: u64) -> CmdResult<Option<crate::client_cmd::TopologyArgs>> {
        let mut topology = crate::client_cmd::TopologyArgs {
            testnet: None,
            topology: None,
            directory: Vec::new(),
            authority: None,
            chain: None,
            chain_rpc: None,
            timeout_secs,
            transport: crate::client_cmd::LinkTransport::Tcp,
        };
        if let Some(dir) = &self.testnet {
            topology.testnet = Some(dir.clone());
        } else if let Some(spec) = &self.chain {
            let record = self.record()?.ok_or("no record")?;
            topology.directory = if self.directory.is_empty() { record.mirrors } else { self.directory.clone() };
            if topology.directory.is_empty() {
                return Err(format!(
                    "--chain {spec}: its record lists no directory mirror; give --directory http://HOST:PORT"
                ));
            }
            topology.chain = Some(spec.clone());
            topology.chain_rpc = self.chain_rpc.clone();
        } else {
            return Ok(None);
        }
        Ok(Some(topology))
    }

    /// The `--chain` preset's deployment record.
    pub(crate) fn record(&self) -> CmdResult<Option<nox_operator::DeploymentRecord>> {
        let Some(spec) = &self.chain else { return Ok(None) };
        let preset = nox_operator::Preset::resolve(spec, std::path::Path::new("deployments"))
            .map_err(|e| format!("--chain: {e}"))?;
        Ok(Some(preset.record))
    }
}

pub async fn resolve(p: &PoolArgs, mixnet: Option<&nox_client::ClientHandle>) -> CmdResult<PoolAt> {
    if let Some(record) = p.record()? {
        let deployed = record.contracts.pool.as_ref().map(|c| c.pool);
        let pool = p.pool.or(deployed).ok_or("give --pool: the --chain record has no shielded pool")?;
        let rpc = read_endpoint(p, mixnet).await?;
        if let Some(warning) = nox_chain::testnet_keys::guard_pool_from_env(&rpc, pool)
            .await
            .map_err(|e| crate::daemon_hint::explain(&rpc, &e.to_string()))?
        {
            eprintln!("{warning}");
        }
        let from_block = p.from_block.unwrap_or(record.start_block);
        return Ok(PoolAt { rpc, pool, executor: Some(record.contracts.executor), from_block });
    }
    let info = match &p.testnet {
        Some(dir) => Some(
            nox_testnet::chain::load(dir)
                .ok_or_else(|| format!("{}: no chain.json (is the testnet up?)", dir.display()))?,
        ),
        None => None,
    };
    let pools = info.as_ref().and_then(|i| i.pool.clone());
    let pool = p.pool.or(pools.as_ref().map(|d| d.pool)).ok_or("give --pool, a --testnet or a --chain with a pool")?;
    let rpc = read_endpoint(p, mixnet).await?;
    // The wallet proves with the TESTNET keys: a pool verifying with them on a chain that is not
    // a development chain is refused (NOX_ALLOW_TESTNET_KEYS_ON_PUBLIC_CHAIN=1: a warning).
    if let Some(warning) = nox_chain::testnet_keys::guard_pool_from_env(&rpc, pool)
        .await
        .map_err(|e| crate::daemon_hint::explain(&rpc, &e.to_string()))?
    {
        eprintln!("{warning}");
    }
    let from_block = p.from_block.or(pools.as_ref().map(|d| d.block)).unwrap_or(0);
    Ok(PoolAt { rpc, pool, executor: info.map(|i| i.deployment.executor), from_block })
}

pub async fn synced(c: &ChainArgs) -> CmdResult<(Seed, PoolAt, DynProvider, PoolView)> {
    let at = resolve(&c.pool, None).await?;
    let provider = read_provider(&at.rpc)?;
    let (seed, view) = synced_at(c, &at, &provider).await?;
    Ok((seed, at, provider, view))
}

/// Opens the wallet and syncs its view through `provider` (the pool `at`), saving the state; a
/// failed read says how to reach the chain (`daemon_hint`).
pub async fn synced_at(c: &ChainArgs, at: &PoolAt, provider: &DynProvider) -> CmdResult<(Seed, PoolView)> {
    session::sync_view(&c.wallet, at, provider).await.map_err(|e| match &e {
        CliError::Sync(s) if s.is_read() => crate::daemon_hint::explain(&at.rpc, &e.to_string()),
        _ => e.to_string(),
    })
}

// ---------------------------------------------------------------------------------------------
// Private transactions: send, split, join, withdraw

/// The unit of the command's asset (read through the mixnet).
async fn unit_for(p: &PrivateArgs) -> CmdResult<Unit> {
    let asset = p.asset.unwrap_or(Address::ZERO);
    if asset.is_zero() {
        return Ok(Unit::eth());
    }
    let at = resolve(&p.chain.pool, None).await?;
    Ok(unit_of(&read_provider(&at.rpc)?, asset).await)
}
async fn send_cmd(a: &SendArgs) -> CmdResult {
    let to = parse_shielded(&a.to)?;
    let unit = unit_for(&a.private).await?;
    let amount = unit.parse(&a.amount).map_err(|e| e.to_string())?;
    let plan = Plan {
        asset: a.private.asset.unwrap_or(Address::ZERO),
        outputs: vec![(to, amount)],
        join: false,
        public_out: 0,
        recipient: Address::ZERO,
        what: format!("a private payment of {} to {to}", unit.show(amount)),
    };
    match make(&a.private, &plan).await {
        Ok(()) => Ok(()),
        Err(e @ (Stop::Failed(_) | Stop::Already { .. })) => Err(e.message()),
        Err(Stop::NeedsJoin(why)) => {
            eprintln!("your notes must be joined first: {why}");
            if !(a.auto_join
                || nox_wallet_cli::prompt::confirm(
                    "join two of your notes now (one more transaction, paid the same way)?",
                )?)
            {
                return Err("not sent: run `nox wallet join` (same options) first, or pass --auto-join".into());
            }
            // Each join makes one note of two; repeat until a pair covers the payment.
            for _ in 0..MAX_AUTO_JOINS {
                join_then_wait(&a.private, a.join_wait_secs).await?;
                match make(&a.private, &plan).await {
                    Err(Stop::NeedsJoin(why)) => eprintln!("still too many notes: {why}"),
                    other => return other.map_err(Stop::message),
                }
            }
            Err(format!("not sent: still no pair of notes covers it after {MAX_AUTO_JOINS} joins"))
        }
    }
}

/// The joins `send --auto-join` makes before giving up.
const MAX_AUTO_JOINS: usize = 4;

/// Joins two notes and waits until nothing of the asset is pending insertion (the joined note
/// is spendable).
async fn join_then_wait(p: &PrivateArgs, wait_secs: u64) -> CmdResult {
    make(p, &Plan::join(p.asset.unwrap_or(Address::ZERO))).await.map_err(Stop::message)?;
    let asset = asset_word(p.asset.unwrap_or(Address::ZERO));
    let deadline = Instant::now() + Duration::from_secs(wait_secs);
    let at = resolve(&p.chain.pool, None).await?;
    let provider = read_provider(&at.rpc)?;
    loop {
        let (_, view) = synced_at(&p.chain, &at, &provider).await?;
        if view.balance(&asset).pending == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the joined note was not inserted within {wait_secs} s: run the send again once `nox wallet balance` \
                 shows it spendable"
            ));
        }
        eprintln!("waiting for the joined note's insertion…");
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

async fn split_cmd(a: &SplitArgs) -> CmdResult {
    let unit = unit_for(&a.private).await?;
    let seed = files::open_seed(&a.private.chain.wallet)?;
    let own = seed.address().map_err(CliError::from)?;
    let amounts =
        a.amounts.iter().map(|t| unit.parse(t).map_err(|e| e.to_string())).collect::<CmdResult<Vec<u128>>>()?;
    let shown: Vec<String> = amounts.iter().map(|v| unit.show(*v)).collect();
    let plan = Plan {
        asset: a.private.asset.unwrap_or(Address::ZERO),
        outputs: amounts.iter().map(|v| (own, *v)).collect(),
        join: false,
        public_out: 0,
        recipient: Address::ZERO,
        what: format!("splitting into notes of {} (and the rest as change)", shown.join(" and ")),
    };
    make(&a.private, &plan).await.map_err(|e| match e {
        Stop::NeedsJoin(why) => format!("no note holds the split's amounts: {why}"),
        e => e.message(),
    })
}

async fn withdraw_cmd(a: &WithdrawArgs) -> CmdResult {
    let unit = unit_for(&a.private).await?;
    let amount = unit.parse(&a.amount).map_err(|e| e.to_string())?;
    let asset = a.private.asset.unwrap_or(Address::ZERO);
    privacy_advice(&a.private.chain, asset, amount, &unit, WithdrawCommand::Wallet).await?;
    let plan = Plan {
        asset: a.private.asset.unwrap_or(Address::ZERO),
        outputs: Vec::new(),
        join: false,
        public_out: amount,
        recipient: a.to,
        what: format!("withdrawing {} to {}", unit.show(amount), a.to),
    };
    Stop::finish(make(&a.private, &plan).await)
}

/// Prints the privacy advice before a withdrawal of `amount` (`nox_wallet_cli::advice`), before
/// any fee confirmation; `nox wallet withdraw` and `nox tx withdraw` both print it, each naming
/// its own command line in the split.
pub async fn privacy_advice(
    chain: &ChainArgs,
    asset: Address,
    amount: u128,
    unit: &Unit,
    command: WithdrawCommand,
) -> CmdResult {
    let (_, _, provider, view) = synced(chain).await?;
    let (_, now) = chain_context(&provider).await?;
    advice::privacy_lines(&view, now, asset, amount, unit, command).iter().for_each(|l| eprintln!("{l}"));
    Ok(())
}

/// Makes `plan` as one private transaction, paid through the mixnet or (`--direct`) submitted
/// from the key file's account.
pub async fn private(p: &PrivateArgs, plan: &Plan) -> Result<(Landed, Unit), Stop> {
    if !p.submit.direct {
        return crate::tx_cmd::paid(p, plan).await;
    }
    let key_file = p.submit.key_file.as_ref().ok_or("--direct needs --key-file")?;
    let (seed, at, provider, view) = synced(&p.chain).await?;
    let s = &p.submit;
    let order =
        flows::DirectOrder { key_file, yes: s.fee.yes, valid_for: s.valid_for, timeout_secs: s.mix.timeout_secs };
    flows::direct(&p.chain.wallet, &order, plan, &seed, &at, &provider, &view).await
}

/// Runs `plan`, reports it; `NeedsJoin` is passed up.
async fn make(p: &PrivateArgs, plan: &Plan) -> Result<(), Stop> {
    let started = Instant::now();
    eprintln!("{}", plan.what);
    match private(p, plan).await {
        Ok((landed, unit)) => report(&landed, &unit, started),
        Err(Stop::Already { tx_hash, block }) => already(tx_hash, block),
        Err(e) => return Err(e),
    }
    Ok(())
}
