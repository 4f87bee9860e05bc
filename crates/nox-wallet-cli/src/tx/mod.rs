//! `nox tx`'s session (issue 34, moved out of the binary's `tx_cmd.rs`): an anonymous paid
//! transaction. The command connects its mixnet client to an exit's relayer and resolves the
//! pool; from there this module takes the quote, checks it and the fee against this client's own
//! reading of the chain (`nox_wallet_io::fee_check`) and the user's ceiling, asks on a terminal,
//! syncs the wallet, proves one private transaction paying the relayer for the action (or for no
//! action: `nox wallet send/split/join/withdraw`), journals it, sends the bundle through the
//! mixnet and reports the outcome. A refusal proves, spends, sends and writes nothing.

use std::time::{Duration, Instant};

use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::DynProvider;
use clap::Args;
use nox_pay::adaptor::{Swap, Withdrawal};
use nox_pay::bounds::Ceiling;
use nox_pay::{Action, PayError, RelayClient};
use nox_relayer::{Outcome, Quote};
use nox_wallet::journal::{self, Entry};
use nox_wallet::units::Unit;
use nox_wallet::{PaymentAddress, PoolView, PreparedTransaction, Seed};
use nox_wallet_io::fee_check::{CheckedFee, FeeRequest, TokenPair, check_fee};

use crate::files::WalletArgs;
use crate::outcome::{Landed, NOT_CONFIRMED, Stop, report};
use crate::prove::{Ticker, prove_transaction};
use crate::session::{PoolAt, journal_recall};

pub use nox_pay::DEFAULT_FEE_PERCENT;

pub mod command;
pub use command::TxCommand;

/// How much to pay the relayer.
#[derive(Args, Clone, Debug)]
pub struct FeeArgs {
    /// Fee as a percentage of the quoted price (room for the base fee to rise by one block
    /// between the quote and the submission).
    #[arg(long, default_value_t = DEFAULT_FEE_PERCENT)]
    pub fee_percent: u32,
    /// A fixed fee instead (the asset's base unit).
    #[arg(long = "fee")]
    pub fixed: Option<u128>,
    /// Have the relayer simulate and price only.
    #[arg(long)]
    pub simulate_only: bool,
    /// The most this command may pay, in the fee asset: base units (`300000000000000`), or for
    /// ETH a decimal with a unit (`0.0003eth`, `300000gwei`). Without it: 3 × (600,000 + action
    /// gas) × this client's own max fee per gas, read from the chain through the mixnet.
    #[arg(long, value_parser = parse_max_fee)]
    pub max_fee: Option<U256>,
    /// Pay without asking for confirmation (asked only when stdin is a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

fn parse_max_fee(text: &str) -> Result<U256, nox_pay::bounds::AmountError> {
    nox_pay::bounds::parse_amount(text)
}

/// Which network and exit.
#[derive(Args, Clone, Debug)]
pub struct MixArgs {
    /// The exit (index in the topology's exit list); a random exit without it.
    #[arg(long)]
    pub exit: Option<usize>,
    /// Loopix λ_P cover rate while the command runs (packets per second; 0 = off).
    #[arg(long, default_value_t = 2.0)]
    pub cover_rate: f64,
    /// Seconds to wait for each answer (the relayer waits for inclusion before it answers).
    #[arg(long, default_value_t = 180)]
    pub timeout_secs: u64,
}

/// Why a `nox tx` step stopped; the `Display` texts are the command's messages.
#[derive(Debug, thiserror::Error)]
pub enum TxError {
    /// `--exit` past the topology's exits.
    #[error("--exit {index}: the topology has {exits} exits")]
    NoSuchExit {
        /// The index given.
        index: usize,
        /// How many exits there are.
        exits: usize,
    },
    /// A topology without exits.
    #[error("the topology has no exit")]
    NoExit,
    /// `--target` has no code but calldata was given (and no `--force`).
    #[error(
        "--target {0} has no code: a call with calldata to it would do nothing and still pay the fee (a typo?); \
         nothing was proved, spent or sent (--force sends it anyway)"
    )]
    NoCode(Address),
    /// `--simulate-only`: the relayer only priced the bundle.
    #[error("simulated only (--simulate-only): nothing was sent")]
    Simulated,
    /// The relayer refused the bundle.
    #[error(
        "refused ({reason:?}): {detail}{}",
        required_fee.map(|f| format!("; a fee of at least {f} would be accepted now")).unwrap_or_default()
    )]
    Refused {
        /// The relayer's reason.
        reason: nox_relayer::Reason,
        /// Its detail.
        detail: String,
        /// The least fee it would accept now, if that was the reason.
        required_fee: Option<U256>,
    },
}

impl From<TxError> for Stop {
    fn from(e: TxError) -> Self {
        Stop::Failed(e.to_string())
    }
}

/// The exit the session pins: `--exit i`, else the one `random` picks among `exits`.
pub fn pick_exit<T: Copy>(exits: &[T], chosen: Option<usize>, random: u64) -> Result<T, TxError> {
    match chosen {
        Some(index) => exits.get(index).copied().ok_or(TxError::NoSuchExit { index, exits: exits.len() }),
        None => exits.get((random % exits.len().max(1) as u64) as usize).copied().ok_or(TxError::NoExit),
    }
}

/// The fee asset as the messages name it.
pub fn asset_label(asset: Address) -> String {
    if asset.is_zero() { "ETH (wei)".into() } else { format!("token {asset}") }
}

/// Wei as a decimal number of ETH (no trailing zeros).
pub fn eth(wei: U256) -> String {
    let unit = U256::from(10u64).pow(U256::from(18u64));
    let frac = (wei % unit).to_string();
    let frac = format!("{}{frac}", "0".repeat(18usize.saturating_sub(frac.len())));
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() { format!("{}", wei / unit) } else { format!("{}.{frac}", wei / unit) }
}

/// The line that shows the checks passed: this client's own reading, the fee, its worth and the
/// ceiling (the L1 data fee named only where there is one).
pub fn checked_line(c: &CheckedFee, asset: Address) -> String {
    let data_fee =
        if c.own_data_fee.is_zero() { String::new() } else { format!(", L1 data fee {} wei", c.own_data_fee) };
    format!(
        "own reading: base fee {} wei, tip {} wei{data_fee}; the quote is within bounds; fee {} of {} (worth {} \
         ETH) under the ceiling {}",
        c.reading.base_fee,
        c.reading.priority_fee,
        c.fee,
        asset_label(asset),
        eth(c.value_wei),
        match c.ceiling {
            Ceiling::Explicit(max) => format!("{max} (--max-fee)"),
            Ceiling::Default { wei } => format!("{} ETH (default)", eth(wei)),
        }
    )
}

/// The smallest swap output accepted: `expected` less `slippage_bps` basis points (capped at
/// 100 %), rounded down.
pub fn min_out(expected: U256, slippage_bps: u32) -> U256 {
    expected * U256::from(10_000 - slippage_bps.min(10_000)) / U256::from(10_000u64)
}

/// The timing line: quote, proofs, submission to answer, and the relayer's own split when it
/// included the bundle.
pub fn timing_line(quoted_in: Duration, proved_in: Duration, waited: Duration, outcome: &Outcome) -> String {
    let relayer_side = match outcome {
        Outcome::Included { prepare_ms, inclusion_ms, .. } => {
            format!(" (relayer: checks and simulation {prepare_ms} ms, broadcast to receipt {inclusion_ms} ms)")
        }
        _ => String::new(),
    };
    format!(
        "timing: quote {:.2} s, proofs {:.2} s, submission to answer {:.2} s{relayer_side}",
        quoted_in.as_secs_f64(),
        proved_in.as_secs_f64(),
        waited.as_secs_f64()
    )
}

/// The relayer's quote and how long it took.
pub async fn timed_quote(relay: &RelayClient) -> Result<(Quote, Duration), Stop> {
    let started = Instant::now();
    let quote = relay.quote().await.map_err(|e| e.to_string())?;
    Ok((quote, started.elapsed()))
}

/// What the fee is for, known before the wallet is touched.
pub struct FeeFor<'a> {
    /// The fee asset (`Address::ZERO`: ETH).
    pub asset: Address,
    /// Gas the action is given (0: no action).
    pub action_gas: u64,
    /// The action's calldata length (the client's own figure of the L1 data fee is computed on
    /// the bundle that carries it).
    pub action_data_len: usize,
    /// The user's fee options.
    pub fee: &'a FeeArgs,
    /// What the action is, for the confirmation.
    pub what: String,
    /// What a re-run of the same command has in common with this one (the journal's key; the
    /// pool is added).
    pub intent: String,
}

/// A connected session: the pinned exit's relayer, its quote (checked), the fee chosen, the
/// wallet's synced view.
pub struct Session {
    /// The pinned exit's relayer.
    pub relay: RelayClient,
    /// Its quote.
    pub quote: Quote,
    /// The fee chosen.
    pub fee: u128,
    /// How long the quote took.
    pub quoted_in: Duration,
    /// The wallet's seed.
    pub seed: Seed,
    /// The pool.
    pub at: PoolAt,
    /// Reads (through the mixnet).
    pub provider: DynProvider,
    /// The synced view.
    pub view: PoolView,
    /// The chain's id.
    pub chain_id: u64,
    /// The latest block's time.
    pub now: u64,
    /// The journal's key for this command.
    pub intent: String,
}

/// Opens a session on a relayer whose quote is in: a re-run after a lost answer looks for the
/// earlier transaction first (landed: `Stop::Already`; pending: the `UNCONFIRMED` error), so
/// nothing is paid twice; nothing is proved, spent or written (the wallet is synced only after
/// this) unless the quote and the fee pass the client's own bounds and the user's ceiling, and
/// the user confirms on a terminal. `sync` opens and syncs the wallet (the command's, with its
/// messages).
#[allow(clippy::too_many_arguments)]
pub async fn open<S, F>(
    relay: RelayClient,
    (quote, quoted_in): (Quote, Duration),
    at: PoolAt,
    provider: DynProvider,
    wallet: &WalletArgs,
    pair: Option<TokenPair>,
    fee_for: &FeeFor<'_>,
    sync: S,
) -> Result<Session, Stop>
where
    S: FnOnce(PoolAt, DynProvider) -> F,
    F: std::future::Future<Output = Result<(Seed, PoolView), Stop>>,
{
    let (chain_id, now) = nox_wallet_io::chain::chain_context(&provider).await.map_err(|e| e.to_string())?;
    nox_wallet_io::fee_check::same_pool(&quote, chain_id, at.pool).map_err(|e| e.to_string())?;
    let intent = format!("{} in {}", fee_for.intent, at.pool);
    if let Some((tx_hash, block)) = journal_recall(wallet, &provider, at.pool, &intent).await? {
        return Err(Stop::Already { tx_hash, block });
    }
    let f = fee_for;
    let req = FeeRequest {
        asset: f.asset,
        action_gas: f.action_gas,
        action_data_len: f.action_data_len,
        fixed: f.fee.fixed,
        fee_percent: f.fee.fee_percent,
        max_fee: f.fee.max_fee,
    };
    let checked = check_fee(&quote, &provider, (chain_id, at.pool), pair, &req).await.map_err(|e| e.to_string())?;
    println!("{}", checked_line(&checked, f.asset));
    let question = format!(
        "pay {} of {} (worth {} ETH) to relayer {} for {}?",
        checked.fee,
        asset_label(f.asset),
        eth(checked.value_wei),
        quote.relayer,
        f.what
    );
    if !crate::prompt::confirmed_on_terminal(f.fee.yes, &question)? {
        return Err(NOT_CONFIRMED.into());
    }
    let (seed, view) = sync(at.clone(), provider.clone()).await?;
    Ok(Session { relay, quote, fee: checked.fee, quoted_in, seed, at, provider, view, chain_id, now, intent })
}

/// How the fee is chosen and what the relayer is asked.
pub struct PayOptions<'a> {
    /// The fee asset.
    pub asset: Address,
    /// The user's fee options.
    pub fee: &'a FeeArgs,
    /// Seconds the payment stays valid.
    pub valid_for: u64,
    /// Submit even if the action reverts in simulation.
    pub pay_on_revert: bool,
    /// Nullifiers of notes already spent inside the action (a swap's withdrawal).
    pub avoid: &'a [ark_bn254::Fr],
    /// Proof time spent before the payment (the action's own proof).
    pub earlier_proofs: Duration,
}

/// What the paid transaction makes besides the fee.
#[derive(Default)]
pub struct Makes {
    /// Shielded outputs besides the change.
    pub outputs: Vec<(PaymentAddress, u128)>,
    /// A join of two notes.
    pub join: bool,
    /// Value leaving the pool.
    pub public_out: u128,
    /// Its receiver.
    pub recipient: Address,
}

fn wallet_rng() -> rand_chacha_03::ChaCha20Rng {
    use rand_core_06::SeedableRng;
    rand_chacha_03::ChaCha20Rng::from_entropy()
}

/// Proves the transaction paying the session's relayer for `action` (and making `makes`),
/// journals it, sends the bundle through the mixnet and reports the outcome.
pub async fn pay_and_submit(
    s: &Session,
    w: &WalletArgs,
    o: &PayOptions<'_>,
    action: Action,
    makes: Makes,
) -> Result<Landed, Stop> {
    let fee = s.fee;
    println!(
        "relayer {} quoted in {:.1} s; paying {fee} base units of {}",
        s.quote.relayer,
        s.quoted_in.as_secs_f64(),
        asset_label(o.asset)
    );
    let payment = nox_pay::Payment {
        payee: nox_pay::Payee::of(&s.quote),
        asset: o.asset,
        fee,
        action,
        outputs: makes.outputs,
        join: makes.join,
        public_out: makes.public_out,
        recipient: makes.recipient,
        deadline: s.now + o.valid_for,
        avoid: o.avoid,
    };
    let prepared = payment.prepare(&s.view, &s.seed, &mut wallet_rng()).map_err(|e| match e {
        PayError::Wallet(e) => Stop::wallet(e),
        e => Stop::Failed(e.to_string()),
    })?;
    let proving = Instant::now();
    let proof = prove_transaction(w, &prepared)?;
    let proved_in = proving.elapsed() + o.earlier_proofs;
    let mut paid = payment.bundle(&prepared, &proof);
    paid.submission.pay_on_revert = o.pay_on_revert;
    paid.submission.simulate_only = o.fee.simulate_only;
    // Journaled before it leaves: if the answer is lost, a re-run finds this transaction (its
    // nullifiers) instead of paying a relayer again.
    let mut entry = Entry {
        intent: s.intent.clone(),
        tx_hash: None,
        nullifiers: Some(paid.nullifiers),
        deadline: Some(payment.deadline),
        relayer: Some(s.quote.relayer),
        from_block: s.view.last_block,
    };
    let dir = w.dir();
    if !o.fee.simulate_only {
        dir.journal_record(entry.clone()).map_err(|e| e.to_string())?;
    }
    let t = Ticker::start("sent through the mixnet; waiting for the relayer's answer");
    let sending = Instant::now();
    let answer = s.relay.submit(paid.submission).await;
    t.finish();
    let outcome = match answer {
        Ok(outcome) => outcome,
        Err(e) => return Err(Stop::Failed(journal::lost(&entry, &e.to_string()))),
    };
    match &outcome {
        Outcome::Pending { tx_hash, .. } => {
            entry.tx_hash = Some(*tx_hash);
            dir.journal_record(entry.clone()).map_err(|e| e.to_string())?;
        }
        _ => dir.journal_resolve(&entry.intent).map_err(|e| e.to_string())?,
    }
    let waited = sending.elapsed();
    println!("{}", serde_json::to_string(&outcome).map_err(|e| e.to_string())?);
    println!("{}", timing_line(s.quoted_in, proved_in, waited, &outcome));
    match outcome {
        Outcome::Included { action_success, tx_hash, block, gas_used, .. } => {
            if !payment.action.is_none() {
                println!("the action {}", if action_success { "succeeded" } else { "reverted (the fee was paid)" });
            }
            Ok(Landed {
                tx_hash,
                block,
                gas_used,
                fee,
                outputs: paid.outputs,
                spent: paid.inputs.iter().map(|i| i.value).collect(),
            })
        }
        Outcome::Simulated { .. } => Err(TxError::Simulated.into()),
        Outcome::Pending { detail, .. } => {
            Err(Stop::Failed(journal::lost(&entry, &format!("the relayer's answer: not yet mined, {detail}"))))
        }
        Outcome::Refused { reason, detail, required_fee } => {
            Err(TxError::Refused { reason, detail, required_fee }.into())
        }
    }
}

/// `nox tx send`'s call: refused before anything is proved if it has calldata and `target` has
/// no code (such a call does nothing and still pays the fee: a typo'd target), unless `force`.
pub async fn check_target(provider: &DynProvider, target: Address, data: &Bytes, force: bool) -> Result<(), Stop> {
    use alloy::providers::Provider;
    if data.is_empty() || force {
        return Ok(());
    }
    let code = provider.get_code_at(target).await.map_err(|e| format!("reading {target}'s code: {e}"))?;
    if code.is_empty() { Err(TxError::NoCode(target).into()) } else { Ok(()) }
}

/// The testnet's Uniswap v2 deployment a private swap goes through.
#[derive(Clone, Copy, Debug)]
pub struct SwapVenue {
    /// The router.
    pub router: Address,
    /// WETH.
    pub weth: Address,
    /// The token bought.
    pub token: Address,
    /// The pool's swap adaptor.
    pub adaptor: Address,
}

/// A private swap of `amount` wei through `venue` to `to`, on an open session: a withdrawal
/// transaction to the adaptor bound to the swap's parameters (`swapHash`) inside the action, and
/// a second transaction paying the relayer from other notes for the bundle whose action is the
/// adaptor's `swapExactIn`. Prints both reports.
#[allow(clippy::too_many_arguments)]
pub async fn swap(
    s: &Session,
    w: &WalletArgs,
    venue: SwapVenue,
    (amount, to): (u128, Address),
    (slippage_bps, action_gas, valid_for): (u32, u64, u64),
    fee: &FeeArgs,
    started: Instant,
) -> Result<(), Stop> {
    use nox_chain::defi::UniswapV2Router02;
    let router = UniswapV2Router02::new(venue.router, &s.provider);
    let amounts = router
        .getAmountsOut(U256::from(amount), vec![venue.weth, venue.token])
        .call()
        .await
        .map_err(|e| format!("quoting the swap: {e}"))?;
    let expected = *amounts.last().ok_or("empty quote")?;
    let min_out = min_out(expected, slippage_bps);
    println!("swapping {amount} wei for at least {min_out} NOX (quoted {expected}) to {to}");
    let withdrawal = Withdrawal {
        adaptor: venue.adaptor,
        chain_id: s.chain_id,
        pool: s.at.pool,
        asset: Address::ZERO,
        amount,
        swap: Swap {
            tokenOut: venue.token,
            amountOutMin: min_out,
            swapDeadline: U256::from(s.now + valid_for),
            recipient: to,
        },
        deadline: s.now + valid_for,
    };
    let prepared: PreparedTransaction =
        s.view.prepare_transaction(&s.seed, &withdrawal.request(), &mut wallet_rng()).map_err(Stop::wallet)?;
    let proving = Instant::now();
    let proof = prove_transaction(w, &prepared)?;
    let avoid: Vec<ark_bn254::Fr> = prepared.inputs.iter().map(|i| i.nullifier).collect();
    let o = PayOptions {
        asset: Address::ZERO,
        fee,
        valid_for,
        pay_on_revert: false,
        avoid: &avoid,
        earlier_proofs: proving.elapsed(),
    };
    let action = withdrawal.action(&prepared, &proof, action_gas);
    let unit = Unit::eth();
    let landed = pay_and_submit(s, w, &o, action, Makes::default()).await?;
    println!("the withdrawal inside the action:");
    let inner = Landed {
        tx_hash: landed.tx_hash,
        block: landed.block,
        gas_used: 0,
        fee: 0,
        outputs: prepared.outputs.clone(),
        spent: prepared.inputs.iter().map(|i| i.value).collect(),
    };
    report(&inner, &unit, started);
    println!("the payment:");
    report(&landed, &unit, started);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eth_is_exact_with_no_trailing_zeros() {
        assert_eq!(eth(U256::ZERO), "0");
        assert_eq!(eth(U256::from(1_000_000_000_000_000_000u128)), "1");
        assert_eq!(eth(U256::from(300_000_000_000_000u128)), "0.0003");
        assert_eq!(eth(U256::from(1_500_000_000_000_000_001u128)), "1.500000000000000001");
        assert_eq!(eth(U256::from(1u8)), "0.000000000000000001");
    }

    #[test]
    fn the_fee_asset_is_named_by_its_unit_or_its_address() {
        assert_eq!(asset_label(Address::ZERO), "ETH (wei)");
        let token = Address::repeat_byte(0xab);
        assert_eq!(asset_label(token), format!("token {token}"));
    }

    #[test]
    fn an_exit_is_the_one_asked_for_or_one_of_the_list() {
        let exits = [10u8, 11, 12];
        assert_eq!(pick_exit(&exits, Some(2), 0).unwrap(), 12);
        assert_eq!(pick_exit(&exits, Some(3), 0).unwrap_err().to_string(), "--exit 3: the topology has 3 exits");
        assert_eq!(pick_exit(&exits, None, 7).unwrap(), 11, "7 mod 3");
        assert_eq!(pick_exit::<u8>(&[], None, 7).unwrap_err().to_string(), "the topology has no exit");
    }

    #[test]
    fn slippage_lowers_the_accepted_output_and_is_capped() {
        assert_eq!(min_out(U256::from(10_000u64), 100), U256::from(9_900u64));
        assert_eq!(min_out(U256::from(999u64), 1), U256::from(998u64), "rounded down");
        assert_eq!(min_out(U256::from(10_000u64), 20_000), U256::ZERO);
    }

    #[test]
    fn a_refusal_names_the_fee_that_would_pass() {
        let e = TxError::Refused {
            reason: nox_relayer::Reason::Unprofitable,
            detail: "fee 5 under 9".into(),
            required_fee: Some(U256::from(9u8)),
        };
        assert_eq!(e.to_string(), "refused (Unprofitable): fee 5 under 9; a fee of at least 9 would be accepted now");
        let e = TxError::NoCode(Address::ZERO);
        assert!(e.to_string().starts_with(&format!("--target {} has no code", Address::ZERO)));
    }
}
