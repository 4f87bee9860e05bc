//! `nox tx`: an anonymous paid transaction. The client asks an exit's relayer for its price
//! through the mixnet, proves a gas payment from the shielded pool to that relayer bound to the
//! exact action, sends the bundle through the mixnet to the same exit, and waits for the
//! receipt, which comes back through SURBs (docs/spec/relay.md). Chain reads (the wallet's pool
//! view) go through `--rpc`, normally a `nox client --rpc` endpoint, so through the mixnet too.

use std::path::PathBuf;
use std::time::Instant;

use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::SolValue;
use clap::{Args, Subcommand};
use nox_client::ClientHandle;
use nox_message::{RequestBody, Status};
use nox_relayer::{Outcome, Quote, RelayRequest, Submission};
use nox_sphinx::NodeId;
use nox_wallet::{SpendKind, SpendRequest};
use nox_zk::field;

use crate::client_cmd::TopologyArgs;
use crate::wallet_cmd::{self, ChainArgs, CmdResult, Ticker};

/// Largest relay answer expected (a quote or an outcome is a few hundred bytes).
const RELAY_REPLY_LEN: usize = 4096;

/// `nox tx …`
#[derive(Subcommand)]
pub enum TxCommand {
    /// Ask an exit's relayer for its current price (through the mixnet).
    Quote(QuoteArgs),
    /// Pay a relayer from the shielded pool for one action and have it submit the bundle.
    Send(Box<SendArgs>),
}

/// Which network and exit.
#[derive(Args, Clone)]
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

/// `nox tx quote`
#[derive(Args)]
pub struct QuoteArgs {
    /// A testnet directory (its topology).
    #[arg(long)]
    pub testnet: PathBuf,
    #[command(flatten)]
    pub mix: MixArgs,
}

/// `nox tx send`
#[derive(Args)]
pub struct SendArgs {
    /// Wallet and pool; `--testnet` also names the mixnet (its topology).
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub mix: MixArgs,
    /// The action's target.
    #[arg(long)]
    pub target: Address,
    /// The action's calldata (hex).
    #[arg(long, default_value = "0x")]
    pub data: Bytes,
    /// ERC-20 token to pay the fee in; ETH without it.
    #[arg(long)]
    pub asset: Option<Address>,
    /// Gas the action itself needs (the relayer adds the payment's and its margins).
    #[arg(long, default_value_t = 100_000)]
    pub action_gas: u64,
    /// Fee as a percentage of the quoted price (room for the base fee to rise meanwhile).
    #[arg(long, default_value_t = 150)]
    pub fee_percent: u32,
    /// A fixed fee instead (the asset's base unit).
    #[arg(long)]
    pub fee: Option<u128>,
    /// Submit even if the action reverts in simulation (the fee is paid either way).
    #[arg(long)]
    pub pay_on_revert: bool,
    /// Have the relayer simulate and price only.
    #[arg(long)]
    pub simulate_only: bool,
    /// Seconds the payment stays valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
}

/// Runs a `nox tx` command.
pub fn run(command: TxCommand) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        match command {
            TxCommand::Quote(a) => {
                let (client, exit) = connect(&a.testnet, &a.mix).await?;
                let quote = quote(&client, exit).await?;
                println!("{}", serde_json::to_string_pretty(&quote).map_err(|e| e.to_string())?);
                Ok(())
            }
            TxCommand::Send(a) => send(&a).await,
        }
    })
}

async fn connect(testnet: &std::path::Path, mix: &MixArgs) -> CmdResult<(ClientHandle, NodeId)> {
    let topology = TopologyArgs {
        testnet: Some(testnet.to_owned()),
        topology: None,
        directory: Vec::new(),
        authority: None,
        timeout_secs: mix.timeout_secs,
    };
    let client = crate::client_cmd::start(&topology, mix.cover_rate).await?;
    let exits = client.exits();
    let exit = match mix.exit {
        Some(i) => *exits.get(i).ok_or_else(|| format!("--exit {i}: the topology has {} exits", exits.len()))?,
        None => {
            let mut b = [0u8; 8];
            getrandom(&mut b);
            *exits.get(u64::from_le_bytes(b) as usize % exits.len().max(1)).ok_or("the topology has no exit")?
        }
    };
    Ok((client, exit))
}

fn getrandom(out: &mut [u8]) {
    use rand_core::{RngCore, SeedableRng};
    rand_chacha::ChaCha20Rng::from_os_rng().fill_bytes(out);
}

async fn relay(client: &ClientHandle, exit: NodeId, request: &RelayRequest) -> CmdResult<Vec<u8>> {
    let response = client
        .request_via(RequestBody::Relay(request.encode()), RELAY_REPLY_LEN, Some(exit))
        .await
        .map_err(|e| format!("through the mixnet: {e}"))?;
    if response.status != Status::Ok {
        return Err(format!("the exit answered {:?}: {}", response.status, String::from_utf8_lossy(&response.body)));
    }
    Ok(response.body)
}

async fn quote(client: &ClientHandle, exit: NodeId) -> CmdResult<Quote> {
    let body = relay(client, exit, &RelayRequest::Quote).await?;
    serde_json::from_slice(&body).map_err(|e| format!("the relayer's quote does not parse: {e}"))
}

async fn send(a: &SendArgs) -> CmdResult {
    let testnet = a.chain.pool.testnet.clone().ok_or("give --testnet (the mixnet and its pool)")?;
    let (client, exit) = connect(&testnet, &a.mix).await?;
    let started = Instant::now();
    let quote = quote(&client, exit).await?;
    let quoted_in = started.elapsed();
    let (seed, at, provider, view) = wallet_cmd::synced(&a.chain).await?;
    let (chain_id, now) = wallet_cmd::chain_context(&provider).await?;
    if quote.chain_id != chain_id || quote.pool != at.pool {
        return Err(format!(
            "the relayer serves pool {} on chain {}, the wallet's is {} on {chain_id}",
            quote.pool, quote.chain_id, at.pool
        ));
    }
    let asset = a.asset.unwrap_or(Address::ZERO);
    let fee = match a.fee {
        Some(fee) => fee,
        None => {
            let priced = quote.fee_for_action(asset, a.action_gas).ok_or("the relayer does not price this asset")?;
            let fee = priced * U256::from(a.fee_percent) / U256::from(100u64);
            u128::try_from(fee).map_err(|_| "the fee is above 2^128")?
        }
    };
    println!("relayer {} quoted in {:.1} s; paying {fee} of {}", quote.relayer, quoted_in.as_secs_f64(), asset);
    let deadline = now + a.valid_for;
    let (action_hash, _) = field::execution_hash(&a.target.0.0, &a.data, fee);
    let req = SpendRequest {
        asset: wallet_cmd::asset_word(asset),
        amount: fee,
        kind: SpendKind::Pay { relayer: quote.relayer.0.0, action_hash },
        chain_id,
        pool: at.pool.0.0,
        deadline,
    };
    let prepared = view.prepare_spend(&seed, &req).map_err(|e| e.to_string())?;
    let proving = Instant::now();
    let proof = wallet_cmd::prove_spend(&a.chain.wallet, &prepared)?;
    let proved_in = proving.elapsed();
    let spend = wallet_cmd::spend_struct(&proof, &prepared.public, asset, deadline)?;
    let bundle = nox_relayer::abi::Bundle {
        payment: at.pool,
        paymentData: Bytes::from(spend.abi_encode()),
        fee: U256::from(fee),
        action: nox_relayer::abi::Action { target: a.target, value: U256::ZERO, data: a.data.clone() },
    };
    let mut submission = Submission::new(chain_id, quote.executor, quote.relayer, bundle);
    submission.pay_on_revert = a.pay_on_revert;
    submission.simulate_only = a.simulate_only;
    let t = Ticker::start("sent through the mixnet; waiting for the relayer's answer");
    let sending = Instant::now();
    let answer = relay(&client, exit, &RelayRequest::Submit(Box::new(submission))).await;
    t.finish();
    let outcome: Outcome =
        serde_json::from_slice(&answer?).map_err(|e| format!("the relayer's answer does not parse: {e}"))?;
    let waited = sending.elapsed();
    println!("{}", serde_json::to_string(&outcome).map_err(|e| e.to_string())?);
    println!(
        "timing: quote {:.2} s, proof {:.2} s, submission to answer {:.2} s",
        quoted_in.as_secs_f64(),
        proved_in.as_secs_f64(),
        waited.as_secs_f64()
    );
    match outcome {
        Outcome::Included { action_success, tx_hash, block, .. } => {
            println!(
                "included in block {block} (tx {tx_hash}); the action {}; change {} after it is inserted",
                if action_success { "succeeded" } else { "reverted (the fee was paid)" },
                prepared.change_value
            );
            Ok(())
        }
        Outcome::Simulated { .. } => Ok(()),
        Outcome::Pending { tx_hash, detail } => Err(format!("not yet mined: {tx_hash} ({detail})")),
        Outcome::Refused { reason, detail, required_fee } => Err(format!(
            "refused ({reason:?}): {detail}{}",
            required_fee.map(|f| format!("; a fee of at least {f} would be accepted now")).unwrap_or_default()
        )),
    }
}
