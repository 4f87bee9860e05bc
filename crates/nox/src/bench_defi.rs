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
//!   then the same path, the swap on the testnet's Uniswap v2.
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
    /// Output JSON.
    #[arg(long, default_value = "bench/data/defi.json")]
    pub out: PathBuf,
}

const EXPERIMENT: &str = "defi";
/// Anvil's development account 1 (account 0 deploys): deposits and insertions.
const USER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const PASSPHRASE: &str = "bench passphrase";
const ONE_ETH: u128 = 1_000_000_000_000_000_000;

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
    let out = Command::new(exe).args(args).env("NOX_WALLET_PASSPHRASE", PASSPHRASE).output().map_err(err)?;
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() { Ok(text) } else { Err(err(format!("nox {}:\n{text}", args.join(" ")))) }
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
    let base = 36_000 + (std::process::id() % 50) as u16 * 40;
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

    // Notes: three per repetition (a send spends one, a swap two).
    let mut deposits = Vec::new();
    for _ in 0..3 * reps {
        let t = Instant::now();
        nox(&exe, &with(&["wallet", "deposit"], &["--amount", &ONE_ETH.to_string(), "--key-file", &key]))?;
        deposits.push(json!({ "wall_s": round3(t.elapsed().as_secs_f64()) }));
    }
    let t = Instant::now();
    nox(&exe, &with(&["wallet", "insert"], &["--key-file", &key]))?;
    let insert_s = t.elapsed().as_secs_f64();

    let token = crate::testnet_chain::load(&dir).ok_or_else(|| err("no chain.json"))?.deployment.stake_token;
    // Warm-up, not measured: the wallet derives and caches the testnet spend proving key on its
    // first proof (a one-time cost), here with a simulate-only bundle that spends nothing.
    let t = Instant::now();
    nox(
        &exe,
        &with(
            &["tx", "send"],
            &["--exit", "0", "--simulate-only", "--target", &token.to_string(), "--data", "0x18160ddd"],
        ),
    )?;
    let warm_up_s = t.elapsed().as_secs_f64();
    let mut sends = Vec::new();
    let mut swaps = Vec::new();
    let cover = args.cover_rate.to_string();
    for i in 0..reps {
        let exit = "0".to_owned();
        let t = Instant::now();
        let out = nox(
            &exe,
            &with(
                &["tx", "send"],
                &[
                    "--exit",
                    &exit,
                    "--cover-rate",
                    &cover,
                    "--target",
                    &token.to_string(),
                    "--data",
                    "0x18160ddd",
                    "--action-gas",
                    "50000",
                ],
            ),
        )?;
        sends.push(parse_paid(&out, t.elapsed().as_secs_f64())?);
        let t = Instant::now();
        let to = format!("0x{:040x}", 0x5000 + i);
        let out = nox(
            &exe,
            &with(
                &["tx", "swap"],
                &["--exit", &exit, "--cover-rate", &cover, "--amount", &(ONE_ETH / 10).to_string(), "--to", &to],
            ),
        )?;
        swaps.push(parse_paid(&out, t.elapsed().as_secs_f64())?);
    }
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
    let summary = json!({
        "deposit_wall_s": stats(&deposits, "wall_s"),
        "gas_paid_action": summarise(&sends),
        "private_swap": summarise(&swaps),
        "insert_batch_wall_s": round3(insert_s),
    });
    let p50 = |v: &Value, k: &str| v[k]["p50"].as_f64().unwrap_or(f64::NAN);
    let bars = |label: &str, pick: &dyn Fn(&Value) -> f64| {
        json!({ "label": label, "x": ["gas-paid action", "private swap"],
            "y": [pick(&summary["gas_paid_action"]), pick(&summary["private_swap"])] })
    };
    let charts = vec![chart(
        "defi-latency",
        &format!(
            "Anonymous paid transaction, median seconds by part (Anvil, {block_time} s blocks, cover {} pps)",
            args.cover_rate
        ),
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
    )];
    let parameters = json!({
        "repetitions": reps, "block_time_s": block_time, "cover_rate_pps": args.cover_rate, "quick": args.quick,
        "testnet": "nox testnet up --nodes-per-layer 1 (3 node processes, Anvil with interval mining, the contracts, the shielded pool, Uniswap v2 NOX/WETH seeded 100 ETH / 200,000 NOX); every exit a funded relayer with the default policy (10 % margin at the max fee)",
        "client": "nox client --rpc (the wallet's chain reads and deposits go through the mixnet); nox wallet / nox tx as separate processes, proving with the testnet keys cached in the wallet",
        "actions": "gas-paid action: totalSupply() on the NOX token (--action-gas 50000, fee 150 % of the quote); private swap: 0.1 ETH for NOX to a fresh address (withdrawal proof + payment proof)",
        "testnet_up_s": round3(testnet_up_s),
        "warm_up_s": round3(warm_up_s),
        "warm_up": "one simulate-only `nox tx send` before the measured transactions: the wallet derives and caches the testnet spend proving key on its first proof (not a per-transaction cost)",
    });
    let results = json!({ "deposits": deposits, "gas_paid_action": sends, "private_swap": swaps, "insert_batch_wall_s": round3(insert_s) });
    let mut report = envelope(EXPERIMENT, parameters, results, &summary, charts);
    report["elapsed_s"] = json!(round3(elapsed));
    write_json(&args.out, &report)?;
    println!("{EXPERIMENT}: {summary}\nwrote {}", args.out.display());
    Ok(())
}
