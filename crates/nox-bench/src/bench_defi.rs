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

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bench::{BenchError, write_json};
use crate::bench_common::{chart, envelope, err, percentile, round3};

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

/// Runs `nox <args>`; the output, or an error with it.
fn nox(exe: &Path, args: &[String]) -> Result<String, BenchError> {
    let (success, text) = nox_status(exe, args)?;
    if success { Ok(text) } else { Err(err(format!("nox {}:\n{text}", args.join(" ")))) }
}

/// Runs `nox <args>`: whether it exited 0, and its output.
fn nox_status(exe: &Path, args: &[String]) -> Result<(bool, String), BenchError> {
    let out = Command::new(exe).args(args).env("NOX_WALLET_PASSPHRASE", PASSPHRASE).output().map_err(err)?;
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    Ok((out.status.success(), text))
}

/// Whether a `nox tx … --simulate-only` run got its simulation: the relayer's `simulated`
/// outcome with the action succeeding. The command then exits non-zero ("nothing was sent"),
/// which is its documented behaviour for a simulation, not a failure of the run.
fn simulated(text: &str) -> bool {
    text.lines()
        .filter(|l| l.starts_with("{\"outcome\""))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|o| o["outcome"] == "simulated" && o["action_success"] == true)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// The numbers of one paid transaction, from `nox tx`'s output.
fn parse_paid(out: &str, wall_s: f64) -> Result<Value, BenchError> {
    let outcome: Value = out
        .lines()
        .find(|l| l.starts_with("{\"outcome\""))
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| err(format!("no outcome in:\n{out}")))?;
    if outcome["outcome"] != "included" || outcome["action_success"] != true {
        return Err(err(format!("not included with success:\n{out}")));
    }
    let timing = out.lines().find(|l| l.starts_with("timing:")).ok_or_else(|| err(format!("no timing in:\n{out}")))?;
    let number_after = |label: &str| -> Option<f64> {
        timing.split(label).nth(1)?.split_whitespace().next()?.trim_end_matches(',').parse().ok()
    };
    let hex = |v: &Value| -> f64 {
        v.as_str()
            .and_then(|s| u128::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .map_or(f64::NAN, |x| x as f64)
    };
    let gas_used = outcome["gas_used"].as_f64().unwrap_or(f64::NAN);
    let price = hex(&outcome["effective_gas_price"]);
    let fee = hex(&outcome["fee"]);
    let answer_s = number_after("submission to answer ").unwrap_or(f64::NAN);
    let prepare_ms = outcome["prepare_ms"].as_f64().unwrap_or(f64::NAN);
    let inclusion_ms = outcome["inclusion_ms"].as_f64().unwrap_or(f64::NAN);
    Ok(json!({
        "wall_s": round3(wall_s),
        "quote_s": number_after("quote "),
        "proofs_s": number_after("proofs "),
        "submission_to_answer_s": answer_s,
        "relayer_prepare_ms": prepare_ms,
        "relayer_inclusion_ms": inclusion_ms,
        "mixnet_and_queueing_s": round3(answer_s - (prepare_ms + inclusion_ms) / 1000.0),
        "gas_used": gas_used,
        "gas_limit": outcome["gas_limit"],
        "effective_gas_price_wei": price,
        "fee_wei": fee,
        "fee_over_gas_cost": round3(fee / (gas_used * price)),
        "bumps": outcome["bumps"],
        "block": outcome["block"],
    }))
}

fn stats(samples: &[Value], key: &str) -> Value {
    let mut v: Vec<f64> = samples.iter().filter_map(|s| s[key].as_f64()).filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    json!({ "p50": percentile(&v, 0.5).map(round3), "max": v.last().copied().map(round3), "n": v.len() })
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

/// The longest the bench waits for the exits' inserter to make a wallet's notes spendable.
const SPENDABLE_WAIT: Duration = Duration::from_secs(180);

/// Polls `nox wallet balance` (through the mixnet) until none of the wallet's ETH is pending
/// insertion: the exits' relayers have inserted its notes.
fn wait_spendable(exe: &Path, wallet: &str, testnet: &str, rpc: &str) -> Result<(), BenchError> {
    let deadline = Instant::now() + SPENDABLE_WAIT;
    let args = strings(&["wallet", "balance", "--wallet", wallet, "--testnet", testnet, "--rpc", rpc]);
    loop {
        let out = nox(exe, &args)?;
        if nothing_pending(&out) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(err(format!(
                "{wallet}: notes still pending insertion after {} s (no exit inserted them):\n{out}",
                SPENDABLE_WAIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Whether `nox wallet balance` shows ETH with nothing pending insertion.
fn nothing_pending(out: &str) -> bool {
    out.lines()
        .find(|l| l.starts_with("ETH: spendable "))
        .and_then(|l| l.split("pending insertion ").nth(1))
        .is_some_and(|rest| rest.trim_end().trim_end_matches(" ETH").trim() == "0")
}

/// The `(tx 0x…)` hash in a `nox wallet` command's output.
fn tx_hash(out: &str) -> Option<String> {
    let hash = out.split("(tx ").nth(1)?.get(..66)?;
    (hash.starts_with("0x") && hash[2..].chars().all(|c| c.is_ascii_hexdigit())).then(|| hash.to_owned())
}

/// The gas a mined transaction used.
async fn gas_of(rpc: &str, hash: &str) -> Result<u64, BenchError> {
    use alloy::providers::{Provider, ProviderBuilder};
    let provider = ProviderBuilder::new().connect_http(rpc.parse().map_err(err)?);
    let hash: alloy::primitives::B256 = hash.parse().map_err(err)?;
    let receipt = provider.get_transaction_receipt(hash).await.map_err(err)?.ok_or_else(|| err("no receipt"))?;
    Ok(receipt.gas_used)
}

/// Gas of the public equivalents, sent on the same chain by an account with no privacy.
async fn public_baselines(
    rpc: &str,
    defi: &nox_chain::defi::DefiDeployment,
    token: alloy::primitives::Address,
    deposits: &[String],
) -> Result<Value, BenchError> {
    use alloy::network::TransactionBuilder;
    use alloy::primitives::{Address, Bytes, U256};
    use alloy::providers::Provider;
    use alloy::rpc::types::TransactionRequest;
    let key = nox_chain::deploy::signer(PUBLIC_KEY).map_err(err)?;
    let provider = nox_chain::deploy::wallet_provider(rpc, &key).map_err(err)?;
    let fresh = Address::from([0x7a; 20]);
    let tenth = U256::from(ONE_ETH / 10);
    let now = provider
        .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
        .await
        .map_err(err)?
        .ok_or_else(|| err("no latest block"))?
        .header
        .timestamp;
    let transfer = TransactionRequest::default().with_to(fresh).with_value(tenth);
    let call = TransactionRequest::default().with_to(token).with_input(Bytes::from_static(&[0x18, 0x16, 0x0d, 0xdd]));
    let router = nox_chain::defi::UniswapV2Router02::new(defi.router, &provider);
    let swap = router
        .swapExactETHForTokens(U256::ZERO, vec![defi.weth, defi.token], key.address(), U256::from(now + 600))
        .value(tenth)
        .into_transaction_request();
    let mut gas = Vec::new();
    for tx in [transfer, call, swap] {
        let receipt = provider.send_transaction(tx).await.map_err(err)?.get_receipt().await.map_err(err)?;
        if !receipt.status() {
            return Err(err("a public baseline transaction reverted"));
        }
        gas.push(receipt.gas_used);
    }
    let nox = nox_chain::bindings::NoxStakeToken::new(defi.token, &provider);
    let receipt =
        nox.transfer(fresh, U256::from(1_000u64)).send().await.map_err(err)?.get_receipt().await.map_err(err)?;
    let mut deposit_gas = Vec::new();
    for hash in deposits {
        deposit_gas.push(gas_of(rpc, hash).await? as f64);
    }
    deposit_gas.sort_by(f64::total_cmp);
    Ok(json!({ "eth_transfer": gas[0], "call_tx": gas[1], "uniswap_swap": gas[2], "erc20_transfer": receipt.gas_used,
        "deposit_p50": percentile(&deposit_gas, 0.5) }))
}

/// Relayer economics from measured gas, with the relayer's pricing rule: the least fee it
/// accepts is `(1 + margin) × gas_limit × max_fee`, with `gas_limit = (gas + ⌈64·action_gas/63⌉)
/// × (1 + extra) + 10,000` (`price::gas_limit`; here the whole measured gas stands for the
/// payment part and the action's bound gas for 0, which understates the limit by action_gas/63)
/// and `max_fee = next base fee × (1 + headroom) + tip`; it then pays `gas × (base fee
/// + tip)`.
fn economics(ops: &[(&str, f64)]) -> Value {
    let policy = nox_relayer::Policy::default();
    let tip_gwei = policy.priority_fee_wei as f64 / 1e9;
    let headroom = policy.base_fee_headroom_bps as f64 / 10_000.0;
    let margin = policy.margin_bps as f64 / 10_000.0;
    let client = f64::from(nox_pay::DEFAULT_FEE_PERCENT) / 100.0;
    let costs_per_month = [50.0, 300.0];
    let mut grid = Vec::new();
    for (op, gas) in ops {
        let gas_limit = nox_relayer::price::gas_limit(*gas as u64, 0, policy.gas_extra_bps) as f64;
        for eth_usd in [2_000.0, 3_000.0, 5_000.0] {
            for gas_gwei in [1.0, 10.0, 50.0] {
                let base = (gas_gwei - tip_gwei).max(0.0);
                let paid_gwei = base + tip_gwei;
                let max_fee = base * (1.0 + headroom) + tip_gwei;
                let cost = gas * paid_gwei * 1e-9;
                let min_fee = (1.0 + margin) * gas_limit * max_fee * 1e-9;
                let default_fee = client * min_fee;
                let profit_min = (min_fee - cost) * eth_usd;
                let profit_default = (default_fee - cost) * eth_usd;
                grid.push(json!({
                    "operation": op, "gas_used": gas, "gas_limit": gas_limit, "eth_usd": eth_usd, "gas_gwei": paid_gwei,
                    "gas_cost_usd": round3(cost * eth_usd),
                    "least_fee_usd": round3(min_fee * eth_usd), "default_fee_usd": round3(default_fee * eth_usd),
                    "profit_per_tx_usd_at_least_fee": round3(profit_min),
                    "profit_per_tx_usd_at_default_fee": round3(profit_default),
                    "realised_margin_at_least_fee": round3(min_fee / cost - 1.0),
                    "break_even_tx_per_day": costs_per_month.iter().map(|m| round3(m / 30.0 / profit_min)).collect::<Vec<_>>(),
                    "monthly_profit_usd_100_tx_per_day_at_least_fee": round3(profit_min * 100.0 * 30.0),
                }));
            }
        }
    }
    json!({
        "grid": grid,
        "assumptions": {
            "gas": "the medians measured in this run (whole bundle, as the relayer pays it)",
            "gas_price": format!("gas price = base fee + the relayer's tip ({tip_gwei} gwei); the base fee stays put between quote and inclusion"),
            "least_fee": format!("(1 + {margin}) × gas_limit × max_fee: the relayer's own rule (margin at the max fee it sets, max fee = base × {} + tip, gas limit = gas × 64/63 × {} + 10,000)", 1.0 + headroom, 1.0 + policy.gas_extra_bps as f64 / 10_000.0),
            "default_fee": format!("{} % of the quote (nox tx's default)", nox_pay::DEFAULT_FEE_PERCENT),
            "infrastructure": "break-even at $50/month (a VPS and a hosted RPC's free tier, as the report) and $300/month (with an own full node); the relayer's ETH float and its price risk are not counted",
        },
    })
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
