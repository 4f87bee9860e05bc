//! `nox bench defi`: what an anonymous paid transaction costs its user, end to end, on real
//! processes (issue 13; docs/benchmarks/defi.md). A testnet (`nox testnet up`, one node per
//! layer, Anvil mining a block every `--block-time` seconds like a real chain), a `nox client
//! --rpc` daemon with the shipped cover traffic, and the user's commands as separate processes,
//! exactly as a user runs them:
//!
//! - **deposit** (`nox wallet deposit`, public, through the mixnet's JSON-RPC);
//! - **gas-paid action** (`nox tx send`): quote from an exit's relayer, payment proof, bundle
//!   through the mixnet, relayer checks and simulation, inclusion, receipt back through SURBs;
//! - **private swap** (`nox tx swap`): two proofs (withdrawal bound to the swap, gas payment),
//!   then the same path, the swap on the testnet's Uniswap v2;
//! - **gas-paid withdrawal** (`nox tx withdraw`): the same two proofs, the ETH delivered to a
//!   fresh address that holds nothing and pays nothing;
//! - **bundles in flight at once**: `--in-flight` users (each its own wallet) send at the same
//!   moment to the same exit's relayer;
//! - **the same things done publicly** on the same chain (an ETH transfer, the call, a Uniswap
//!   swap, an ERC-20 transfer, and the pool's own unpaid withdrawal), for the privacy premium;
//! - **relayer economics** computed from the measured gas over a grid of ETH and gas prices,
//!   with the relayer's own pricing rule (`nox_relayer::price`) and the assumptions in the JSON.
//!
//! Each paid transaction's latency is split with the client's clock (quote, proofs, submission
//! to answer) and the relayer's (`prepare_ms`: proof check, views, two simulations, pricing,
//! signing, journal; `inclusion_ms`: broadcast to receipt); the rest of the submission-to-answer
//! time is the mixnet both ways plus queueing. Gas and fees come from the relayer's receipt, so
//! the relayer's realised margin (fee ÷ gas cost at the price paid) is measured, not assumed.
//!
//! Files: this one holds the options, the testnet and the run; `defi/` running the
//! `nox` commands and reading their output (`commands.rs`), the public baselines
//! (`baselines.rs`) and the relayer economics (`economics.rs`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{BenchError, write_json};
use crate::harness::{chart, envelope, err, percentile, round3};

mod baselines;
mod commands;
mod economics;
use baselines::*;
use commands::*;
use economics::*;

/// Options of `nox bench defi`.
#[derive(clap::Args, Clone)]
pub struct DefiArgs {
    /// CI-sized: one of each, blocks every second.
    #[arg(long)]
    pub quick: bool,
    /// Paid transactions of each kind (default 5; quick 1).
    #[arg(long)]
    pub reps: Option<usize>,
    /// Anvil's seconds per block (default 12, as Ethereum; quick 1).
    #[arg(long)]
    pub block_time: Option<u64>,
    /// The client's cover rate (packets per second; the shipped default is 2).
    #[arg(long, default_value_t = 2.0)]
    pub cover_rate: f64,
    /// Users sending at the same moment (each its own wallet and note; default 4, quick 2).
    #[arg(long)]
    pub in_flight: Option<usize>,
    /// Output JSON.
    #[arg(long, default_value = "bench/data/defi.json")]
    pub out: PathBuf,
}

const EXPERIMENT: &str = "defi";
/// Anvil's development account 1 (account 0 deploys): the deposits and the unpaid withdrawal.
const USER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
/// Anvil's development account 2: the public baselines (a user with no privacy).
const PUBLIC_KEY: &str = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
/// The selector of `totalSupply()`: the gas-paid action.
const TOTAL_SUPPLY: &str = "0x18160ddd";
const PASSPHRASE: &str = "bench passphrase";
const ONE_ETH: u128 = 1_000_000_000_000_000_000;
/// The file a wallet caches the testnet transfer proving key in (`nox wallet`'s `cached_key`).
const TRANSFER_KEY: &str = "testnet-transfer.pk";

struct Net {
    exe: PathBuf,
    dir: PathBuf,
    client: Option<Child>,
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Some(mut c) = self.client.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ =
            Command::new(&self.exe).args(["testnet", "down", "--dir"]).arg(&self.dir).stdout(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs the benchmark and writes the JSON.
pub fn run(args: &DefiArgs) -> Result<(), BenchError> {
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 5 }).clamp(1, 5);
    let block_time = args.block_time.unwrap_or(if args.quick { 1 } else { 12 }).max(1);
    let exe = std::env::current_exe().map_err(err)?;
    let dir = std::env::temp_dir().join(format!("nox-bench-defi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Below Linux's ephemeral range (32768–60999), where outgoing connections take their ports.
    let base = 26_000 + (std::process::id() % 50) as u16 * 40;
    let started = Instant::now();
    let up = nox(
        &exe,
        &strings(&[
            "testnet",
            "up",
            "--nodes-per-layer",
            "1",
            "--block-time",
            &block_time.to_string(),
            "--base-port",
            &base.to_string(),
            "--dir",
            dir.to_str().ok_or_else(|| err("non-UTF-8 temp dir"))?,
        ]),
    );
    let mut net = Net { exe: exe.clone(), dir: dir.clone(), client: None };
    up?;
    let testnet_up_s = started.elapsed().as_secs_f64();
    let rpc_port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(err)?.port();
    let client = Command::new(&exe)
        .args(["client", "--testnet"])
        .arg(&dir)
        .args(["--rpc", &format!("127.0.0.1:{rpc_port}"), "--cover-rate", &args.cover_rate.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(err)?;
    net.client = Some(client);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", rpc_port)).is_err() {
        if Instant::now() > deadline {
            return Err(err("nox client --rpc did not listen within 30 s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let rpc = format!("http://127.0.0.1:{rpc_port}");
    let d = dir.to_str().unwrap_or_default().to_owned();
    let wallet = format!("{d}/wallet");
    let key = format!("{d}/user.key");
    std::fs::write(&key, USER_KEY).map_err(err)?;
    let chain = ["--wallet", &wallet, "--testnet", &d, "--rpc", &rpc];
    let with = |cmd: &[&str], extra: &[&str]| -> Vec<String> {
        cmd.iter().chain(chain.iter()).chain(extra).map(|s| (*s).to_owned()).collect()
    };
    nox(&exe, &strings(&["wallet", "new", "--wallet", &wallet]))?;

    // Notes: five per repetition (a send spends one, a swap two, a withdrawal two), one per
    // in-flight user, each in its own wallet.
    let in_flight = args.in_flight.unwrap_or(if args.quick { 2 } else { 4 }).clamp(1, 8);
    let mut deposits = Vec::new();
    let mut deposit_txs = Vec::new();
    let mut deposit = |wallet_dir: &str| -> Result<(), BenchError> {
        let t = Instant::now();
        let args: Vec<String> = ["wallet", "deposit", "--wallet", wallet_dir, "--testnet", &d, "--rpc", &rpc]
            .iter()
            .chain(&["--amount", &format!("{ONE_ETH}wei"), "--key-file", &key])
            .map(|s| (*s).to_owned())
            .collect();
        let out = nox(&exe, &args)?;
        deposits.push(json!({ "wall_s": round3(t.elapsed().as_secs_f64()) }));
        deposit_txs.extend(tx_hash(&out));
        Ok(())
    };
    for _ in 0..5 * reps {
        deposit(&wallet)?;
    }
    let users: Vec<String> = (0..in_flight).map(|u| format!("{d}/wallet-user{u}")).collect();
    for u in &users {
        nox(&exe, &strings(&["wallet", "new", "--wallet", u]))?;
        deposit(u)?;
    }
    // The exits' relayers insert the queued notes (their inserter); nobody inserts by hand: a
    // manual `nox wallet insert` raced them (its proof, made against the queue it read, was
    // refused as InvalidProof once an exit had inserted first while it proved).
    let mut insert_waits = Vec::new();
    for w in std::iter::once(&wallet).chain(&users) {
        let t = Instant::now();
        wait_spendable(&exe, w, &d, &rpc)?;
        insert_waits.push(json!({ "wall_s": round3(t.elapsed().as_secs_f64()) }));
    }

    let info = nox_testnet::chain::load(&dir).ok_or_else(|| err("no chain.json"))?;
    let token = info.deployment.stake_token;
    // Warm-up, not measured: the wallet derives and caches the testnet transfer proving key on its
    // first proof (a one-time cost), here with a simulate-only bundle that spends nothing.
    let t = Instant::now();
    let warm_up = with(
        &["tx", "send"],
        &["--exit", "0", "--simulate-only", "--target", &token.to_string(), "--data", TOTAL_SUPPLY],
    );
    let (_, text) = nox_status(&exe, &warm_up)?;
    if !simulated(&text) {
        return Err(err(format!("the warm-up simulation failed: nox {}:\n{text}", warm_up.join(" "))));
    }
    let warm_up_s = t.elapsed().as_secs_f64();
    // The other users' wallets get the same cached key (a deterministic testnet setup: a copy
    // saves each the one-time derivation).
    for u in &users {
        std::fs::copy(format!("{wallet}/{TRANSFER_KEY}"), format!("{u}/{TRANSFER_KEY}")).map_err(err)?;
    }
    let mut sends = Vec::new();
    let mut swaps = Vec::new();
    let mut withdrawals = Vec::new();
    let cover = args.cover_rate.to_string();
    let send_args = |wallet_dir: &str| -> Vec<String> {
        ["tx", "send", "--wallet", wallet_dir, "--testnet", &d, "--rpc", &rpc]
            .iter()
            .chain(&["--exit", "0", "--cover-rate", &cover, "--target", &token.to_string()])
            .chain(&["--data", TOTAL_SUPPLY, "--action-gas", "50000"])
            .map(|s| (*s).to_owned())
            .collect()
    };
    for i in 0..reps {
        let t = Instant::now();
        let out = nox(&exe, &send_args(&wallet))?;
        sends.push(parse_paid(&out, t.elapsed().as_secs_f64())?);
        for (kind, samples, amount) in
            [("swap", &mut swaps, ONE_ETH / 10), ("withdraw", &mut withdrawals, ONE_ETH / 10)]
        {
            let t = Instant::now();
            let to = format!("0x{:040x}", if kind == "swap" { 0x5000 } else { 0x6000 } + i);
            let out = nox(
                &exe,
                &with(
                    &["tx", kind],
                    &["--exit", "0", "--cover-rate", &cover, "--amount", &amount.to_string(), "--to", &to],
                ),
            )?;
            samples.push(parse_paid(&out, t.elapsed().as_secs_f64())?);
        }
    }

    // Many users at once: each starts its own `nox tx send` at the same moment.
    let started_together = Instant::now();
    let children: Vec<_> = users
        .iter()
        .map(|u| {
            Command::new(&exe)
                .args(send_args(u))
                .env("NOX_WALLET_PASSPHRASE", PASSPHRASE)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(err)
        })
        .collect::<Result<_, _>>()?;
    let mut concurrent = Vec::new();
    for child in children {
        let out = child.wait_with_output().map_err(err)?;
        let wall = started_together.elapsed().as_secs_f64();
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(err(format!("a concurrent nox tx send failed:\n{text}")));
        }
        concurrent.push(parse_paid(&text, wall)?);
    }
    let mut blocks: Vec<u64> = concurrent.iter().filter_map(|c| c["block"].as_u64()).collect();
    blocks.sort_unstable();
    blocks.dedup();

    // The same things done publicly, and the gas of the deposits, from the chain itself.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(err)?;
    let defi = info.defi.clone().ok_or_else(|| err("the testnet has no Uniswap deployment"))?;
    let public = runtime.block_on(public_baselines(&info.rpc_url, &defi, token, &deposit_txs))?;
    let unpaid_withdraw = {
        // The pool's own withdrawal, sent by the user's account (which links it to them), from
        // a change note once the exits have inserted it.
        wait_spendable(&exe, &wallet, &d, &rpc)?;
        let out = nox(
            &exe,
            &with(
                &["wallet", "withdraw"],
                &[
                    "--amount",
                    &format!("{}wei", ONE_ETH / 10),
                    "--to",
                    "0x0000000000000000000000000000000000007000",
                    "--direct",
                    "--key-file",
                    &key,
                ],
            ),
        )?;
        let hash = tx_hash(&out).ok_or_else(|| err(format!("no tx hash in:\n{out}")))?;
        runtime.block_on(gas_of(&info.rpc_url, &hash))?
    };
    drop(net);
    let elapsed = started.elapsed().as_secs_f64();

    let keys = [
        "wall_s",
        "quote_s",
        "proofs_s",
        "submission_to_answer_s",
        "relayer_prepare_ms",
        "relayer_inclusion_ms",
        "mixnet_and_queueing_s",
        "gas_used",
        "fee_over_gas_cost",
    ];
    let summarise = |samples: &[Value]| -> Value {
        Value::Object(keys.iter().map(|k| ((*k).to_owned(), stats(samples, k))).collect())
    };
    let mut concurrent_summary = summarise(&concurrent);
    concurrent_summary["users"] = json!(in_flight);
    concurrent_summary["distinct_blocks"] = json!(blocks.len());
    let gas_p50 = |v: &[Value]| stats(v, "gas_used")["p50"].as_f64().unwrap_or(f64::NAN);
    let private = [
        ("gas-paid action (totalSupply)", gas_p50(&sends), "call_tx", "the call as a public transaction"),
        ("gas-paid withdrawal", gas_p50(&withdrawals), "eth_transfer", "an ETH transfer"),
        ("private swap", gas_p50(&swaps), "uniswap_swap", "a public Uniswap v2 swap (ETH → NOX)"),
        ("deposit", public["deposit_p50"].as_f64().unwrap_or(f64::NAN), "eth_transfer", "an ETH transfer"),
    ];
    let premium: Vec<Value> = private
        .iter()
        .map(|(op, gas, base, what)| {
            let public_gas = public[*base].as_f64().unwrap_or(f64::NAN);
            json!({ "operation": op, "private_gas": gas, "public_equivalent": what, "public_gas": public_gas,
                "premium": round3(gas / public_gas) })
        })
        .collect();
    let economics = economics(&[
        ("gas-paid action", gas_p50(&sends)),
        ("gas-paid withdrawal", gas_p50(&withdrawals)),
        ("private swap", gas_p50(&swaps)),
    ]);
    let summary = json!({
        "deposit_wall_s": stats(&deposits, "wall_s"),
        "gas_paid_action": summarise(&sends),
        "private_swap": summarise(&swaps),
        "gas_paid_withdrawal": summarise(&withdrawals),
        "in_flight": concurrent_summary,
        "until_spendable_wall_s": stats(&insert_waits, "wall_s"),
        "public_gas": public,
        "unpaid_pool_withdrawal_gas": unpaid_withdraw,
        "privacy_premium": premium.clone(),
    });
    let p50 = |v: &Value, k: &str| v[k]["p50"].as_f64().unwrap_or(f64::NAN);
    let ops = ["gas_paid_action", "gas_paid_withdrawal", "private_swap"];
    let bars = |label: &str, pick: &dyn Fn(&Value) -> f64| {
        json!({ "label": label, "x": ["gas-paid action", "gas-paid withdrawal", "private swap"],
            "y": ops.iter().map(|o| pick(&summary[*o])).collect::<Vec<_>>() })
    };
    let charts = vec![
        chart(
            "defi-latency",
            &format!("Paid transaction, median seconds by part ({block_time} s blocks, cover {} pps)", args.cover_rate),
            "bar",
            ("", "seconds"),
            (false, false),
            vec![
                bars("quote (mixnet round trip)", &|v| p50(v, "quote_s")),
                bars("proofs (client)", &|v| p50(v, "proofs_s")),
                bars("relayer checks + simulation", &|v| p50(v, "relayer_prepare_ms") / 1000.0),
                bars("inclusion (broadcast to receipt)", &|v| p50(v, "relayer_inclusion_ms") / 1000.0),
                bars("mixnet + queueing (submission and answer)", &|v| p50(v, "mixnet_and_queueing_s")),
            ],
        ),
        chart(
            "defi-gas",
            "Gas: private through NOX vs the same done publicly (one run)",
            "bar",
            ("", "gas"),
            (false, false),
            vec![
                json!({ "label": "private (NOX: proofs, pool, executor, relayer)",
                "x": premium.iter().map(|p| p["operation"].clone()).collect::<Vec<_>>(),
                "y": premium.iter().map(|p| p["private_gas"].clone()).collect::<Vec<_>>() }),
                json!({ "label": "public equivalent",
                "x": premium.iter().map(|p| p["operation"].clone()).collect::<Vec<_>>(),
                "y": premium.iter().map(|p| p["public_gas"].clone()).collect::<Vec<_>>() }),
            ],
        ),
    ];
    let parameters = json!({
        "repetitions": reps, "block_time_s": block_time, "cover_rate_pps": args.cover_rate, "quick": args.quick,
        "in_flight_users": in_flight,
        "testnet": "nox testnet up --nodes-per-layer 1 (3 node processes, Anvil with interval mining, the contracts, the shielded pool, Uniswap v2 NOX/WETH seeded 100 ETH / 200,000 NOX); every exit a funded relayer with the default policy (10 % margin at the max fee)",
        "client": "nox client --rpc (the wallet's chain reads and deposits go through the mixnet); nox wallet / nox tx as separate processes, proving with the testnet keys cached in the wallet",
        "actions": format!("gas-paid action: totalSupply() on the NOX token (--action-gas 50000); private swap: 0.1 ETH for NOX to a fresh address; gas-paid withdrawal: 0.1 ETH to a fresh address (both: withdrawal proof + payment proof); fee {} % of the quote (nox tx's default)", nox_pay::DEFAULT_FEE_PERCENT),
        "public_baselines": "Anvil account 2 sends, on the same chain in the same run: 0.1 ETH to a fresh address, totalSupply() as a transaction, router.swapExactETHForTokens(0.1 ETH), an ERC-20 transfer of the NOX it got; deposit gas from the deposits' receipts; the unpaid pool withdrawal is `nox wallet withdraw` sent by the depositing account",
        "testnet_up_s": round3(testnet_up_s),
        "warm_up_s": round3(warm_up_s),
        "warm_up": "one simulate-only `nox tx send` before the measured transactions: the wallet derives and caches the testnet transfer proving key on its first proof (not a per-transaction cost); the in-flight users' wallets get a copy of the cached key",
        "economics_assumptions": economics["assumptions"].clone(),
    });
    let results = json!({ "deposits": deposits, "gas_paid_action": sends, "private_swap": swaps,
        "gas_paid_withdrawal": withdrawals, "in_flight": concurrent, "until_spendable": insert_waits,
        "economics": economics["grid"].clone() });
    let mut report = envelope(EXPERIMENT, parameters, results, &summary, charts);
    report["elapsed_s"] = json!(round3(elapsed));
    write_json(&args.out, &report)?;
    println!("{EXPERIMENT}: {summary}\nwrote {}", args.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{nothing_pending, simulated};

    #[test]
    fn spendable_only_when_nothing_is_pending_insertion() {
        let done = "pool 0x1 synced to block 9\nETH: spendable 1 ETH in 1 note(s) (largest 1 ETH, largest two 1 ETH), pending insertion 0 ETH\n";
        assert!(nothing_pending(done));
        let pending = "ETH: spendable 0 ETH in 0 note(s) (largest 0 ETH, largest two 0 ETH), pending insertion 1 ETH\n";
        assert!(!nothing_pending(pending));
        assert!(!nothing_pending("pool 0x1 synced to block 9\nno notes\n"));
    }

    #[test]
    fn a_simulation_counts_only_with_the_relayers_simulated_outcome() {
        let ok = "relayer quoted\n{\"outcome\":\"simulated\",\"gas_used\":469409,\"action_success\":true}\nerror: simulated only (--simulate-only): nothing was sent\n";
        assert!(simulated(ok));
        let reverted = "{\"outcome\":\"simulated\",\"gas_used\":1,\"action_success\":false}\n";
        assert!(!simulated(reverted));
        let refused = "{\"outcome\":\"refused\",\"reason\":\"Fee\"}\nerror: refused\n";
        assert!(!simulated(refused));
        assert!(!simulated("error: no wallet"));
    }
}
