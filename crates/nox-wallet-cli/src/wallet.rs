//! `nox wallet`: the shielded-pool wallet on the command line (issues 12, 30, 35; formats in
//! docs/spec/notes.md), moved out of the binary's `wallet_cmd.rs` (issue 34): the commands'
//! arguments and what they run. The core is `nox-wallet` (pure); `nox-wallet-io` has the disk
//! (files sealed with the passphrase, written atomically with mode 0600) and the chain reads (the
//! pool's events read in pages, the journal's and the insertion race's checks).
//!
//! Every private operation — `send` to a shielded address, `split`, `join`, `withdraw` — is one
//! 2-in/2-out transaction with one proof (docs/design/zk-payment.md §9). By default it is paid
//! through the mixnet: an exit's relayer submits it and takes its fee from the same proof
//! (`nox_pay`, shared with `nox tx`: [`crate::tx::command`]); `--direct` submits it from an
//! Ethereum account of the wallet's (`--key-file`), which pays the gas and appears on chain.
//!
//! Every chain read (and a deposit's or direct transaction's raw transaction) goes through the
//! mixnet (issue 29 item 9, issue 35): through `--rpc`, a `nox client --rpc` endpoint, or,
//! without it, through an in-process mixnet client of the `--testnet`'s topology
//! ([`crate::pool`]). A direct read needs an explicit `--direct-rpc URL`, and the command then
//! warns that it reads directly. The URL in the testnet's chain.json is never used for reads.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, Bytes},
    providers::DynProvider,
};
use clap::{Args, Subcommand};
use nox_wallet::units::Unit;
use nox_wallet_io::chain::unit_of;

use crate::pool::{ChainArgs, Testnet, parse_eth_address, resolve, synced, synced_at};
use crate::tx::{FeeArgs, MixArgs};
use crate::{
    CliError, CommandError, Landed, Plan, RunError, Stop, advice,
    advice::WithdrawCommand,
    files::{self, RestoreArgs, WalletArgs, parse_shielded},
    flows,
    outcome::{already, report},
    session::{self, asset_word, read_provider},
};

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
    /// The mixnet and the exit.
    #[command(flatten)]
    pub mix: MixArgs,
    /// The relayer's fee.
    #[command(flatten)]
    pub fee: FeeArgs,
    /// Seconds the proof stays valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
}

/// What every private transaction command takes.
#[derive(Args, Clone)]
pub struct PrivateArgs {
    /// Wallet and pool.
    #[command(flatten)]
    pub chain: ChainArgs,
    /// How it is submitted and paid.
    #[command(flatten)]
    pub submit: SubmitArgs,
    /// ERC-20 token address; ETH without it.
    #[arg(long, value_parser = parse_eth_address)]
    pub asset: Option<Address>,
}

/// `nox wallet send`
#[derive(Args, Clone)]
pub struct SendArgs {
    /// Wallet, pool, submission and asset.
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
    /// Wallet, pool, submission and asset.
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
    /// Wallet, pool, submission and asset.
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
    /// Wallet and pool.
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
    /// Wallet and pool.
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
    /// Wallet and pool.
    #[command(flatten)]
    pub chain: ChainArgs,
    /// File with the hex private key of the account that submits (and pays gas for) the batch.
    #[arg(long)]
    pub key_file: PathBuf,
}

/// A command's result: its error's `Display` is the message the command prints.
pub type CmdResult<T = ()> = Result<T, RunError>;

/// Runs a wallet command; `testnet` is what `--testnet <dir>` means.
pub fn run(command: WalletCommand, testnet: Testnet) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CommandError::Runtime)?;
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
            let (_, at, _, view) = synced(&c, testnet).await?;
            println!("pool {} synced to block {}", at.pool, view.last_block);
            Ok(())
        }),
        WalletCommand::Balance(c) => runtime.block_on(async {
            let (_, at, provider, view) = synced(&c, testnet).await?;
            session::balance_lines(&provider, at.pool, &view).await.iter().for_each(|l| println!("{l}"));
            Ok(())
        }),
        WalletCommand::Deposit(a) => runtime.block_on(async {
            let seed = files::open_seed(&a.chain.wallet)?;
            let at = resolve(&a.chain.pool, None, testnet).await?;
            let (to, key_file) = (a.to.as_deref(), &a.key_file);
            let timeout = Duration::from_secs(a.receipt_timeout_secs);
            let order =
                flows::DepositOrder { amount: &a.amount, asset: a.asset, to, key_file, receipt_timeout: timeout };
            Ok(flows::deposit(&a.chain.wallet, &order, &seed, &at, started).await?)
        }),
        WalletCommand::Send(a) => runtime.block_on(send_cmd(&a, testnet)),
        WalletCommand::Split(a) => runtime.block_on(split_cmd(&a, testnet)),
        WalletCommand::Join(p) => {
            Ok(runtime.block_on(make(&p, &Plan::join(p.asset.unwrap_or(Address::ZERO)), testnet))?)
        }
        WalletCommand::Withdraw(a) => runtime.block_on(withdraw_cmd(&a, testnet)),
        WalletCommand::Pay(a) => runtime.block_on(async {
            let (seed, at, provider, view) = synced(&a.chain, testnet).await?;
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
            let (_, at, _, view) = synced(&a.chain, testnet).await?;
            Ok(flows::insert(&a.chain.wallet, &a.key_file, &at, &view, started).await?)
        }),
    }
}

/// The chain's id and its latest block's time (`nox_wallet_io::chain`).
async fn chain_context(provider: &DynProvider) -> CmdResult<(u64, u64)> {
    Ok(nox_wallet_io::chain::chain_context(provider).await.map_err(CliError::from)?)
}

// ---------------------------------------------------------------------------------------------
// Private transactions: send, split, join, withdraw

/// The unit of the command's asset (read through the mixnet).
async fn unit_for(p: &PrivateArgs, testnet: Testnet) -> CmdResult<Unit> {
    let asset = p.asset.unwrap_or(Address::ZERO);
    if asset.is_zero() {
        return Ok(Unit::eth());
    }
    let at = resolve(&p.chain.pool, None, testnet).await?;
    Ok(unit_of(&read_provider(&at.rpc)?, asset).await)
}
async fn send_cmd(a: &SendArgs, testnet: Testnet) -> CmdResult {
    let to = parse_shielded(&a.to)?;
    let unit = unit_for(&a.private, testnet).await?;
    let amount = unit.parse(&a.amount)?;
    let plan = Plan {
        asset: a.private.asset.unwrap_or(Address::ZERO),
        outputs: vec![(to, amount)],
        join: false,
        public_out: 0,
        recipient: Address::ZERO,
        what: format!("a private payment of {} to {to}", unit.show(amount)),
    };
    match make(&a.private, &plan, testnet).await {
        Ok(()) => Ok(()),
        Err(e @ (Stop::Failed(_) | Stop::Already { .. })) => Err(e.into()),
        Err(Stop::NeedsJoin(why)) => {
            eprintln!("your notes must be joined first: {why}");
            if !(a.auto_join
                || crate::prompt::confirm("join two of your notes now (one more transaction, paid the same way)?")?)
            {
                return Err(CommandError::JoinDeclined.into());
            }
            // Each join makes one note of two; repeat until a pair covers the payment.
            for _ in 0..MAX_AUTO_JOINS {
                join_then_wait(&a.private, a.join_wait_secs, testnet).await?;
                match make(&a.private, &plan, testnet).await {
                    Err(Stop::NeedsJoin(why)) => eprintln!("still too many notes: {why}"),
                    other => return Ok(other?),
                }
            }
            Err(CommandError::StillNoPair(MAX_AUTO_JOINS).into())
        }
    }
}

/// The joins `send --auto-join` makes before giving up.
const MAX_AUTO_JOINS: usize = 4;

/// Joins two notes and waits until nothing of the asset is pending insertion (the joined note
/// is spendable).
async fn join_then_wait(p: &PrivateArgs, wait_secs: u64, testnet: Testnet) -> CmdResult {
    make(p, &Plan::join(p.asset.unwrap_or(Address::ZERO)), testnet).await?;
    let asset = asset_word(p.asset.unwrap_or(Address::ZERO));
    let deadline = Instant::now() + Duration::from_secs(wait_secs);
    let at = resolve(&p.chain.pool, None, testnet).await?;
    let provider = read_provider(&at.rpc)?;
    loop {
        let (_, view) = synced_at(&p.chain, &at, &provider).await?;
        if view.balance(&asset).pending == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(CommandError::JoinNotInserted(wait_secs).into());
        }
        eprintln!("waiting for the joined note's insertion…");
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

async fn split_cmd(a: &SplitArgs, testnet: Testnet) -> CmdResult {
    let unit = unit_for(&a.private, testnet).await?;
    let seed = files::open_seed(&a.private.chain.wallet)?;
    let own = seed.address().map_err(CliError::from)?;
    let amounts = a.amounts.iter().map(|t| unit.parse(t)).collect::<Result<Vec<u128>, _>>()?;
    let shown: Vec<String> = amounts.iter().map(|v| unit.show(*v)).collect();
    let plan = Plan {
        asset: a.private.asset.unwrap_or(Address::ZERO),
        outputs: amounts.iter().map(|v| (own, *v)).collect(),
        join: false,
        public_out: 0,
        recipient: Address::ZERO,
        what: format!("splitting into notes of {} (and the rest as change)", shown.join(" and ")),
    };
    make(&a.private, &plan, testnet).await.map_err(|e| match e {
        Stop::NeedsJoin(why) => CommandError::SplitNeedsJoin(why).into(),
        e => e.into(),
    })
}

async fn withdraw_cmd(a: &WithdrawArgs, testnet: Testnet) -> CmdResult {
    let unit = unit_for(&a.private, testnet).await?;
    let amount = unit.parse(&a.amount)?;
    let asset = a.private.asset.unwrap_or(Address::ZERO);
    privacy_advice(&a.private.chain, asset, amount, &unit, WithdrawCommand::Wallet, testnet).await?;
    let plan = Plan {
        asset: a.private.asset.unwrap_or(Address::ZERO),
        outputs: Vec::new(),
        join: false,
        public_out: amount,
        recipient: a.to,
        what: format!("withdrawing {} to {}", unit.show(amount), a.to),
    };
    Stop::finish(make(&a.private, &plan, testnet).await)
}

/// Prints the privacy advice before a withdrawal of `amount` (`crate::advice`), before
/// any fee confirmation; `nox wallet withdraw` and `nox tx withdraw` both print it, each naming
/// its own command line in the split.
pub async fn privacy_advice(
    chain: &ChainArgs,
    asset: Address,
    amount: u128,
    unit: &Unit,
    command: WithdrawCommand,
    testnet: Testnet,
) -> CmdResult {
    let (_, _, provider, view) = synced(chain, testnet).await?;
    let (_, now) = chain_context(&provider).await?;
    advice::privacy_lines(&view, now, asset, amount, unit, command).iter().for_each(|l| eprintln!("{l}"));
    Ok(())
}

/// Makes `plan` as one private transaction, paid through the mixnet or (`--direct`) submitted
/// from the key file's account.
pub async fn private(p: &PrivateArgs, plan: &Plan, testnet: Testnet) -> Result<(Landed, Unit), Stop> {
    if !p.submit.direct {
        return crate::tx::command::paid(p, plan, testnet).await;
    }
    let key_file = p.submit.key_file.as_ref().ok_or(CommandError::NoKeyFile)?;
    let (seed, at, provider, view) = synced(&p.chain, testnet).await?;
    let s = &p.submit;
    let order =
        flows::DirectOrder { key_file, yes: s.fee.yes, valid_for: s.valid_for, timeout_secs: s.mix.timeout_secs };
    flows::direct(&p.chain.wallet, &order, plan, &seed, &at, &provider, &view).await
}

/// Runs `plan`, reports it; `NeedsJoin` is passed up.
async fn make(p: &PrivateArgs, plan: &Plan, testnet: Testnet) -> Result<(), Stop> {
    let started = Instant::now();
    eprintln!("{}", plan.what);
    match private(p, plan, testnet).await {
        Ok((landed, unit)) => report(&landed, &unit, started),
        Err(Stop::Already { tx_hash, block }) => already(tx_hash, block),
        Err(e) => return Err(e),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        command: WalletCommand,
    }

    fn parse(args: &[&str]) -> Result<WalletCommand, clap::Error> {
        Cli::try_parse_from(std::iter::once("nox").chain(args.iter().copied())).map(|c| c.command)
    }

    #[test]
    fn only_an_unconfirmed_hand_over_exits_with_3() {
        assert_eq!(exit_status(&format!("{UNCONFIRMED} 0xabc: run the command again")), EXIT_UNCONFIRMED);
        assert_eq!(exit_status("give --pool, a --testnet or a --chain with a pool"), 1);
        assert_eq!(exit_status(&format!("error: {UNCONFIRMED}")), 1, "only a message that starts with it");
    }

    #[test]
    fn direct_needs_a_key_file_and_split_needs_its_amounts() {
        let w = ["--wallet", "/tmp/w", "--testnet", "/tmp/t"];
        let join = |extra: &[&'static str]| -> Vec<&str> { ["join"].iter().chain(&w).chain(extra).copied().collect() };
        assert!(parse(&join(&["--direct"])).is_err(), "--direct without --key-file");
        let Ok(WalletCommand::Join(p)) = parse(&join(&["--direct", "--key-file", "/tmp/k"])) else { panic!("join") };
        assert!(p.submit.direct && p.submit.valid_for == 600 && p.asset.is_none());
        let split = |amounts: &'static str| -> Vec<&str> {
            ["split"].iter().chain(&w).chain(&["--amounts", amounts]).copied().collect()
        };
        let Ok(WalletCommand::Split(s)) = parse(&split("0.1,0.2")) else { panic!("split") };
        assert_eq!(s.amounts, ["0.1", "0.2"]);
        let no_amounts: Vec<&str> = ["split"].iter().chain(&w).copied().collect();
        assert!(parse(&no_amounts).is_err(), "--amounts is required");
        assert!(parse(&["withdraw", "--wallet", "/tmp/w", "--amount", "1", "--to", "nox1abc"]).is_err());
    }
}
