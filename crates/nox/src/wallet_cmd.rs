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
    io::{BufRead, IsTerminal, Write},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, B256, Bytes},
    providers::{DynProvider, Provider, ProviderBuilder},
    rpc::types::TransactionRequest,
};
use ark_bn254::Fr;
use clap::{Args, Subcommand};
use nox_chain::pool::ShieldedPool;
use nox_wallet::{
    PaymentAddress, PoolView, Seed, WalletError,
    file::{self, KdfParams},
};
use nox_zk::field;
use rand_core_06::{RngCore, SeedableRng};
use zeroize::Zeroizing;

use crate::tx_cmd::{FeeArgs, MixArgs};

pub use nox_wallet::journal;
use nox_wallet_io::{WalletDir, insert_race};

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

/// Where the wallet lives.
#[derive(Args, Clone)]
pub struct WalletArgs {
    /// Wallet directory (`wallet.key`, `wallet.state`, cached proving keys).
    #[arg(long, default_value = "nox-wallet")]
    pub wallet: PathBuf,
    /// File holding the passphrase (first line). Without it, `NOX_WALLET_PASSPHRASE`.
    #[arg(long)]
    pub passphrase_file: Option<PathBuf>,
    /// The transfer proving key to prove with: the `proving.key` of a ceremony (`nox zk setup
    /// finalize --circuit transfer`), checked before use. Without it, the testnet key (public
    /// randomness), derived once and cached in the wallet directory.
    #[arg(long, value_name = "FILE")]
    pub proving_key: Option<PathBuf>,
}

/// `nox wallet restore`
#[derive(Args, Clone)]
pub struct RestoreArgs {
    /// The new wallet's directory and passphrase (the copy's passphrase).
    #[command(flatten)]
    pub wallet: WalletArgs,
    /// A copy of the backed-up `wallet.key`.
    #[arg(long)]
    pub from: PathBuf,
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

pub(crate) type CmdResult<T = ()> = Result<T, String>;

/// Runs a wallet command.
pub fn run(command: WalletCommand) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    match command {
        WalletCommand::New(w) => new(&w),
        WalletCommand::Restore(r) => restore(&r),
        WalletCommand::Address(w) => {
            let seed = open_seed(&w)?;
            println!("{}", seed.address().map_err(|e| e.to_string())?);
            Ok(())
        }
        WalletCommand::ViewingKey(w) => {
            let seed = open_seed(&w)?;
            eprintln!(
                "the viewing key below shows every note of this wallet, sent and received, to whoever holds it; it \
                 cannot spend"
            );
            let vk = seed.viewing_key().map_err(|e| e.to_string())?;
            println!("{}", vk.export().map_err(|e| e.to_string())?.as_str());
            Ok(())
        }
        WalletCommand::Sync(c) => runtime.block_on(async {
            let (_, at, _, view) = synced(&c).await?;
            println!("pool {} synced to block {}", at.pool, view.last_block);
            Ok(())
        }),
        WalletCommand::Balance(c) => runtime.block_on(balance(&c)),
        WalletCommand::Deposit(a) => runtime.block_on(deposit(&a)),
        WalletCommand::Send(a) => runtime.block_on(send_cmd(&a)),
        WalletCommand::Split(a) => runtime.block_on(split_cmd(&a)),
        WalletCommand::Join(a) => runtime.block_on(join_cmd(&a)),
        WalletCommand::Withdraw(a) => runtime.block_on(withdraw_cmd(&a)),
        WalletCommand::Pay(a) => runtime.block_on(pay(&a)),
        WalletCommand::Insert(a) => runtime.block_on(insert(&a)),
    }
}

// ---------------------------------------------------------------------------------------------
// Addresses and amounts

/// An Ethereum address as a command-line value (`nox_wallet::units::parse_eth_address`).
pub fn parse_eth_address(text: &str) -> Result<Address, String> {
    nox_wallet::units::parse_eth_address(text).map_err(|e| e.to_string())
}

/// A shielded address as a command-line value (an Ethereum address says it is one).
pub fn parse_shielded(text: &str) -> CmdResult<PaymentAddress> {
    text.trim().parse().map_err(|e: nox_wallet::error::AddressError| format!("--to {}: {e}", text.trim()))
}

pub use nox_wallet::units::{Unit, format_units};

pub(crate) use nox_wallet_io::chain::unit_of;

pub(crate) fn fr_address(a: &Fr) -> Address {
    Address::from_slice(&field::to_be32(a)[12..])
}

// ---------------------------------------------------------------------------------------------
// Files

fn os_rng() -> rand_chacha_03::ChaCha20Rng {
    rand_chacha_03::ChaCha20Rng::from_entropy()
}

fn passphrase(w: &WalletArgs) -> CmdResult<Zeroizing<String>> {
    let text = match &w.passphrase_file {
        Some(f) => Zeroizing::new(std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?),
        None => Zeroizing::new(
            std::env::var("NOX_WALLET_PASSPHRASE")
                .map_err(|_| "no passphrase: give --passphrase-file or set NOX_WALLET_PASSPHRASE".to_owned())?,
        ),
    };
    let line = Zeroizing::new(text.lines().next().unwrap_or_default().to_owned());
    if line.is_empty() {
        return Err("the passphrase is empty".into());
    }
    Ok(line)
}

/// Writes `bytes` to `path` atomically, mode 0600 (temporary file, fsync, rename, fsync dir).
fn write_private(path: &Path, bytes: &[u8]) -> CmdResult {
    nox_wallet_io::dir::write_private(path, bytes).map_err(|e| e.to_string())
}

fn wallet_dir(w: &WalletArgs) -> WalletDir {
    WalletDir::new(&w.wallet)
}

fn new(w: &WalletArgs) -> CmdResult {
    let path = wallet_dir(w).key_path();
    if path.exists() {
        return Err(format!("{} exists: refusing to overwrite a wallet", path.display()));
    }
    let pass = passphrase(w)?;
    wallet_dir(w).create().map_err(|e| e.to_string())?;
    let mut rng = os_rng();
    let seed = Seed::random(&mut rng);
    let sealed = file::seal_seed(&seed, pass.as_bytes(), KdfParams::default(), &mut rng).map_err(|e| e.to_string())?;
    write_private(&path, &sealed)?;
    println!("wrote {}", path.display());
    println!("your shielded address: {}", seed.address().map_err(|e| e.to_string())?);
    println!(
        "BACKUP: {} holds the wallet's seed, sealed under your passphrase; it is the ONLY backup of your notes. Keep \
         a copy of it elsewhere and remember the passphrase: `nox wallet restore --from <copy> --wallet <dir>` \
         restores the wallet, and `nox wallet sync` then finds every note on the chain again.",
        path.display()
    );
    Ok(())
}

fn restore(r: &RestoreArgs) -> CmdResult {
    let path = wallet_dir(&r.wallet).key_path();
    if path.exists() {
        return Err(format!("{} exists: refusing to overwrite a wallet", path.display()));
    }
    let bytes = std::fs::read(&r.from).map_err(|e| format!("{}: {e}", r.from.display()))?;
    let seed =
        file::open_seed(&bytes, passphrase(&r.wallet)?.as_bytes()).map_err(|e| format!("{}: {e}", r.from.display()))?;
    wallet_dir(&r.wallet).create().map_err(|e| e.to_string())?;
    write_private(&path, &bytes)?;
    println!("restored {} ({})", path.display(), seed.address().map_err(|e| e.to_string())?);
    println!("run `nox wallet sync --wallet {}` to find its notes on the chain", r.wallet.wallet.display());
    Ok(())
}

fn open_seed(w: &WalletArgs) -> CmdResult<Seed> {
    let dir = wallet_dir(w);
    let bytes = dir.read_key().map_err(|e| e.to_string())?;
    dir.open_seed(&bytes, passphrase(w)?.as_bytes()).map_err(|e| e.to_string())
}

fn read_key_file(path: &Path) -> CmdResult<nox_chain::PrivateKeySigner> {
    let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?);
    nox_chain::deploy::signer(&text).map_err(|e| format!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// The journal of transactions handed over (journal.rs has the rule)

/// Records that `entry` is being handed over (before it leaves, or right after a broadcast).
pub(crate) fn journal_record(w: &WalletArgs, entry: journal::Entry) -> CmdResult {
    wallet_dir(w).journal_record(entry).map_err(|e| e.to_string())
}

/// Forgets `intent`'s entry: its outcome is known.
pub(crate) fn journal_resolve(w: &WalletArgs, intent: &str) -> CmdResult {
    wallet_dir(w).journal_resolve(intent).map_err(|e| e.to_string())
}

/// Before a command hands a transaction over: if an earlier run of the same command (`intent`)
/// lost its answer, asks the chain about that transaction (`nox_wallet_io::send::recall`).
/// `Some((hash, block))`: it landed, and the caller reports it and sends nothing; `None`:
/// nothing outstanding (or it can no longer land), send. Still pending: an [`UNCONFIRMED`]
/// error, nothing sent.
pub(crate) async fn journal_recall(
    w: &WalletArgs,
    provider: &DynProvider,
    pool: Address,
    intent: &str,
) -> CmdResult<Option<(B256, u64)>> {
    use nox_wallet_io::send::{Recall, recall};
    match recall(&wallet_dir(w), provider, pool, intent).await.map_err(|e| e.to_string())? {
        Recall::Landed { tx_hash, block } => Ok(Some((tx_hash, block))),
        Recall::Nothing => Ok(None),
        Recall::SendAgain(why) => {
            eprintln!("{why}");
            Ok(None)
        }
    }
}

/// The report of a re-run that found its transaction already landed.
pub(crate) fn already(tx_hash: B256, block: u64) {
    println!("already submitted as {tx_hash}; mined in block {block}; nothing was sent again");
}

// ---------------------------------------------------------------------------------------------
// Chain

/// Where the pool is.
pub(crate) struct PoolAt {
    pub(crate) rpc: String,
    pub(crate) pool: Address,
    pub(crate) executor: Option<Address>,
    pub(crate) from_block: u64,
}

/// The seconds an in-process mixnet client waits for each chain read's answer.
const MIXNET_READ_TIMEOUT_S: u64 = 180;
/// The cover rate of an in-process mixnet client started for chain reads (packets per second),
/// `nox tx`'s default.
const MIXNET_READ_COVER_RATE: f64 = 2.0;

/// The JSON-RPC URL the command reads (and sends) through: `--rpc` (a mixnet daemon), an
/// explicit `--direct-rpc` (with a warning on stderr), or a local endpoint served by a mixnet
/// client — `mixnet` if the caller already runs one (`nox tx`), else one started here from the
/// `--testnet`'s topology. Never the chain.json URL.
pub(crate) async fn read_endpoint(p: &PoolArgs, mixnet: Option<&nox_client::ClientHandle>) -> CmdResult<String> {
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

pub(crate) async fn resolve(p: &PoolArgs, mixnet: Option<&nox_client::ClientHandle>) -> CmdResult<PoolAt> {
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

pub(crate) fn read_provider(rpc: &str) -> CmdResult<DynProvider> {
    let url = rpc.parse().map_err(|e| format!("RPC URL {rpc:?}: {e}"))?;
    Ok(ProviderBuilder::new().connect_http(url).erased())
}

pub(crate) fn asset_word(a: Address) -> Fr {
    field::address(&a.0.0)
}

/// Applies the pool's events since the view's last block (`nox_wallet_io::chain::sync`), with
/// progress on stderr: blocks and events scanned, this wallet's notes found, and a warning for
/// every ciphertext addressed to it that does not open or does not match its commitment
/// (tampered or re-targeted: reported, never silently dropped).
async fn sync(provider: &DynProvider, at: &PoolAt, seed: &Seed, view: &mut PoolView) -> CmdResult<u64> {
    use nox_wallet_io::chain::{PoolSpan, SyncProgress};
    let started = Instant::now();
    let span = PoolSpan { pool: at.pool, from_block: at.from_block };
    let mut progress = |p: SyncProgress<'_>| match p {
        SyncProgress::Page { first, to, head, events, new_notes } => {
            eprintln!(
                "sync: blocks {first}..{to} of {head} scanned, {events} pool events, {new_notes} new note(s) of this wallet"
            )
        }
        SyncProgress::Corrupt(c) => eprintln!(
            "WARNING: a note addressed to this wallet at queue index {} (commitment 0x{}) does not open or does not \
             match its commitment ({:?}{}): it was tampered with or re-targeted and cannot be spent; tell the sender",
            c.queue_index,
            hex::encode(field::to_be32(&c.commitment)),
            c.reason,
            c.claimed_value.map(|v| format!(", claims {v} base units")).unwrap_or_default()
        ),
        SyncProgress::Done { found, corrupt } => eprintln!(
            "sync: done in {:.2} s ({found} note(s) found, {corrupt} corrupt)",
            started.elapsed().as_secs_f64()
        ),
    };
    nox_wallet_io::chain::sync(provider, span, seed, view, &mut progress)
        .await
        .map_err(|e| if e.is_read() { crate::daemon_hint::explain(&at.rpc, &e.to_string()) } else { e.to_string() })
}

pub(crate) async fn synced(c: &ChainArgs) -> CmdResult<(Seed, PoolAt, DynProvider, PoolView)> {
    let at = resolve(&c.pool, None).await?;
    let provider = read_provider(&at.rpc)?;
    let (seed, view) = synced_at(c, &at, &provider).await?;
    Ok((seed, at, provider, view))
}

/// Opens the wallet and syncs its view through `provider` (the pool `at`), saving the state.
pub(crate) async fn synced_at(c: &ChainArgs, at: &PoolAt, provider: &DynProvider) -> CmdResult<(Seed, PoolView)> {
    let seed = open_seed(&c.wallet)?;
    let dir = wallet_dir(&c.wallet);
    let mut view = dir.load_view(&seed, at.from_block).map_err(|e| e.to_string())?;
    sync(provider, at, &seed, &mut view).await?;
    dir.save_view(&seed, &view, &mut os_rng()).map_err(|e| e.to_string())?;
    Ok((seed, view))
}

async fn balance(c: &ChainArgs) -> CmdResult {
    let (_, at, provider, view) = synced(c).await?;
    println!("pool {} synced to block {}", at.pool, view.last_block);
    let assets = view.assets();
    if assets.is_empty() {
        println!("no notes");
    }
    for a in assets {
        let unit = unit_of(&provider, fr_address(&a)).await;
        let b = view.balance(&a);
        println!(
            "{}: spendable {} in {} note(s) (largest {}, largest two {}), pending insertion {}",
            unit.symbol,
            unit.show(b.spendable),
            b.notes,
            unit.show(b.largest),
            unit.show(b.largest_pair),
            unit.show(b.pending),
        );
    }
    let queued = view.queued().count();
    if queued > 0 {
        println!("{queued} commitment(s) queued for the next batch insertion (a relayer inserts them)");
    }
    Ok(())
}

async fn send_tx(
    provider: &DynProvider,
    tx: TransactionRequest,
    what: &str,
) -> CmdResult<alloy::rpc::types::TransactionReceipt> {
    nox_wallet_io::send::send_tx(provider, tx, what).await.map_err(|e| e.to_string())
}

async fn deposit(a: &DepositArgs) -> CmdResult {
    let started = Instant::now();
    let seed = open_seed(&a.chain.wallet)?;
    let at = resolve(&a.chain.pool, None).await?;
    let to = match &a.to {
        Some(s) => parse_shielded(s)?,
        None => seed.address().map_err(|e| e.to_string())?,
    };
    let asset = a.asset.unwrap_or(Address::ZERO);
    let reader = read_provider(&at.rpc)?;
    let unit = unit_of(&reader, asset).await;
    let amount = unit.parse(&a.amount).map_err(|e| e.to_string())?;
    let note =
        nox_wallet_io::deposit::DepositNote::new(&to, asset, amount, &mut os_rng()).map_err(|e| e.to_string())?;
    let signer = read_key_file(&a.key_file)?;
    // A re-run after a lost receipt finds the earlier deposit instead of depositing again.
    let intent = format!("deposit {} of {asset} to {to} from {} into {}", unit.show(amount), signer.address(), at.pool);
    if let Some((tx_hash, block)) = journal_recall(&a.chain.wallet, &reader, at.pool, &intent).await? {
        already(tx_hash, block);
        return Ok(());
    }
    let provider = nox_chain::deploy::wallet_provider(&at.rpc, &signer).map_err(|e| e.to_string())?;
    let timeout = Duration::from_secs(a.receipt_timeout_secs);
    let dir = wallet_dir(&a.chain.wallet);
    let broadcast = |hash| eprintln!("deposit: broadcast as {hash}; waiting for its receipt");
    let d = nox_wallet_io::deposit::deposit(&reader, &provider, at.pool, &note, &dir, intent, timeout, broadcast)
        .await
        .map_err(|e| e.to_string())?;
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

/// Shows elapsed time while a long computation runs (redrawn in place on a terminal; a start
/// and an end line otherwise).
pub(crate) struct Ticker {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    started: Instant,
    label: String,
}

impl Ticker {
    pub(crate) fn start(label: &str) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let terminal = std::io::stderr().is_terminal();
        if !terminal {
            eprintln!("{label}…");
        }
        let thread = terminal.then(|| {
            let done = done.clone();
            let label = label.to_owned();
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    eprint!("\r{label}… {:.1} s", started.elapsed().as_secs_f64());
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        });
        Ticker { done, thread, started, label: label.to_owned() }
    }

    pub(crate) fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            eprint!("\r");
        }
        eprintln!("{}: done in {:.2} s", self.label, self.started.elapsed().as_secs_f64());
    }
}

type ProvingKey = nox_wallet_io::keys::ProvingKey;

/// A circuit's testnet proving key, cached in the wallet directory after the first use
/// (`nox_wallet_io::keys`): a corrupt, truncated or foreign cache is reported and derived
/// again, never used.
fn cached_key(w: &WalletArgs, circuit: &nox_wallet_io::keys::CachedKey) -> CmdResult<ProvingKey> {
    use nox_wallet_io::keys;
    match keys::load_cached(&w.wallet, circuit) {
        Ok(Some(pk)) => return Ok(pk),
        Ok(None) => {}
        Err(why) => eprintln!(
            "the cached {} proving key {} is not used ({why}): deriving it again",
            circuit.what,
            keys::cache_path(&w.wallet, circuit).display()
        ),
    }
    let t = Ticker::start(&format!("deriving the testnet {} proving key (first use; cached afterwards)", circuit.what));
    let pk = keys::derive(&w.wallet, circuit).map_err(|e| e.to_string())?;
    t.finish();
    Ok(pk)
}

fn transfer_keys(w: &WalletArgs) -> CmdResult<ProvingKey> {
    if let Some(file) = &w.proving_key {
        return ceremony_transfer_key(file);
    }
    cached_key(w, &nox_wallet_io::keys::TRANSFER)
}

/// A transfer proving key from a ceremony, checked before use (`nox_wallet_io::keys`). Each
/// proof is then verified against the key's own verifying key before it leaves.
fn ceremony_transfer_key(file: &Path) -> CmdResult<ProvingKey> {
    let k = nox_wallet_io::keys::ceremony_transfer_key(file).map_err(|e| e.to_string())?;
    eprintln!("proving with the key {} ({} bytes, keccak {})", file.display(), k.len, k.keccak);
    Ok(k.key)
}

fn insert_keys(w: &WalletArgs) -> CmdResult<ProvingKey> {
    cached_key(w, &nox_wallet_io::keys::INSERT)
}

/// Proves a prepared transaction (checked locally before it is sent anywhere).
pub(crate) fn prove_transaction(w: &WalletArgs, prepared: &nox_wallet::PreparedTransaction) -> CmdResult<[u8; 256]> {
    let pk = transfer_keys(w)?;
    let t = Ticker::start("proving the transaction (2 inputs, 2 outputs)");
    let proof = nox_pay::prove(&pk, prepared, &mut os_rng()).map_err(|e| e.to_string())?;
    t.finish();
    Ok(proof)
}

/// The chain's id and its latest block's time (`nox_wallet_io::chain`).
pub(crate) async fn chain_context(provider: &DynProvider) -> CmdResult<(u64, u64)> {
    nox_wallet_io::chain::chain_context(provider).await.map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------------
// Private transactions: send, split, join, withdraw

/// What a private transaction makes, before the fee is known.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The asset (and the fee's).
    pub(crate) asset: Address,
    /// Shielded outputs besides the change.
    pub(crate) outputs: Vec<(PaymentAddress, u128)>,
    /// A join: the wallet's two smallest spendable notes become one, less the fee.
    pub(crate) join: bool,
    /// Value leaving the pool to `recipient`.
    pub(crate) public_out: u128,
    /// Its receiver (`Address::ZERO` iff `public_out` is 0).
    pub(crate) recipient: Address,
    /// What it does, for the confirmation and the report.
    pub(crate) what: String,
}

impl Plan {
    /// What a re-run of the same command has in common with this one (the journal's key).
    pub(crate) fn intent(&self) -> String {
        let outputs: Vec<String> = self.outputs.iter().map(|(to, v)| format!("{v} to {to}")).collect();
        format!(
            "private transaction: asset {}, outputs [{}], join {}, {} out to {}",
            self.asset,
            outputs.join(", "),
            self.join,
            self.public_out,
            self.recipient
        )
    }
}

/// Why a private transaction did not land.
pub(crate) enum Stop {
    /// The balance covers it but no two notes do: join first.
    NeedsJoin(String),
    /// Anything else (nothing was sent, or the message says what was).
    Failed(String),
    /// An earlier run of the same command lost its answer, and its transaction has landed
    /// since (the journal): nothing was sent again.
    Already {
        /// The earlier transaction.
        tx_hash: B256,
        /// Its block.
        block: u64,
    },
}

impl From<String> for Stop {
    fn from(e: String) -> Self {
        Stop::Failed(e)
    }
}

impl From<&str> for Stop {
    fn from(e: &str) -> Self {
        Stop::Failed(e.to_owned())
    }
}

impl Stop {
    /// A wallet error, with `NeedsJoin` kept apart.
    pub(crate) fn wallet(e: WalletError) -> Self {
        match e {
            e @ WalletError::NeedsJoin { .. } => Stop::NeedsJoin(e.to_string()),
            e => Stop::Failed(e.to_string()),
        }
    }

    pub(crate) fn message(self) -> String {
        match self {
            Stop::NeedsJoin(m) | Stop::Failed(m) => m,
            Stop::Already { tx_hash, block } => {
                format!("already submitted as {tx_hash}; mined in block {block}; nothing was sent again")
            }
        }
    }

    /// The command's result: `Already` is a success (reported), the rest an error.
    pub(crate) fn finish(r: Result<(), Stop>) -> CmdResult {
        match r {
            Ok(()) => Ok(()),
            Err(Stop::Already { tx_hash, block }) => {
                already(tx_hash, block);
                Ok(())
            }
            Err(Stop::NeedsJoin(why)) => Err(format!("your notes must be joined first (`nox wallet join`): {why}")),
            Err(Stop::Failed(e)) => Err(e),
        }
    }
}

/// What a landed private transaction did.
pub(crate) struct Landed {
    /// Its transaction hash.
    pub(crate) tx_hash: B256,
    /// Its block.
    pub(crate) block: u64,
    /// Gas used by the whole transaction (a bundle's: payment and action).
    pub(crate) gas_used: u64,
    /// The relayer's fee (0 direct).
    pub(crate) fee: u128,
    /// The two notes it made.
    pub(crate) outputs: [nox_wallet::PreparedOutput; 2],
    /// The values of the notes it spent.
    pub(crate) spent: Vec<u128>,
}

/// Reports a landed transaction: every note it spent and made, the fee, the gas and the time.
pub(crate) fn report(landed: &Landed, unit: &Unit, started: Instant) {
    println!(
        "included in block {} (tx {}); gas {}; fee {}; {:.1} s",
        landed.block,
        landed.tx_hash,
        landed.gas_used,
        unit.show(landed.fee),
        started.elapsed().as_secs_f64()
    );
    let spent: Vec<String> = landed.spent.iter().map(|v| unit.show(*v)).collect();
    println!("spent note(s): {}", if spent.is_empty() { "none".to_owned() } else { spent.join(", ") });
    for o in &landed.outputs {
        use nox_wallet::OutputRole;
        match o.role {
            OutputRole::Requested => println!("new note: {} to {}", unit.show(o.value), o.to),
            OutputRole::Change => println!("change note: {} to this wallet", unit.show(o.value)),
            OutputRole::Padding => println!("padding note: 0 to this wallet (every transaction makes two notes)"),
        }
    }
    println!("new notes are spendable once a relayer inserts their batch");
}

/// Makes `plan` as one private transaction, paid through the mixnet or (`--direct`) submitted
/// from the key file's account.
pub(crate) async fn private(p: &PrivateArgs, plan: &Plan) -> Result<(Landed, Unit), Stop> {
    if p.submit.direct { direct(p, plan).await } else { crate::tx_cmd::paid(p, plan).await }
}

async fn direct(p: &PrivateArgs, plan: &Plan) -> Result<(Landed, Unit), Stop> {
    let key_file = p.submit.key_file.as_ref().ok_or("--direct needs --key-file")?;
    let (seed, at, provider, view) = synced(&p.chain).await?;
    let intent = format!("{} in {}", plan.intent(), at.pool);
    if let Some((tx_hash, block)) = journal_recall(&p.chain.wallet, &provider, at.pool, &intent).await? {
        return Err(Stop::Already { tx_hash, block });
    }
    let unit = unit_of(&provider, plan.asset).await;
    let signer = read_key_file(key_file)?;
    let question =
        format!("{} directly from {} (it pays the gas and is seen sending it)?", plan.what, signer.address());
    if !confirmed_on_terminal(p.submit.fee.yes, &question)? {
        return Err(NOT_CONFIRMED.into());
    }
    let (chain_id, now) = chain_context(&provider).await?;
    let deadline = now + p.submit.valid_for;
    let direct = nox_wallet_io::direct::DirectPlan {
        asset: plan.asset,
        outputs: plan.outputs.clone(),
        join: plan.join,
        public_out: plan.public_out,
        recipient: plan.recipient,
    };
    let prepared = direct.prepare(&view, &seed, chain_id, at.pool, deadline, &mut os_rng()).map_err(Stop::wallet)?;
    let proof = prove_transaction(&p.chain.wallet, &prepared)?;
    let t = nox_wallet_io::direct::transaction(&prepared, &proof).map_err(|e| e.to_string())?;
    eprintln!(
        "submitting directly from {} (--direct): that account pays the gas and is seen sending this transaction",
        signer.address()
    );
    let sender = nox_chain::deploy::wallet_provider(&at.rpc, &signer).map_err(|e| e.to_string())?;
    let timeout = Duration::from_secs(p.submit.mix.timeout_secs);
    let dir = wallet_dir(&p.chain.wallet);
    let broadcast = |hash| eprintln!("transact: broadcast as {hash}; waiting for its receipt");
    let receipt = nox_wallet_io::direct::submit(
        &provider, &sender, at.pool, &prepared, t, deadline, &dir, intent, timeout, broadcast,
    )
    .await
    .map_err(|e| e.to_string())?;
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

/// The error of a command the user did not confirm on the terminal.
pub(crate) const NOT_CONFIRMED: &str = "not confirmed; nothing was proved, spent or sent";

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

/// Asks `question` on an interactive terminal; `false` without one (nothing can answer).
fn confirm(question: &str) -> CmdResult<bool> {
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    ask(question)
}

/// Whether the command may go on: `--yes`, or no terminal on stdin (nothing is asked, so a
/// script never hangs on a question), or the user answers yes to `question` on the terminal.
/// The question names what is sent and where (an Ethereum address in its EIP-55 form, amounts
/// in the asset's unit), so a typo'd destination can still be refused (issue 35).
pub(crate) fn confirmed_on_terminal(yes: bool, question: &str) -> CmdResult<bool> {
    if yes || !std::io::stdin().is_terminal() {
        return Ok(true);
    }
    ask(question)
}

/// Prints `question [y/N] ` and reads one line from stdin: yes only for an explicit yes.
fn ask(question: &str) -> CmdResult<bool> {
    print!("{question} [y/N] ");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).map_err(|e| e.to_string())?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES"))
}

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
            if !(a.auto_join || confirm("join two of your notes now (one more transaction, paid the same way)?")?) {
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
    make(p, &join_plan(p)).await.map_err(Stop::message)?;
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

fn join_plan(p: &PrivateArgs) -> Plan {
    Plan {
        asset: p.asset.unwrap_or(Address::ZERO),
        outputs: Vec::new(),
        join: true,
        public_out: 0,
        recipient: Address::ZERO,
        what: "joining two of this wallet's notes into one".into(),
    }
}

async fn join_cmd(p: &PrivateArgs) -> CmdResult {
    make(p, &join_plan(p)).await.map_err(Stop::message)
}

async fn split_cmd(a: &SplitArgs) -> CmdResult {
    let unit = unit_for(&a.private).await?;
    let seed = open_seed(&a.private.chain.wallet)?;
    let own = seed.address().map_err(|e| e.to_string())?;
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

/// Prints the privacy advice before a withdrawal of `amount` (docs/design/pool-anonymity.md §5):
/// what links it to this wallet's deposits (a matching amount, a withdrawal soon after), from the
/// pool's deposits and their block times recorded during the sync. It comes before any fee
/// confirmation; the user decides (the advice never stops the command). `nox wallet withdraw`
/// and `nox tx withdraw` both print it, each naming its own command line in the split.
pub(crate) async fn privacy_advice(
    chain: &ChainArgs,
    asset: Address,
    amount: u128,
    unit: &Unit,
    command: WithdrawCommand,
) -> CmdResult {
    let (_, _, provider, view) = synced(chain).await?;
    let (_, now) = chain_context(&provider).await?;
    let asset = asset_word(asset);
    let (own, pool) = nox_wallet::privacy::deposit_history(&view, &asset);
    // The fee of a paid withdrawal is not known yet: within the advice's tolerance anyway.
    let plan = nox_wallet::privacy::WithdrawalPlan { time_s: now, public_out: amount, fee: 0 };
    let policy = nox_wallet::privacy::AdvicePolicy::default();
    let warnings = nox_wallet::privacy::advise_withdrawal(&plan, &own, &pool, &policy);
    for w in &warnings {
        eprintln!("PRIVACY: {}", w.describe(|v| unit.show(v)));
        if let nox_wallet::privacy::PrivacyWarning::MatchesOwnDeposit { suggested, .. } = w {
            eprintln!("{}", command.split_advice(suggested, unit));
        }
    }
    if view.deposits_from_block() > 0 && !warnings.is_empty() {
        eprintln!(
            "PRIVACY: (this wallet's deposit history starts at block {}: delete wallet.state and resync for all of it)",
            view.deposits_from_block()
        );
    }
    Ok(())
}

/// The command a withdrawal's privacy advice is printed for: its split names that command with
/// amounts as that command reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WithdrawCommand {
    /// `nox wallet withdraw --amount` (the asset's unit, decimals).
    Wallet,
    /// `nox tx withdraw --amount` (wei).
    Tx,
}

impl WithdrawCommand {
    /// The advice's line with the 1-2-5 split `suggested`, one command each.
    pub(crate) fn split_advice(self, suggested: &[u128], unit: &Unit) -> String {
        let (command, steps): (&str, Vec<String>) = match self {
            WithdrawCommand::Wallet => (
                "nox wallet withdraw",
                suggested.iter().map(|v| format!("--amount {}", format_units(*v, unit.decimals))).collect(),
            ),
            WithdrawCommand::Tx => ("nox tx withdraw", suggested.iter().map(|v| format!("--amount {v}")).collect()),
        };
        format!("PRIVACY: the split, one `{command}` each, best at different times: {}", steps.join(", then "))
    }
}

// ---------------------------------------------------------------------------------------------
// A bundle for a relayer, and insertion

pub use nox_wallet_io::bundle::BundleFile;

async fn pay(a: &PayArgs) -> CmdResult {
    let (seed, at, provider, view) = synced(&a.chain).await?;
    let executor = a.executor.or(at.executor).ok_or("give --executor (or --testnet)")?;
    let (chain_id, now) = chain_context(&provider).await?;
    let asset = a.asset.unwrap_or(Address::ZERO);
    let unit = unit_of(&provider, asset).await;
    let deadline = now + a.valid_for;
    let action = match a.target {
        Some(target) => nox_pay::Action { target, data: a.data.clone(), gas: a.action_gas },
        None => nox_pay::Action::none(),
    };
    let payee = nox_pay::Payee { chain_id, executor, relayer: a.relayer, pool: at.pool };
    let payment = nox_pay::Payment {
        payee,
        asset,
        fee: a.fee,
        action,
        outputs: Vec::new(),
        join: false,
        public_out: 0,
        recipient: Address::ZERO,
        deadline,
        avoid: &[],
    };
    let prepared = payment.prepare(&view, &seed, &mut os_rng()).map_err(|e| e.to_string())?;
    let proof = prove_transaction(&a.chain.wallet, &prepared)?;
    let paid = payment.bundle(&prepared, &proof);
    let bundle = BundleFile::of(&payment, &paid);
    let json = serde_json::to_vec_pretty(&bundle).map_err(|e| e.to_string())?;
    std::fs::write(&a.out, json).map_err(|e| format!("{}: {e}", a.out.display()))?;
    println!(
        "wrote {}: fee {} to relayer {} for {}; change note {} to this wallet once it lands",
        a.out.display(),
        unit.show(a.fee),
        a.relayer,
        if payment.action.is_none() {
            "no action (payment only)".to_owned()
        } else {
            format!("the action on {}", payment.action.target)
        },
        unit.show(paid.change)
    );
    Ok(())
}

async fn insert(a: &InsertArgs) -> CmdResult {
    let started = Instant::now();
    let (_seed, at, _, view) = synced(&a.chain).await?;
    let Some(batch) = nox_wallet_io::insert::next_batch(&view).map_err(|e| e.to_string())? else {
        println!("nothing queued");
        return Ok(());
    };
    let (first_queued, start) = (batch.first_queued, batch.start);
    let pk = insert_keys(&a.chain.wallet)?;
    let t = Ticker::start(&format!("proving the insertion of {} leaves at leaf {start}", batch.leaves.len()));
    let mut seed = Zeroizing::new([0u8; 32]);
    os_rng().fill_bytes(seed.as_mut());
    let call = batch.prove(&pk, *seed);
    // As before the move: a failed proof leaves the ticker unfinished; a proof that does not
    // verify is reported after it.
    if !matches!(call, Err(nox_wallet_io::insert::InsertError::Prove(_))) {
        t.finish();
    }
    let call = call.map_err(|e| e.to_string())?;
    let signer = read_key_file(&a.key_file)?;
    let sender = nox_chain::deploy::wallet_provider(&at.rpc, &signer).map_err(|e| e.to_string())?;
    let pool = ShieldedPool::new(at.pool, &sender);
    let tx = pool.insertBatch(call.proof, call.new_root, call.leaves).into_transaction_request();
    // An exit's inserter may have landed this batch while it was being proved here: re-read the
    // pool and simulate the exact call from our account; a doomed transaction is never sent.
    let already = |by| {
        println!("{}, {:.1} s", insert_race::already_inserted_line(by, first_queued), started.elapsed().as_secs_f64());
    };
    let gas = match insert_race::before_send(&sender, at.pool, signer.address(), &tx, first_queued, view.last_block)
        .await
        .map_err(|e| e.to_string())?
    {
        insert_race::BeforeSend::Send { gas } => gas,
        insert_race::BeforeSend::AlreadyInserted(by) => {
            already(by);
            return Ok(());
        }
    };
    let tx = tx.gas_limit(gas.saturating_mul(6) / 5 + 10_000);
    let receipt = match send_tx(&sender, tx, "insertBatch").await {
        Ok(receipt) => receipt,
        Err(e) => {
            // Mined after a rival insertion in the same block: nothing left to do but say so.
            if insert_race::queue_moved_past(&sender, at.pool, first_queued).await.map_err(|r| format!("{e}; {r}"))? {
                let by = insert_race::inserted_by(&sender, at.pool, first_queued, view.last_block)
                    .await
                    .map_err(|e| e.to_string())?;
                eprintln!("our insertBatch lost the race in the same block: {e}");
                already(by);
                return Ok(());
            }
            return Err(e);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_advice_names_each_withdraw_command_in_its_own_amounts() {
        let split = [100_000_000_000_000_000, 20_000_000_000_000_000];
        assert_eq!(
            WithdrawCommand::Wallet.split_advice(&split, &Unit::eth()),
            "PRIVACY: the split, one `nox wallet withdraw` each, best at different times: --amount 0.1, then --amount \
             0.02"
        );
        assert_eq!(
            WithdrawCommand::Tx.split_advice(&split, &Unit::eth()),
            "PRIVACY: the split, one `nox tx withdraw` each, best at different times: --amount 100000000000000000, \
             then --amount 20000000000000000"
        );
    }

    #[test]
    fn enough_in_all_but_not_in_two_notes_says_join_and_how() {
        let e = nox_wallet::WalletError::NeedsJoin { total: 670, largest_pair: 450, needed: 500 };
        let Err(message) = Stop::finish(Err(Stop::wallet(e))) else { panic!("a needed join is an error") };
        assert!(message.contains("your notes must be joined first (`nox wallet join`)"), "{message}");
        assert!(message.contains("670 spendable in all") && message.contains("500 is needed"), "{message}");
    }
}
