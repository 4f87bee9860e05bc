//! `nox demo`: the Sphinx core end to end, in memory, with timings.
//!
//! A client sends a request carrying a SURB through entry → mix → exit; the
//! exit answers through the SURB along an independent return path; then the
//! demo shows what each defence refuses: a replayed packet, a tampered body, a
//! packet for another geometry and a packet with too little proof of work.
//!
//! Also `nox testnet demo` ([`testnet_demo`]): the testnet's mixnet part (`nox-testnet`), then
//! private value between two wallets ([`private_transfer`]): A deposits, A pays B's `nox1…`
//! address through an exit's relayer, the exits' inserter makes the notes spendable, B finds
//! the note from the chain through the mixnet; balances checked exactly, gas and time printed.

use std::{collections::HashSet, time::Instant};

use nox_sphinx::{
    BuildOptions, Delay, Geometry, HeaderView, NodeId, PathHop, Processed, ReplayTag, SecretKey, SphinxError, Surb,
    build_forward, build_surb, process_packet,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{SeedableRng, TryRngCore};

/// Options of `nox demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Proof-of-work difficulty (bits) every node requires.
    #[arg(long, default_value_t = 8)]
    pow_difficulty: u8,
    /// Seed for a reproducible run (default: from the OS).
    #[arg(long)]
    seed: Option<u64>,
}

/// Errors the demo can report.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A Sphinx operation failed where it should have succeeded.
    #[error("sphinx: {0}")]
    Sphinx(#[from] SphinxError),
    /// A node refused a packet it should have accepted.
    #[error("refused: {0}")]
    Refused(#[from] Refusal),
    /// The packet did not do what the demo expected.
    #[error("unexpected outcome: {0}")]
    Unexpected(String),
}

/// Why a demo node refused a packet.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The replay tag was seen before.
    #[error("replay tag already seen")]
    Replay,
    /// The Sphinx layer refused it.
    #[error(transparent)]
    Sphinx(#[from] SphinxError),
}

struct Node {
    name: &'static str,
    id: NodeId,
    key: SecretKey,
    seen: HashSet<ReplayTag>,
}

const EPOCH: u32 = 1;

impl Node {
    fn new(name: &'static str, index: u8, rng: &mut ChaCha20Rng) -> Self {
        let mut id = [0u8; 32];
        id[..name.len()].copy_from_slice(name.as_bytes());
        id[31] = index;
        Self { name, id: NodeId(id), key: SecretKey::generate(rng), seen: HashSet::new() }
    }

    fn hop(&self, difficulty: u8) -> PathHop {
        PathHop { node: self.id, public_key: self.key.public_key(), delay: Delay(1000), pow_difficulty: difficulty }
    }

    /// Ingest checks then Sphinx processing, as the node pipeline does them.
    fn receive(&mut self, geometry: &Geometry, packet: &mut [u8], difficulty: u8) -> Result<Processed, Refusal> {
        let view = HeaderView::parse(geometry, packet)?;
        if view.key_epoch() != EPOCH {
            return Err(SphinxError::UnknownEpoch(view.key_epoch()).into());
        }
        let tag = view.replay_tag();
        if self.seen.contains(&tag) {
            return Err(Refusal::Replay);
        }
        view.check_work(&tag, difficulty)?;
        let outcome = process_packet(geometry, &self.key, packet)?;
        self.seen.insert(tag);
        Ok(outcome)
    }
}

/// Runs the demo and prints what happened.
pub fn run(args: &DemoArgs) -> Result<(), DemoError> {
    let seed = args.seed.unwrap_or_else(|| rand_core::OsRng.try_next_u64().unwrap_or(0));
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let geometry = Geometry::default();
    let d = args.pow_difficulty;
    println!("NOX Sphinx demo (seed {seed})");
    println!(
        "geometry: {} B packets, {} hops, header {} B, payload capacity {} B, tag {:02x?}",
        geometry.packet_len(),
        geometry.hops(),
        geometry.header_len(),
        geometry.payload_capacity(),
        geometry.tag()
    );
    let mut forward =
        vec![Node::new("entry-1", 1, &mut rng), Node::new("mix-1", 2, &mut rng), Node::new("exit-1", 3, &mut rng)];
    let mut back =
        vec![Node::new("entry-2", 4, &mut rng), Node::new("mix-2", 5, &mut rng), Node::new("exit-2", 6, &mut rng)];
    let client = NodeId([0xC1; 32]);

    // The client: a SURB for the reply, then the request packet carrying it.
    let options = BuildOptions { key_epoch: EPOCH, pow_threads: 2 };
    let started = Instant::now();
    let return_path: Vec<PathHop> = back.iter().map(|n| n.hop(d)).collect();
    let (surb, recovery) = build_surb(&geometry, &options, &return_path, client, &mut rng)?;
    let mut request = b"GET https://example.org/ HTTP/1.1\n".to_vec();
    request.extend_from_slice(&surb.to_bytes());
    let path: Vec<PathHop> = forward.iter().map(|n| n.hop(d)).collect();
    let mut packet = build_forward(&geometry, &options, &path, &request, &mut rng)?;
    println!(
        "client: built SURB + request ({} B payload, PoW {d} bits for every hop) in {:.0} µs",
        request.len(),
        started.elapsed().as_secs_f64() * 1e6
    );
    let original = packet.clone();

    let payload = carry(&geometry, &mut forward, &mut packet, d, "request")?;
    let Processed::Deliver { payload: range, .. } = payload else {
        return Err(DemoError::Unexpected("request was not delivered".into()));
    };
    let body = &packet[range];
    let split = body.len() - Surb::encoded_len(&geometry);
    println!("exit-1: request = {:?}", String::from_utf8_lossy(&body[..split]).trim_end());
    let surb = Surb::from_bytes(&geometry, &body[split..])?;
    let first = surb.first_hop();
    let mut reply = surb.into_reply(&geometry, b"HTTP/1.1 200 OK\n\nhello from the exit")?;
    println!("exit-1: reply packet of {} B (same size as a request) sent to {}", reply.len(), name_of(&back, first));

    let outcome = carry(&geometry, &mut back, &mut reply, d, "reply")?;
    let Processed::Reply { surb_id, body, recipient, .. } = outcome else {
        return Err(DemoError::Unexpected("reply did not reach its recipient".into()));
    };
    let opened = recovery.open(&surb_id, &reply[body])?;
    println!(
        "client {}: opened reply for SURB {:02x?}…: {:?}",
        if recipient == client { "(recipient matches)" } else { "(WRONG recipient)" },
        &surb_id.0[..4],
        String::from_utf8_lossy(&opened)
    );

    println!("defences:");
    let mut replayed = original.clone();
    report("replayed request at entry-1", forward[0].receive(&geometry, &mut replayed, d));
    for node in forward.iter_mut() {
        node.seen.clear(); // so the next cases test something other than replay
    }
    let mut tampered = original.clone();
    tampered[geometry.header_len() + 100] ^= 1;
    let mut result = Ok(Processed::Forward { next_hop: forward[0].id, delay: Delay(0) });
    for node in forward.iter_mut() {
        if result.is_ok() {
            result = node.receive(&geometry, &mut tampered, d);
        }
    }
    report("body bit flipped before entry-1 (refused at exit-1)", result);
    let mut header_flip = original.clone();
    header_flip[60] ^= 1;
    report("header bit flipped (PoW check)", forward[0].receive(&geometry, &mut header_flip, d));
    let mut header_flip = original.clone();
    header_flip[60] ^= 1;
    report("header bit flipped (MAC check, PoW not required)", forward[0].receive(&geometry, &mut header_flip, 0));
    let other = Geometry::new(geometry.packet_len(), 4)?;
    let mut small = build_forward(&other, &BuildOptions::new(EPOCH), &path, b"x", &mut rng)?;
    report("packet of another geometry", forward[0].receive(&geometry, &mut small, d));
    let mut lazy: Vec<PathHop> = path.clone();
    lazy[0].pow_difficulty = 0;
    let mut cheap = build_forward(&geometry, &BuildOptions::new(EPOCH), &lazy, b"x", &mut rng)?;
    report("packet with too little proof of work", forward[0].receive(&geometry, &mut cheap, d + 8));
    Ok(())
}

fn carry(
    geometry: &Geometry,
    nodes: &mut [Node],
    packet: &mut [u8],
    difficulty: u8,
    what: &str,
) -> Result<Processed, DemoError> {
    let count = nodes.len();
    for index in 0..count {
        let started = Instant::now();
        let outcome = nodes[index].receive(geometry, packet, difficulty)?;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        match &outcome {
            Processed::Forward { next_hop, .. } => {
                println!(
                    "{:>8}: {what} processed in {micros:5.0} µs, forward to {}",
                    nodes[index].name,
                    name_of(nodes, *next_hop)
                );
            }
            Processed::Deliver { payload, .. } => {
                println!(
                    "{:>8}: {what} processed in {micros:5.0} µs, deliver {} B payload",
                    nodes[index].name,
                    payload.len()
                );
                return Ok(outcome);
            }
            Processed::Reply { body, .. } => {
                println!(
                    "{:>8}: {what} processed in {micros:5.0} µs, hand {} B reply to client",
                    nodes[index].name,
                    body.len()
                );
                return Ok(outcome);
            }
        }
    }
    Err(DemoError::Unexpected(format!("{what} still forwarding after the last hop")))
}

fn name_of(nodes: &[Node], id: NodeId) -> &'static str {
    nodes.iter().find(|n| n.id == id).map_or("an unknown node", |n| n.name)
}

fn report(what: &str, result: Result<Processed, Refusal>) {
    match result {
        Ok(_) => println!("  {what}: ACCEPTED (this is a bug)"),
        Err(error) => println!("  {what}: refused ({error})"),
    }
}

// ---------------------------------------------------------------------------------------------
// `nox testnet demo`: the mixnet part, then private value between two wallets

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
    use nox_testnet::net;
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
        .and_then(|()| nox_testnet::demo_requests::run(dir, server, tls))
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
    let eth = crate::wallet_cmd::Unit::eth();
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
    command: crate::wallet_cmd::WalletCommand,
}

/// The options of a private transaction (`nox wallet send`'s), parsed as the command line does.
#[derive(clap::Parser)]
struct PrivateCli {
    #[command(flatten)]
    private: crate::wallet_cmd::PrivateArgs,
}

/// A wallet and the pool.
#[derive(clap::Parser)]
struct ChainCli {
    #[command(flatten)]
    chain: crate::wallet_cmd::ChainArgs,
}

/// The mixnet client's options.
#[derive(clap::Parser)]
struct TopologyCli {
    #[command(flatten)]
    topology: crate::client_cmd::TopologyArgs,
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
    use crate::wallet_cmd::{self, Plan, asset_word};
    use alloy::primitives::Address;
    use alloy::providers::{Provider, ProviderBuilder};

    let info = nox_testnet::chain::load(dir).ok_or_else(|| TestnetDemoError::Testnet("no chain.json".into()))?;
    let pool = info.pool.as_ref().ok_or_else(|| TestnetDemoError::Testnet("the testnet has no pool".into()))?.pool;
    let d = dir.to_str().ok_or_else(|| TestnetDemoError::Testnet("a non-UTF-8 directory".into()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    // The demo's own view of the chain (receipts, the pool's balance): the operator's, not a wallet's.
    let chain = ProviderBuilder::new()
        .connect_http(info.rpc_url.parse().map_err(|e| TestnetDemoError::Chain(format!("{}: {e}", info.rpc_url)))?);
    let chain_err = |e: alloy::transports::TransportError| TestnetDemoError::Chain(e.to_string());

    // One mixnet client for every read of both wallets, served as a local JSON-RPC endpoint.
    let topology = parse::<TopologyCli>(&["--testnet", d])?.topology;
    let client = runtime.block_on(crate::client_cmd::start(&topology, 2.0)).map_err(TestnetDemoError::Wallet)?;
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
        wallet_cmd::run(parse::<WalletCli>(&refs)?.command).map_err(TestnetDemoError::Wallet)
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
    let settled = |c: &wallet_cmd::ChainArgs, who: &'static str| -> Result<u128, TestnetDemoError> {
        let deadline = Instant::now() + SPENDABLE_WAIT;
        loop {
            let (_, _, _, view) = runtime.block_on(wallet_cmd::synced(c)).map_err(TestnetDemoError::Wallet)?;
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
    let (seed_b, _, _, _) = runtime.block_on(wallet_cmd::synced(&chain_b)).map_err(TestnetDemoError::Wallet)?;
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
    let (landed, unit) =
        runtime.block_on(wallet_cmd::private(&private, &plan)).map_err(|e| TestnetDemoError::Wallet(e.message()))?;
    wallet_cmd::report(&landed, &unit, t);
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
