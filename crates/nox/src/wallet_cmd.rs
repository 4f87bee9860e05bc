//! `nox wallet`: the shielded-pool wallet on the command line (issue 12; formats in
//! docs/spec/notes.md). The core is `nox-wallet` (pure); this file adds the disk (files sealed
//! with the passphrase, written atomically with mode 0600), the chain (the pool's events read in
//! pages, transactions sent with alloy) and the prover's progress.
//!
//! Every chain read (and a deposit's or withdrawal's raw transaction) goes through the mixnet
//! (issue 29 item 9, issue 35): through `--rpc`, a `nox client --rpc` endpoint, or, without it,
//! through an in-process mixnet client of the `--testnet`'s topology. A direct read needs an
//! explicit `--direct-rpc URL`, and the command then warns that it reads directly. The URL in
//! the testnet's chain.json is never used for reads.

use std::{
    io::IsTerminal,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, B256, Bytes, U256},
    providers::{DynProvider, Provider, ProviderBuilder},
    rpc::types::TransactionRequest,
    sol_types::SolValue,
};
use ark_bn254::Fr;
use clap::{Args, Subcommand};
use nox_chain::pool::{IERC20, ShieldedPool, Spend};
use nox_wallet::{
    PoolView, Seed, SpendKind, SpendRequest,
    file::{self, KdfParams},
};
use nox_zk::field;
use rand_core_06::SeedableRng;
use zeroize::Zeroizing;

/// `nox wallet …`
#[derive(Subcommand)]
pub enum WalletCommand {
    /// Create a wallet: a fresh seed sealed under the passphrase; prints the payment address.
    New(WalletArgs),
    /// Print the wallet's payment address (`noxpay:…`), what a payer needs.
    Address(WalletArgs),
    /// Read the pool's new events and print the balance of every asset.
    Balance(ChainArgs),
    /// Deposit into the pool from an Ethereum account (public: the account, asset and amount
    /// are visible; the note it creates is not linkable to its later spends).
    Deposit(DepositArgs),
    /// Withdraw from the pool to an address, proving ownership of a note in zero knowledge.
    Withdraw(WithdrawArgs),
    /// Prove a gas payment for one action and write the BatchExecutor bundle for a relayer.
    Pay(PayArgs),
    /// Insert the pool's queued commitments into its tree (a batch of up to 16, proved here):
    /// needed before new notes are spendable. Anyone may do it; it costs gas.
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
    /// The ShieldedPool address (overrides the testnet's).
    #[arg(long)]
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

/// `nox wallet deposit`
#[derive(Args)]
pub struct DepositArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// Amount in the asset's base unit (wei for ETH).
    #[arg(long)]
    pub amount: u128,
    /// ERC-20 token address; ETH without it.
    #[arg(long)]
    pub asset: Option<Address>,
    /// Make the note for another wallet (`noxpay:…`); this wallet's own address without it.
    #[arg(long)]
    pub to: Option<String>,
    /// File with the hex private key of the paying Ethereum account.
    #[arg(long)]
    pub key_file: PathBuf,
}

/// `nox wallet withdraw`
#[derive(Args)]
pub struct WithdrawArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// Amount in the asset's base unit.
    #[arg(long)]
    pub amount: u128,
    /// ERC-20 token address; ETH without it.
    #[arg(long)]
    pub asset: Option<Address>,
    /// Recipient address.
    #[arg(long)]
    pub to: Address,
    /// File with the hex private key of the account that submits (and pays gas for) the
    /// withdrawal; a fresh account keeps the withdrawal unlinked from the depositor.
    #[arg(long)]
    pub key_file: PathBuf,
    /// Seconds the proof stays valid.
    #[arg(long, default_value_t = 600)]
    pub valid_for: u64,
}

/// `nox wallet pay`
#[derive(Args)]
pub struct PayArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// The BatchExecutor the bundle goes to (the testnet's without it).
    #[arg(long)]
    pub executor: Option<Address>,
    /// The relayer that will submit the bundle (its `msg.sender`): the payment credits it only.
    #[arg(long)]
    pub relayer: Address,
    /// Fee in the asset's base unit.
    #[arg(long)]
    pub fee: u128,
    /// ERC-20 token address for the fee; ETH without it.
    #[arg(long)]
    pub asset: Option<Address>,
    /// The action's target.
    #[arg(long)]
    pub target: Address,
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
        WalletCommand::Address(w) => {
            let seed = open_seed(&w)?;
            println!("{}", seed.address().map_err(|e| e.to_string())?);
            Ok(())
        }
        WalletCommand::Balance(c) => runtime.block_on(balance(&c)),
        WalletCommand::Deposit(a) => runtime.block_on(deposit(&a)),
        WalletCommand::Withdraw(a) => runtime.block_on(withdraw(&a)),
        WalletCommand::Pay(a) => runtime.block_on(pay(&a)),
        WalletCommand::Insert(a) => runtime.block_on(insert(&a)),
    }
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
    // A fresh O_EXCL temporary file, never an existing file's mode (nox_keystore).
    nox_keystore::write_private_file(path, bytes).map_err(|e| e.to_string())
}

fn key_path(w: &WalletArgs) -> PathBuf {
    w.wallet.join("wallet.key")
}

fn state_path(w: &WalletArgs) -> PathBuf {
    w.wallet.join("wallet.state")
}

fn new(w: &WalletArgs) -> CmdResult {
    let path = key_path(w);
    if path.exists() {
        return Err(format!("{} exists: refusing to overwrite a wallet", path.display()));
    }
    let pass = passphrase(w)?;
    std::fs::create_dir_all(&w.wallet).map_err(|e| format!("{}: {e}", w.wallet.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&w.wallet, std::fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;
    }
    let mut rng = os_rng();
    let seed = Seed::random(&mut rng);
    let sealed = file::seal_seed(&seed, pass.as_bytes(), KdfParams::default(), &mut rng).map_err(|e| e.to_string())?;
    write_private(&path, &sealed)?;
    println!("wrote {}", path.display());
    println!("{}", seed.address().map_err(|e| e.to_string())?);
    Ok(())
}

fn open_seed(w: &WalletArgs) -> CmdResult<Seed> {
    let path = key_path(w);
    let bytes =
        std::fs::read(&path).map_err(|e| format!("{}: {e} (create one with `nox wallet new`)", path.display()))?;
    file::open_seed(&bytes, passphrase(w)?.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}

fn load_view(w: &WalletArgs, seed: &Seed, from_block: u64) -> CmdResult<PoolView> {
    let path = state_path(w);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let plain = file::open_state(seed, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            PoolView::from_json(&plain).map_err(|e| format!("{}: {e} (delete it to rescan)", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut view = PoolView::new();
            view.last_block = from_block.saturating_sub(1);
            Ok(view)
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn save_view(w: &WalletArgs, seed: &Seed, view: &PoolView) -> CmdResult {
    let plain = Zeroizing::new(view.to_json().map_err(|e| e.to_string())?);
    let sealed = file::seal_state(seed, &plain, &mut os_rng()).map_err(|e| e.to_string())?;
    write_private(&state_path(w), &sealed)
}

fn read_key_file(path: &Path) -> CmdResult<nox_chain::PrivateKeySigner> {
    let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?);
    nox_chain::deploy::signer(&text).map_err(|e| format!("{}: {e}", path.display()))
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
    let client = match (mixnet, &p.testnet) {
        (Some(client), _) => client.clone(),
        (None, Some(dir)) => {
            let topology = crate::client_cmd::TopologyArgs {
                testnet: Some(dir.clone()),
                topology: None,
                directory: Vec::new(),
                authority: None,
                timeout_secs: MIXNET_READ_TIMEOUT_S,
                transport: crate::client_cmd::LinkTransport::Tcp,
            };
            crate::client_cmd::start(&topology, MIXNET_READ_COVER_RATE).await?
        }
        (None, None) => {
            return Err("no way to read the chain privately: give --testnet <dir> (the command reads through its own \
                        mixnet client), or --rpc <URL> of a `nox client --rpc` daemon (start one with `nox client \
                        --testnet <dir> --rpc 127.0.0.1:8645`); --direct-rpc <URL> reads directly, not privately"
                .into());
        }
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| format!("local endpoint: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(nox_client::serve_rpc(listener, client, nox_client::RpcConfig::default()));
    eprintln!("reading the chain through the mixnet (an in-process client; endpoint http://{addr})");
    Ok(format!("http://{addr}"))
}

pub(crate) async fn resolve(p: &PoolArgs, mixnet: Option<&nox_client::ClientHandle>) -> CmdResult<PoolAt> {
    let info = match &p.testnet {
        Some(dir) => Some(
            nox_testnet::chain::load(dir)
                .ok_or_else(|| format!("{}: no chain.json (is the testnet up?)", dir.display()))?,
        ),
        None => None,
    };
    let pools = info.as_ref().and_then(|i| i.pool.clone());
    let pool = p.pool.or(pools.as_ref().map(|d| d.pool)).ok_or("give --pool or a --testnet with a pool")?;
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

/// Applies the pool's events since the view's last block (nox_chain::pool_sync).
async fn sync(provider: &DynProvider, at: &PoolAt, seed: &Seed, view: &mut PoolView) -> CmdResult<u64> {
    nox_chain::pool_sync::sync(provider, at.pool, at.from_block, seed, view)
        .await
        .map_err(|e| crate::daemon_hint::explain(&at.rpc, &e.to_string()))
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
    let mut view = load_view(&c.wallet, &seed, at.from_block)?;
    sync(provider, at, &seed, &mut view).await?;
    save_view(&c.wallet, &seed, &view)?;
    Ok((seed, view))
}

pub(crate) fn asset_name(a: &Fr) -> String {
    if *a == Fr::from(0u64) {
        "ETH".into()
    } else {
        let w = field::to_be32(a);
        format!("token 0x{}", hex::encode(&w[12..]))
    }
}

async fn balance(c: &ChainArgs) -> CmdResult {
    let (_, at, _, view) = synced(c).await?;
    println!("pool {} synced to block {}", at.pool, view.last_block);
    let assets = view.assets();
    if assets.is_empty() {
        println!("no notes");
    }
    for a in assets {
        let b = view.balance(&a);
        println!(
            "{}: spendable {} (largest note {}), pending insertion {}",
            asset_name(&a),
            b.spendable,
            b.largest,
            b.pending
        );
    }
    let queued = view.queued().count();
    if queued > 0 {
        println!("{queued} commitment(s) queued for the next batch insertion (`nox wallet insert`)");
    }
    Ok(())
}

async fn send(
    provider: &DynProvider,
    tx: TransactionRequest,
    what: &str,
) -> CmdResult<alloy::rpc::types::TransactionReceipt> {
    let pending = provider.send_transaction(tx).await.map_err(|e| format!("{what}: {e}"))?;
    let receipt = pending
        .with_timeout(Some(Duration::from_secs(120)))
        .get_receipt()
        .await
        .map_err(|e| format!("{what}: waiting for the receipt: {e}"))?;
    if !receipt.status() {
        return Err(format!("{what}: transaction {} reverted", receipt.transaction_hash));
    }
    Ok(receipt)
}

async fn deposit(a: &DepositArgs) -> CmdResult {
    let seed = open_seed(&a.chain.wallet)?;
    let at = resolve(&a.chain.pool, None).await?;
    let to = match &a.to {
        Some(s) => s.parse().map_err(|e: nox_wallet::WalletError| e.to_string())?,
        None => seed.address().map_err(|e| e.to_string())?,
    };
    if a.amount == 0 {
        return Err("the amount must be positive".into());
    }
    let asset = a.asset.unwrap_or(Address::ZERO);
    let asset_fr = asset_word(asset);
    let mut rng = os_rng();
    let note = nox_zk::Note::new(a.amount, asset_fr, to.owner, &mut rng);
    let memo = nox_wallet::memo::seal(&to.viewing, &asset_fr, a.amount, &note.blinding, &mut rng)
        .ok_or("the recipient's viewing key is invalid")?;
    let inner = U256::from_be_bytes(field::to_be32(&note.inner().map_err(|e| e.to_string())?));
    let signer = read_key_file(&a.key_file)?;
    let provider = nox_chain::deploy::wallet_provider(&at.rpc, &signer).map_err(|e| e.to_string())?;
    let pool = ShieldedPool::new(at.pool, &provider);
    let amount = U256::from(a.amount);
    if asset != Address::ZERO {
        let token = IERC20::new(asset, &provider);
        let tx = token.approve(at.pool, amount).into_transaction_request();
        send(&provider, tx, "approving the pool").await?;
    }
    let call = pool.deposit(asset, amount, inner, Bytes::from(memo.to_vec()));
    let tx = if asset == Address::ZERO { call.value(amount) } else { call }.into_transaction_request();
    let receipt = send(&provider, tx, "deposit").await?;
    let queue_index = receipt
        .inner
        .logs()
        .iter()
        .find_map(|l| l.log_decode::<ShieldedPool::Deposited>().ok())
        .map(|l| l.inner.data.queueIndex);
    println!(
        "deposited {} of {} in block {} (tx {}), queue index {}",
        a.amount,
        asset_name(&asset_fr),
        receipt.block_number.unwrap_or_default(),
        receipt.transaction_hash,
        queue_index.map_or("?".into(), |q| q.to_string())
    );
    println!("the note is spendable once its batch is inserted (`nox wallet insert`)");
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

type ProvingKey = nox_zk::groth16::ProvingKey<ark_bn254::Bn254>;
type VerifyingKey = nox_zk::groth16::VerifyingKey<ark_bn254::Bn254>;
type KeySetup = fn() -> Result<(ProvingKey, VerifyingKey), nox_zk::ZkError>;

/// A circuit's proving key, cached in the wallet directory after the first use.
///
/// TESTNET: these are the `testnet_setup()` keys of `nox_zk`, whose randomness is public; a
/// deployment with value uses keys from `nox zk setup` and verifiers generated from them.
fn cached_key(w: &WalletArgs, file: &str, what: &str, setup: KeySetup) -> CmdResult<ProvingKey> {
    use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
    let path = w.wallet.join(file);
    if let Ok(bytes) = std::fs::read(&path)
        && let Ok(pk) = nox_zk::groth16::ProvingKey::deserialize_compressed_unchecked(&bytes[..])
    {
        return Ok(pk);
    }
    let t = Ticker::start(&format!("deriving the testnet {what} proving key (first use; cached afterwards)"));
    let (pk, _) = setup().map_err(|e| e.to_string())?;
    t.finish();
    let mut bytes = Vec::new();
    pk.serialize_compressed(&mut bytes).map_err(|e| e.to_string())?;
    write_private(&path, &bytes)?;
    Ok(pk)
}

fn spend_keys(w: &WalletArgs) -> CmdResult<ProvingKey> {
    cached_key(w, "testnet-spend.pk", "spend", nox_zk::groth16::testnet_setup)
}

fn insert_keys(w: &WalletArgs) -> CmdResult<ProvingKey> {
    cached_key(w, "testnet-insert.pk", "insertion", nox_zk::insert::testnet_setup)
}

/// Proves a prepared spend (checked locally before it is sent anywhere).
pub(crate) fn prove_spend(w: &WalletArgs, prepared: &nox_wallet::PreparedSpend) -> CmdResult<[u8; 256]> {
    let pk = spend_keys(w)?;
    let t = Ticker::start(&format!("proving the spend ({} constraints)", nox_zk_constraints()));
    let proof = nox_zk::groth16::prove(&pk, &prepared.public, &prepared.witness, &mut os_rng())
        .map_err(|e| format!("proving: {e}"))?;
    t.finish();
    nox_zk::groth16::verify(&pk.vk, &prepared.public, &proof)
        .map_err(|e| format!("the new proof does not verify: {e}"))?;
    Ok(nox_zk::groth16::proof_to_evm(&proof))
}

fn nox_zk_constraints() -> String {
    nox_zk::constraint_count().map_or("?".into(), |(c, _, _)| c.to_string())
}

pub(crate) fn spend_struct(
    proof: &[u8; 256],
    p: &nox_zk::PublicInputs,
    asset: Address,
    deadline: u64,
) -> CmdResult<Spend> {
    // nox_pay's Spend and the pool binding's are the same ABI type (nox-relayer's tests/abi.rs).
    let spend = nox_pay::bundle::spend_struct(proof, p, asset, deadline);
    Spend::abi_decode(&spend.abi_encode()).map_err(|e| format!("re-encoding the spend: {e}"))
}

pub(crate) async fn chain_context(provider: &DynProvider) -> CmdResult<(u64, u64)> {
    let chain_id = provider.get_chain_id().await.map_err(|e| e.to_string())?;
    let block = provider
        .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no latest block")?;
    Ok((chain_id, block.header.timestamp))
}

async fn withdraw(a: &WithdrawArgs) -> CmdResult {
    let (seed, at, provider, view) = synced(&a.chain).await?;
    let (chain_id, now) = chain_context(&provider).await?;
    let asset = a.asset.unwrap_or(Address::ZERO);
    let deadline = now + a.valid_for;
    let req = SpendRequest {
        asset: asset_word(asset),
        amount: a.amount,
        kind: SpendKind::Withdraw { recipient: a.to.0.0, action_hash: [0; 32] },
        chain_id,
        pool: at.pool.0.0,
        deadline,
    };
    let prepared = view.prepare_spend(&seed, &req).map_err(|e| e.to_string())?;
    let proof = prove_spend(&a.chain.wallet, &prepared)?;
    let spend = spend_struct(&proof, &prepared.public, asset, deadline)?;
    let signer = read_key_file(&a.key_file)?;
    let sender = nox_chain::deploy::wallet_provider(&at.rpc, &signer).map_err(|e| e.to_string())?;
    let pool = ShieldedPool::new(at.pool, &sender);
    let tx = pool.withdraw(spend, a.to, B256::ZERO).into_transaction_request();
    let receipt = send(&sender, tx, "withdraw").await?;
    println!(
        "withdrew {} of {} to {} in block {} (tx {}); change {} pending insertion",
        a.amount,
        asset_name(&req.asset),
        a.to,
        receipt.block_number.unwrap_or_default(),
        receipt.transaction_hash,
        prepared.change_value
    );
    Ok(())
}

/// The bundle a relayer submits: `BatchExecutor.execute(bundle)` from the `relayer` account.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct BundleFile {
    /// Chain id.
    pub chain_id: u64,
    /// The BatchExecutor.
    pub executor: Address,
    /// The payment plugin (the pool).
    pub payment: Address,
    /// `abi.encode(Spend)`.
    pub payment_data: Bytes,
    /// The fee.
    pub fee: U256,
    /// The fee's asset (zero address: ETH).
    pub asset: Address,
    /// The only account whose submission the payment pays.
    pub relayer: Address,
    /// The action.
    pub target: Address,
    /// The action's calldata.
    pub data: Bytes,
    /// The gas the executor forwards to the action (`Action.gas`).
    pub gas: u64,
    /// The raw execution hash `keccak256(target ‖ data ‖ fee ‖ gas)`.
    pub action_hash: B256,
    /// The spent note's nullifier (the exit refuses a bundle whose nullifier is spent).
    pub nullifier: U256,
    /// Unix second after which the payment is refused.
    pub deadline: u64,
}

async fn pay(a: &PayArgs) -> CmdResult {
    let (seed, at, provider, view) = synced(&a.chain).await?;
    let executor = a.executor.or(at.executor).ok_or("give --executor (or --testnet)")?;
    let (chain_id, now) = chain_context(&provider).await?;
    let asset = a.asset.unwrap_or(Address::ZERO);
    let deadline = now + a.valid_for;
    let (action_hash, _) = field::execution_hash(&a.target.0.0, &a.data, a.fee, a.action_gas);
    let req = SpendRequest {
        asset: asset_word(asset),
        amount: a.fee,
        kind: SpendKind::Pay { relayer: a.relayer.0.0, action_hash },
        chain_id,
        pool: at.pool.0.0,
        deadline,
    };
    let prepared = view.prepare_spend(&seed, &req).map_err(|e| e.to_string())?;
    let proof = prove_spend(&a.chain.wallet, &prepared)?;
    let spend = spend_struct(&proof, &prepared.public, asset, deadline)?;
    let bundle = BundleFile {
        chain_id,
        executor,
        payment: at.pool,
        payment_data: Bytes::from(spend.abi_encode()),
        fee: U256::from(a.fee),
        asset,
        relayer: a.relayer,
        target: a.target,
        data: a.data.clone(),
        gas: a.action_gas,
        action_hash: B256::from(action_hash),
        nullifier: spend.nullifier,
        deadline,
    };
    let json = serde_json::to_vec_pretty(&bundle).map_err(|e| e.to_string())?;
    std::fs::write(&a.out, json).map_err(|e| format!("{}: {e}", a.out.display()))?;
    println!(
        "wrote {}: fee {} of {} to relayer {} for the action on {}; change {} after it lands",
        a.out.display(),
        a.fee,
        asset_name(&req.asset),
        a.relayer,
        a.target,
        prepared.change_value
    );
    Ok(())
}

fn proof_words(proof: &[u8; 256]) -> [U256; 8] {
    let mut words = [U256::ZERO; 8];
    for (w, chunk) in words.iter_mut().zip(proof.chunks_exact(32)) {
        *w = U256::from_be_slice(chunk);
    }
    words
}

async fn insert(a: &InsertArgs) -> CmdResult {
    let (_seed, at, _, view) = synced(&a.chain).await?;
    let queued: Vec<Fr> = view.queued().map(|(_, c)| c).take(nox_wallet::state::BATCH_SIZE as usize).collect();
    if queued.is_empty() {
        println!("nothing queued");
        return Ok(());
    }
    let start = view.next_leaf();
    let mut tree = view.tree().clone();
    let (public, witness) = tree.insert_batch(&queued).map_err(|e| format!("building the batch: {e}"))?;
    let pk = insert_keys(&a.chain.wallet)?;
    let t = Ticker::start(&format!("proving the insertion of {} leaves at leaf {start}", queued.len()));
    let proof = nox_zk::insert::prove(&pk, &public, &witness, &mut os_rng()).map_err(|e| format!("proving: {e}"))?;
    t.finish();
    nox_zk::insert::verify(&pk.vk, &public, &proof).map_err(|e| format!("the new proof does not verify: {e}"))?;
    let words = proof_words(&nox_zk::groth16::proof_to_evm(&proof));
    let new_root = U256::from_be_bytes(field::to_be32(&public.new_root));
    let signer = read_key_file(&a.key_file)?;
    let sender = nox_chain::deploy::wallet_provider(&at.rpc, &signer).map_err(|e| e.to_string())?;
    let pool = ShieldedPool::new(at.pool, &sender);
    // The count the proof covers: a deposit queued meanwhile makes the pool refuse the call
    // cheaply (CountMismatch) instead of after verifying the proof.
    let tx = pool.insertBatch(words, new_root, U256::from(queued.len())).into_transaction_request();
    let receipt = send(&sender, tx, "insertBatch").await?;
    println!(
        "inserted {} leaves at leaf {start} in block {} (tx {})",
        queued.len(),
        receipt.block_number.unwrap_or_default(),
        receipt.transaction_hash
    );
    Ok(())
}
