//! Running the user's `nox` commands and reading their output: a paid transaction's numbers,
//! a simulation's outcome, a wallet's pending insertions (and waiting until there are none),
//! a transaction hash.

use super::*;

/// Runs `nox <args>`; the output, or an error with it.
pub(super) fn nox(exe: &Path, args: &[String]) -> Result<String, BenchError> {
    let (success, text) = nox_status(exe, args)?;
    if success { Ok(text) } else { Err(err(format!("nox {}:\n{text}", args.join(" ")))) }
}

/// Runs `nox <args>`: whether it exited 0, and its output.
pub(super) fn nox_status(exe: &Path, args: &[String]) -> Result<(bool, String), BenchError> {
    let out = Command::new(exe).args(args).env("NOX_WALLET_PASSPHRASE", PASSPHRASE).output().map_err(err)?;
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    Ok((out.status.success(), text))
}

/// Whether a `nox tx … --simulate-only` run got its simulation: the relayer's `simulated`
/// outcome with the action succeeding. The command then exits non-zero ("nothing was sent"),
/// which is its documented behaviour for a simulation, not a failure of the run.
pub(super) fn simulated(text: &str) -> bool {
    text.lines()
        .filter(|l| l.starts_with("{\"outcome\""))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|o| o["outcome"] == "simulated" && o["action_success"] == true)
}

pub(super) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// The numbers of one paid transaction, from `nox tx`'s output.
pub(super) fn parse_paid(out: &str, wall_s: f64) -> Result<Value, BenchError> {
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

pub(super) fn stats(samples: &[Value], key: &str) -> Value {
    let mut v: Vec<f64> = samples.iter().filter_map(|s| s[key].as_f64()).filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    json!({ "p50": percentile(&v, 0.5).map(round3), "max": v.last().copied().map(round3), "n": v.len() })
}

/// The longest the bench waits for the exits' inserter to make a wallet's notes spendable.
pub(super) const SPENDABLE_WAIT: Duration = Duration::from_secs(180);

/// Polls `nox wallet balance` (through the mixnet) until none of the wallet's ETH is pending
/// insertion: the exits' relayers have inserted its notes.
pub(super) fn wait_spendable(exe: &Path, wallet: &str, testnet: &str, rpc: &str) -> Result<(), BenchError> {
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
pub(super) fn nothing_pending(out: &str) -> bool {
    out.lines()
        .find(|l| l.starts_with("ETH: spendable "))
        .and_then(|l| l.split("pending insertion ").nth(1))
        .is_some_and(|rest| rest.trim_end().trim_end_matches(" ETH").trim() == "0")
}

/// The `(tx 0x…)` hash in a `nox wallet` command's output.
pub(super) fn tx_hash(out: &str) -> Option<String> {
    let hash = out.split("(tx ").nth(1)?.get(..66)?;
    (hash.starts_with("0x") && hash[2..].chars().all(|c| c.is_ascii_hexdigit())).then(|| hash.to_owned())
}
