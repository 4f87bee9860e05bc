//! `nox testnet demo` ([`testnet_demo`], issue 34: moved here from the binary's `demo.rs`): the
//! testnet's mixnet part, then private value between two wallets ([`private_transfer`]): A
//! deposits, A pays B's `nox1…` address through an exit's relayer, the exits' inserter makes the
//! notes spendable, B finds the note from the chain through the mixnet; balances checked
//! exactly, gas and time printed.
//!
//! Here because every part of the demo but the wallet is this crate's (the testnet up and down,
//! its traffic, the demo's requests and servers, the chain.json the wallet reads), and the
//! wallet is a library (`nox-wallet-cli`, which knows nothing of testnets): this module also
//! says what `--testnet <dir>` means to the wallet and `nox tx` ([`WALLET_TESTNET`]).

use std::time::Instant;

use nox_wallet::units::Unit;
use nox_wallet_cli::pool::{ChainArgs, Testnet, TestnetChain};
use nox_wallet_cli::wallet::{PrivateArgs, WalletCommand};

/// What `--testnet <dir>` means to the wallet and `nox tx`: the testnet's mixnet (its topology
/// and CA file) and its chain.json.
pub const WALLET_TESTNET: Testnet = Testnet {
    client: nox_client_io::cli::Testnet {
        topology: |dir| Box::pin(async move { crate::directory::topology_async(&dir).await }),
        ca_file: crate::tls::existing_ca_file,
    },
    chain: testnet_chain,
};

fn testnet_chain(dir: &std::path::Path) -> Option<TestnetChain> {
    let info = crate::chain::load(dir)?;
    Some(TestnetChain {
        pool: info.pool.map(|p| (p.pool, p.block)),
        executor: info.deployment.executor,
        defi: info.defi,
    })
}

/// Anvil's development account 1 (account 0 deploys): the account A deposits from.
const DEPOSITOR_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
/// A's deposit: 1 ETH.
const DEPOSIT_WEI: u128 = 1_000_000_000_000_000_000;
/// What A pays B: 0.4 ETH.
const TRANSFER_WEI: u128 = 400_000_000_000_000_000;
/// The longest the demo waits for the exits' inserter to make a note spendable.
const SPENDABLE_WAIT: std::time::Duration = std::time::Duration::from_secs(180);
/// The passphrase of the demo's throwaway wallets.
const PASSPHRASE: &str = "nox testnet demo";

/// Errors of `nox testnet demo`.
#[derive(Debug, thiserror::Error)]
pub enum TestnetDemoError {
    /// A testnet step (`nox-testnet`, whose errors are messages) failed.
    #[error("testnet: {0}")]
    Testnet(String),
    /// A wallet command failed (the `nox wallet` message).
    #[error("wallet: {0}")]
    Wallet(String),
    /// Reading the chain (the demo's own check of receipts and the pool's balance) failed.
    #[error("chain: {0}")]
    Chain(String),
    /// Local I/O (files of the demo, the runtime, the local endpoint).
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The notes were not made spendable in time.
    #[error("{0}: not spendable within {1} s (is an exit's inserter running?)")]
    NotSpendable(&'static str, u64),
    /// A balance is not exactly what the steps imply.
    #[error("{what}: expected {expected} wei, found {found} wei")]
    Balance {
        /// Whose balance.
        what: &'static str,
        /// What the steps imply.
        expected: u128,
        /// What the chain and the wallet show.
        found: u128,
    },
}

/// One step of [`private_transfer`]: its wall time and the gas of the transactions it made
/// (from their receipts).
#[derive(Clone, Debug)]
pub struct MoneyStep {
    /// What the step did.
    pub what: String,
    /// Wall time, seconds.
    pub seconds: f64,
    /// Gas of the step's transactions (0: none).
    pub gas: u64,
}

/// What [`private_transfer`] did and checked.
#[derive(Clone, Debug)]
pub struct MoneyReport {
    /// The steps, in order.
    pub steps: Vec<MoneyStep>,
    /// The relayer's fee for the paid transfer (wei).
    pub fee: u128,
    /// A's spendable balance at the end (wei): the deposit less the transfer and the fee.
    pub a_spendable: u128,
    /// B's spendable balance at the end (wei): the transfer.
    pub b_spendable: u128,
    /// The pool's ETH balance at the end (wei): exactly A's and B's.
    pub pool_balance: u128,
}

/// `nox testnet demo`: up (Anvil, contracts, pool, nodes), packets, requests through SURBs,
/// then [`private_transfer`], every node's counters, down. The HTTP and HTTPS servers are bound
/// first: their addresses are the only local destinations the exits may reach.
pub fn testnet_demo(dir: &std::path::Path, packets: u64, geometry: nox_sphinx::Scheme) -> Result<(), TestnetDemoError> {
    use crate::net;
    let bind = || -> Result<_, TestnetDemoError> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        Ok((listener, addr))
    };
    let ((server, addr), (tls, tls_addr)) = (bind()?, bind()?);
    let layout = net::Layout { exit_allow: vec![addr, tls_addr], geometry, ..net::Layout::default() };
    let whole = Instant::now();
    net::up(dir, &layout).map_err(TestnetDemoError::Testnet)?;
    println!("testnet up (Anvil, contracts, pool, nodes) in {:.1} s", secs(whole));
    let started = Instant::now();
    let result = net::traffic(dir, packets, 0.0)
        .and_then(|()| crate::demo_requests::run(dir, server, tls))
        .map_err(TestnetDemoError::Testnet)
        .and_then(|()| private_transfer(dir))
        .map(|report| {
            print!("{}", money_section(&report));
            println!("mixnet and money parts: {:.1} s", started.elapsed().as_secs_f64());
        });
    let shown = net::status(dir).map_err(TestnetDemoError::Testnet);
    net::down(dir).map_err(TestnetDemoError::Testnet)?;
    result.and(shown)?;
    println!("nox testnet demo: {:.1} s in all, up to down", secs(whole));
    Ok(())
}

/// The demo's money section as printed: one line per step (time, gas), the total, the exact
/// balances.
pub fn money_section(report: &MoneyReport) -> String {
    use std::fmt::Write as _;
    let eth = Unit::eth();
    let mut out = String::from("private value through the mixnet, step by step (gas from the receipts):\n");
    for s in &report.steps {
        let gas = if s.gas == 0 { "-".to_owned() } else { s.gas.to_string() };
        let _ = writeln!(out, "  {:<66} {:>6.1} s {:>10} gas", s.what, s.seconds, gas);
    }
    let (seconds, gas) = report.steps.iter().fold((0.0, 0), |(t, g), s| (t + s.seconds, g + s.gas));
    let _ = writeln!(out, "  {:<66} {seconds:>6.1} s {gas:>10} gas", "total");
    let _ = writeln!(
        out,
        "balances (exact): A {} (1 - 0.4 - the relayer's fee {}), B {}; the pool holds {}: exactly A + B, and A + \
         B + the fee = the 1 ETH deposited",
        eth.show(report.a_spendable),
        eth.show(report.fee),
        eth.show(report.b_spendable),
        eth.show(report.pool_balance)
    );
    out
}

/// `nox wallet …` as a library call (the same parser as the command line).
#[derive(clap::Parser)]
struct WalletCli {
    #[command(subcommand)]
    command: WalletCommand,
}

/// The options of a private transaction (`nox wallet send`'s), parsed as the command line does.
#[derive(clap::Parser)]
struct PrivateCli {
    #[command(flatten)]
    private: PrivateArgs,
}

/// A wallet and the pool.
#[derive(clap::Parser)]
struct ChainCli {
    #[command(flatten)]
    chain: ChainArgs,
}

/// The mixnet client's options.
#[derive(clap::Parser)]
struct TopologyCli {
    #[command(flatten)]
    topology: nox_client_io::cli::TopologyArgs,
}

fn parse<P: clap::Parser>(args: &[&str]) -> Result<P, TestnetDemoError> {
    P::try_parse_from(std::iter::once("nox").chain(args.iter().copied()))
        .map_err(|e| TestnetDemoError::Wallet(e.to_string()))
}

/// Private value between two wallets on a running testnet `dir` (with its pool, and exits
/// that relay and insert): wallets A and B; A deposits 1 ETH; the exits' inserter makes the
/// note spendable; A pays 0.4 ETH to B's `nox1…` address, one proof paid through exit 0's
/// relayer; the inserter makes both outputs spendable; B syncs through the mixnet and finds
/// exactly 0.4 ETH, A exactly 0.6 ETH less the fee, and the pool holds exactly their sum.
/// Every wallet read goes through one in-process mixnet client (as `nox client --rpc`).
pub fn private_transfer(dir: &std::path::Path) -> Result<MoneyReport, TestnetDemoError> {
    use alloy::primitives::Address;
    use alloy::providers::{Provider, ProviderBuilder};
    use nox_wallet_cli::{Plan, outcome::report, pool::synced, session::asset_word, wallet};

    let info = crate::chain::load(dir).ok_or_else(|| TestnetDemoError::Testnet("no chain.json".into()))?;
    let pool = info.pool.as_ref().ok_or_else(|| TestnetDemoError::Testnet("the testnet has no pool".into()))?.pool;
    let d = dir.to_str().ok_or_else(|| TestnetDemoError::Testnet("a non-UTF-8 directory".into()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    // The demo's own view of the chain (receipts, the pool's balance): the operator's, not a wallet's.
    let chain = ProviderBuilder::new()
        .connect_http(info.rpc_url.parse().map_err(|e| TestnetDemoError::Chain(format!("{}: {e}", info.rpc_url)))?);
    let chain_err = |e: alloy::transports::TransportError| TestnetDemoError::Chain(e.to_string());

    // One mixnet client for every read of both wallets, served as a local JSON-RPC endpoint.
    let topology = parse::<TopologyCli>(&["--testnet", d])?.topology;
    let client = runtime
        .block_on(nox_client_io::cli::start(&topology, 2.0, WALLET_TESTNET.client))
        .map_err(|e| TestnetDemoError::Wallet(e.to_string()))?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))?;
    let rpc = format!("http://{}", listener.local_addr()?);
    runtime.spawn(nox_client::serve_rpc(listener, client, nox_client::RpcConfig::default()));

    let pass = dir.join("demo-passphrase");
    let key = dir.join("demo-depositor.key");
    std::fs::write(&pass, PASSPHRASE)?;
    std::fs::write(&key, DEPOSITOR_KEY)?;
    let (pass, key) = (pass.to_string_lossy().into_owned(), key.to_string_lossy().into_owned());
    let wallet_a = format!("{d}/demo-wallet-a");
    let wallet_b = format!("{d}/demo-wallet-b");
    let with_chain = |wallet: &str| -> Vec<String> {
        ["--wallet", wallet, "--passphrase-file", pass.as_str(), "--testnet", d, "--rpc", rpc.as_str()]
            .map(str::to_owned)
            .to_vec()
    };
    let run = |args: Vec<String>| -> Result<(), TestnetDemoError> {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        wallet::run(parse::<WalletCli>(&refs)?.command, WALLET_TESTNET)
            .map_err(|e| TestnetDemoError::Wallet(e.to_string()))
    };
    let chain_a = parse::<ChainCli>(&with_chain(&wallet_a).iter().map(String::as_str).collect::<Vec<_>>())?.chain;
    let chain_b = parse::<ChainCli>(&with_chain(&wallet_b).iter().map(String::as_str).collect::<Vec<_>>())?.chain;
    let eth = asset_word(Address::ZERO);
    let depositor = nox_chain::deploy::signer(DEPOSITOR_KEY).map_err(|e| TestnetDemoError::Chain(e.to_string()))?;
    let mut steps = Vec::new();
    let block = || runtime.block_on(chain.get_block_number()).map_err(chain_err);
    // Gas of the transactions mined in blocks (from, to] that `pick` selects, from their receipts.
    let gas_in = |from: u64, to: u64, pick: &dyn Fn(&alloy::rpc::types::TransactionReceipt) -> bool| {
        runtime.block_on(async {
            let mut gas = 0;
            for n in from + 1..=to {
                let receipts = chain.get_block_receipts(n.into()).await.map_err(chain_err)?.unwrap_or_default();
                gas += receipts.iter().filter(|r| pick(r)).map(|r| r.gas_used).sum::<u64>();
            }
            Ok::<_, TestnetDemoError>(gas)
        })
    };
    // The exits' insertions in blocks (from, to]: transactions to the pool not sent by the
    // depositor (in the demo's windows nothing else calls the pool: the paid transfer goes to
    // the executor).
    let inserts = |from: u64, to: u64| gas_in(from, to, &|r| r.to == Some(pool) && r.from != depositor.address());
    // Syncs `c` through the mixnet until nothing of its ETH is pending insertion; its spendable ETH.
    let settled = |c: &ChainArgs, who: &'static str| -> Result<u128, TestnetDemoError> {
        let deadline = Instant::now() + SPENDABLE_WAIT;
        loop {
            let (_, _, _, view) =
                runtime.block_on(synced(c, WALLET_TESTNET)).map_err(|e| TestnetDemoError::Wallet(e.to_string()))?;
            let b = view.balance(&eth);
            if b.pending == 0 && b.notes > 0 {
                return Ok(b.spendable);
            }
            if Instant::now() > deadline {
                return Err(TestnetDemoError::NotSpendable(who, SPENDABLE_WAIT.as_secs()));
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    };

    println!("private value: wallets A and B, every wallet read through the mixnet ({rpc})");
    let t = Instant::now();
    for w in [&wallet_a, &wallet_b] {
        run(["new", "--wallet", w.as_str(), "--passphrase-file", pass.as_str()].map(str::to_owned).to_vec())?;
    }
    let (seed_b, _, _, _) =
        runtime.block_on(synced(&chain_b, WALLET_TESTNET)).map_err(|e| TestnetDemoError::Wallet(e.to_string()))?;
    let address_b = seed_b.address().map_err(|e| TestnetDemoError::Wallet(e.to_string()))?;
    println!("B's shielded address: {address_b}");
    steps.push(MoneyStep { what: "wallets A and B created (B syncs: nothing yet)".into(), seconds: secs(t), gas: 0 });

    // Insertions are counted from the block before the transaction that queued the notes: an
    // exit's inserter may land its batch before this demo reads the next block number.
    let (t, before_deposit) = (Instant::now(), block()?);
    let mut args = vec!["deposit".to_owned()];
    args.extend(with_chain(&wallet_a));
    args.extend(["--amount", "1", "--key-file", key.as_str()].map(str::to_owned));
    run(args)?;
    let gas = gas_in(before_deposit, block()?, &|r| r.from == depositor.address())?;
    steps.push(MoneyStep { what: "A deposits 1 ETH (public, from Anvil account 1)".into(), seconds: secs(t), gas });

    let t = Instant::now();
    let a = settled(&chain_a, "A's deposit")?;
    check("A after the deposit", DEPOSIT_WEI, a)?;
    let gas = inserts(before_deposit, block()?)?;
    steps.push(MoneyStep {
        what: "exits' inserter inserts it; A syncs: 1 ETH spendable".into(),
        seconds: secs(t),
        gas,
    });

    let (t, before_transfer) = (Instant::now(), block()?);
    let mut args = with_chain(&wallet_a);
    args.extend(["--exit", "0", "--yes"].map(str::to_owned));
    let private = parse::<PrivateCli>(&args.iter().map(String::as_str).collect::<Vec<_>>())?.private;
    let plan = Plan {
        asset: Address::ZERO,
        outputs: vec![(address_b, TRANSFER_WEI)],
        join: false,
        public_out: 0,
        recipient: Address::ZERO,
        what: format!("a private payment of 0.4 ETH to {address_b}"),
    };
    let (landed, unit) = runtime
        .block_on(wallet::private(&private, &plan, WALLET_TESTNET))
        .map_err(|e| TestnetDemoError::Wallet(e.message()))?;
    report(&landed, &unit, t);
    steps.push(MoneyStep {
        what: "A pays B 0.4 ETH: quote, proof, mixnet, exit 0's relayer, inclusion".into(),
        seconds: secs(t),
        gas: landed.gas_used,
    });

    let t = Instant::now();
    let b = settled(&chain_b, "B's note")?;
    let a = settled(&chain_a, "A's change")?;
    let gas = inserts(before_transfer, block()?)?;
    steps.push(MoneyStep {
        what: "exits' inserter inserts both notes; B syncs, finds 0.4 ETH".into(),
        seconds: secs(t),
        gas,
    });
    check("B after the transfer", TRANSFER_WEI, b)?;
    check("A after the transfer", DEPOSIT_WEI - TRANSFER_WEI - landed.fee, a)?;
    let held = runtime.block_on(async { chain.get_balance(pool).await }).map_err(chain_err)?;
    let held = u128::try_from(held).map_err(|e| TestnetDemoError::Chain(e.to_string()))?;
    check("the pool's ETH", a + b, held)?;
    Ok(MoneyReport { steps, fee: landed.fee, a_spendable: a, b_spendable: b, pool_balance: held })
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn check(what: &'static str, expected: u128, found: u128) -> Result<(), TestnetDemoError> {
    if expected == found { Ok(()) } else { Err(TestnetDemoError::Balance { what, expected, found }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_money_section_totals_the_steps_and_shows_exact_balances() {
        let step = |what: &str, seconds, gas| MoneyStep { what: what.into(), seconds, gas };
        let report = MoneyReport {
            steps: vec![step("deposit", 1.5, 100), step("sync", 2.0, 0)],
            fee: 1_000,
            a_spendable: DEPOSIT_WEI - TRANSFER_WEI - 1_000,
            b_spendable: TRANSFER_WEI,
            pool_balance: DEPOSIT_WEI - 1_000,
        };
        let text = money_section(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].starts_with("  deposit ") && lines[1].ends_with("1.5 s        100 gas"), "{}", lines[1]);
        assert!(lines[2].ends_with("2.0 s          - gas"), "{}", lines[2]);
        assert!(lines[3].starts_with("  total ") && lines[3].ends_with("3.5 s        100 gas"), "{}", lines[3]);
        let eth = Unit::eth();
        assert!(lines[4].contains(&format!("A {} (1 - 0.4", eth.show(report.a_spendable))), "{}", lines[4]);
        assert!(lines[4].contains(&format!("B {};", eth.show(TRANSFER_WEI))), "{}", lines[4]);
    }

    #[test]
    fn a_balance_off_by_one_wei_is_refused_with_both_figures() {
        assert!(check("B", 5, 5).is_ok());
        let e = check("B after the transfer", 5, 4).expect_err("refused");
        assert_eq!(e.to_string(), "B after the transfer: expected 5 wei, found 4 wei");
    }
}
