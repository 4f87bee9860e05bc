//! The inserter on a real Anvil with the real pool and insertion verifier (issue 35, item 1):
//! a user deposits and never touches the chain again, and their notes are inserted by the
//! relayers — every transaction touching the pool after the deposit is a relayer's. Two
//! relayers run it on one pool: each batch is inserted once, the loser sends nothing. A full
//! batch (queued up to the pool's next queue checkpoint, a multiple of `BATCH_SIZE` = 32 of the
//! queue index) goes at once while one more commitment waits for `max_wait_ms`.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::{DynProvider, Provider};
use ark_serialize::CanonicalSerialize;
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::deploy::{self, RegistryParams};
use nox_chain::pool::{PoolDeployment, ShieldedPool, deploy_pool};
use nox_relayer::inserter::{self, InserterConfig, InserterHandle};
use nox_relayer::{Policy, Relayer, RelayerConfig, encode_verifying_key};

/// Anvil's dev accounts 1 and 2 (the relayers) and 3 (the user).
const RELAYER_A: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const RELAYER_B: &str = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
/// A key with no ETH on Anvil.
const UNFUNDED: &str = "0101010101010101010101010101010101010101010101010101010101010101";
const USER_KEY: &str = "7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port")
}

struct World {
    _anvil: Anvil,
    url: String,
    chain_id: u64,
    executor: Address,
    pool: PoolDeployment,
    /// The user's own provider (signs with [`USER_KEY`]).
    user: DynProvider,
    user_address: Address,
    /// Files: the insertion proving key, a verifying key for the relayer's start.
    dir: tempfile::TempDir,
}

async fn world() -> World {
    let port = free_port();
    let anvil = tokio::task::spawn_blocking(move || Anvil::spawn(&AnvilOptions::on_port(port)))
        .await
        .unwrap()
        .expect("anvil starts");
    let url = anvil.url().to_owned();
    eprintln!("anvil up");
    let deployer = deploy::signer(DEV_KEY).unwrap();
    let params = RegistryParams {
        min_stake: U256::from(1u64),
        unstake_delay: 1,
        slash_reporter_bps: 1000,
        token_supply: U256::from(10u64).pow(U256::from(24u64)),
    };
    let deployment = deploy::deploy(&url, &deployer, params).await.expect("deploys");
    let pool = deploy_pool(&url, &deployer, deployment.executor, 64).await.expect("pool deploys");
    eprintln!("contracts deployed");
    let user_signer = deploy::signer(USER_KEY).unwrap();
    let user_address = user_signer.address();
    let user = deploy::wallet_provider(&url, &user_signer).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (pk, vk) =
        tokio::task::spawn_blocking(|| nox_zk::insert::testnet_setup().expect("insert setup")).await.unwrap();
    let mut bytes = Vec::new();
    pk.serialize_compressed(&mut bytes).unwrap();
    std::fs::write(dir.path().join("insert.pk"), bytes).unwrap();
    // The relayer needs a verifying key to start; these tests send it no payment, so any
    // well-formed key does (the insertion key's, already at hand).
    std::fs::write(dir.path().join("payment.vk"), encode_verifying_key(&vk)).unwrap();
    eprintln!("insertion key ready");
    World {
        _anvil: anvil,
        url,
        chain_id: deployment.chain_id,
        executor: deployment.executor,
        pool,
        user,
        user_address,
        dir,
    }
}

impl World {
    async fn relayer(&self, name: &str, key: &str) -> Arc<Relayer> {
        let dir = self.dir.path();
        let key_file = dir.join(format!("{name}.key"));
        std::fs::write(&key_file, key).unwrap();
        let config = RelayerConfig {
            rpc_url: self.url.clone(),
            key_file: Some(key_file),
            keystore: None,
            password_file: None,
            journal: dir.join(format!("{name}-nonces.json")),
            verifying_key: dir.join("payment.vk"),
            chain_id: self.chain_id,
            executor: self.executor,
            pool: self.pool.pool,
            tokens: Vec::new(),
            policy: Policy::default(),
        };
        let r = Relayer::start(config).await.expect("relayer starts");
        eprintln!("relayer {name} started");
        r
    }

    /// A relayer whose account must hold gas money (a dev account; a mistyped key is not one).
    async fn funded_relayer(&self, name: &str, key: &str) -> Arc<Relayer> {
        let r = self.relayer(name, key).await;
        let balance = self.user.get_balance(r.account()).await.unwrap();
        assert!(balance > U256::ZERO, "relayer {name}'s account {} holds no ETH: not an Anvil dev key", r.account());
        r
    }

    fn inserter_config(&self, max_wait_ms: u64, jitter_ms: u64) -> InserterConfig {
        InserterConfig {
            max_wait_ms,
            jitter_ms,
            poll_ms: 200,
            from_block: self.pool.block,
            proving_key: Some(self.dir.path().join("insert.pk")),
            ..InserterConfig::default()
        }
    }

    /// A deposit of 1 gwei from the user's account (a memo of the one note length, `ShieldedPool.NOTE_LEN`).
    async fn deposit(&self, i: u64) -> u64 {
        let pool = ShieldedPool::new(self.pool.pool, &self.user);
        let amount = U256::from(1_000_000_000u64);
        let receipt = pool
            .deposit(Address::ZERO, amount, U256::from(1_000 + i), Bytes::from(vec![0u8; 104]))
            .value(amount)
            .send()
            .await
            .unwrap()
            .get_receipt()
            .await
            .unwrap();
        assert!(receipt.status());
        receipt.block_number.unwrap()
    }

    async fn counters(&self) -> (u64, u64) {
        let pool = ShieldedPool::new(self.pool.pool, &self.user);
        let first = pool.firstUninsertedQueueIndex().call().await.unwrap();
        let next = pool.nextQueueIndex().call().await.unwrap();
        (first.to::<u64>(), next.to::<u64>())
    }

    /// Waits until the queue is empty (or `limit`); returns the time it took.
    async fn until_inserted(&self, limit: Duration) -> Duration {
        let start = Instant::now();
        loop {
            let (first, next) = self.counters().await;
            if first == next {
                return start.elapsed();
            }
            assert!(start.elapsed() < limit, "still {} queued after {limit:?}", next - first);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The senders of every transaction after `after` that touches the pool (sent to it, or
    /// with a log of it), read from the blocks and receipts.
    async fn pool_senders_after(&self, after: u64) -> Vec<Address> {
        let head = self.user.get_block_number().await.unwrap();
        let mut senders = Vec::new();
        for n in after + 1..=head {
            let block = self.user.get_block_by_number(n.into()).await.unwrap().unwrap();
            for hash in block.transactions.hashes() {
                let receipt = self.user.get_transaction_receipt(hash).await.unwrap().unwrap();
                let to_pool = receipt.to == Some(self.pool.pool);
                let logs_pool = receipt.inner.logs().iter().any(|l| l.address() == self.pool.pool);
                if to_pool || logs_pool {
                    senders.push(receipt.from);
                }
            }
        }
        senders
    }
}

/// Waits (at most 10 s) for `done`.
async fn until(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn spawned(handle: Result<InserterHandle, inserter::InserterError>) -> InserterHandle {
    handle.expect("inserter starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_are_inserted_by_the_relayers_with_no_user_transaction() {
    // The inserters' log on stderr (shown when the test fails).
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).try_init();
    let t = Instant::now();
    let w = world().await;
    eprintln!("world (Anvil, contracts, insertion key) in {:?}", t.elapsed());
    let a = w.funded_relayer("a", RELAYER_A).await;
    let b = w.funded_relayer("b", RELAYER_B).await;
    let ia = spawned(inserter::spawn(a.clone(), w.inserter_config(1_500, 1_000)).await);
    let ib = spawned(inserter::spawn(b.clone(), w.inserter_config(1_500, 1_000)).await);

    // 1. Two deposits; the user then does nothing. Both relayers race for the batch.
    w.deposit(0).await;
    let last_deposit = w.deposit(1).await;
    let user_nonce = w.user.get_transaction_count(w.user_address).await.unwrap();
    let took = w.until_inserted(Duration::from_secs(60)).await;
    let senders = w.pool_senders_after(last_deposit).await;
    assert!(!senders.is_empty(), "the insertion is a transaction touching the pool");
    assert!(
        senders.iter().all(|s| *s == a.account() || *s == b.account()),
        "every transaction touching the pool after the deposit is a relayer's: {senders:?} (user {})",
        w.user_address
    );
    assert!(!senders.contains(&w.user_address));
    assert_eq!(w.user.get_transaction_count(w.user_address).await.unwrap(), user_nonce, "the user sent nothing");
    // One batch, inserted once: one winner, and the loser sent no transaction.
    let (ma, mb) = (ia.metrics().clone(), ib.metrics().clone());
    // (The winner counts its insertion when it sees the receipt, a poll after the pool.)
    until(|| ma.inserts() + mb.inserts() >= 1).await;
    assert_eq!(ma.inserts() + mb.inserts(), 1, "exactly one insertion");
    assert_eq!(senders.len(), 1, "the losing inserter sent nothing: {senders:?}");
    assert_eq!(ma.failures() + mb.failures(), 0);
    eprintln!(
        "two deposits inserted {took:?} after the last one (max_wait 1.5 s + jitter ≤ 1 s + proof); \
         last delay {} ms; lost races a {} b {}",
        ma.last_delay_ms().max(mb.last_delay_ms()),
        ma.lost_races(),
        mb.lost_races()
    );
    assert!(ma.render().contains("nox_relayer_inserts_total"));

    // 2. Another round: the relayers keep inserting (their mirrors follow each other's batches).
    let last_deposit = w.deposit(2).await;
    w.until_inserted(Duration::from_secs(60)).await;
    until(|| ma.inserts() + mb.inserts() >= 2).await;
    let senders = w.pool_senders_after(last_deposit).await;
    assert!(senders.iter().all(|s| *s == a.account() || *s == b.account()), "{senders:?}");
    assert_eq!(ma.inserts() + mb.inserts(), 2);
    drop((ia, ib));

    eprintln!("rounds 1 and 2 done at {:?}", t.elapsed());
    // 3. A long max_wait: a full batch goes at once, the one after it waits. Three commitments
    // are inserted already, so the pool's next batch ends at the next multiple of BATCH_SIZE of
    // the queue index (`inserter::batch_len`).
    let ia = spawned(inserter::spawn(a.clone(), w.inserter_config(600_000, 0)).await);
    let (first, _) = w.counters().await;
    for i in 0..=inserter::batch_len(first, u64::MAX) {
        w.deposit(10 + i).await;
    }
    let start = Instant::now();
    loop {
        let (first, next) = w.counters().await;
        if first + 1 == next {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the full batch was not inserted: {first}..{next}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let m = ia.metrics().clone();
    until(|| m.inserts() >= 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (first, next) = w.counters().await;
    assert_eq!(next - first, 1, "the note after a full batch waits for max_wait");
    assert_eq!(m.inserts(), 1);
    // Every insertion went through the relayer's journal: nothing left pending, nonces in order.
    assert!(a.pending().await.is_empty());
    assert_eq!(a.next_nonce().await, w.user.get_transaction_count(a.account()).await.unwrap());
    drop(ia);

    // 4. A relayer whose account holds no ETH: it proves, finds it cannot pay, sends nothing and
    // keeps failing (backing off) while the note stays queued for a funded relayer.
    let poor = w.relayer("poor", UNFUNDED).await;
    assert_eq!(w.user.get_balance(poor.account()).await.unwrap(), U256::ZERO);
    let ip = spawned(inserter::spawn(poor.clone(), w.inserter_config(0, 0)).await);
    let mp = ip.metrics().clone();
    let start = Instant::now();
    while mp.failures() == 0 {
        assert!(start.elapsed() < Duration::from_secs(60), "the unfunded inserter never reported its failure");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(mp.inserts(), 0);
    assert_eq!(w.user.get_transaction_count(poor.account()).await.unwrap(), 0, "it sent nothing");
    assert!(poor.pending().await.is_empty(), "nothing journalled: the nonce was not taken");
    let (first, next) = w.counters().await;
    assert_eq!(next - first, 1, "the note is still queued");
}

/// The measurement of issue 35 (not a timed test: `--ignored`, docs/benchmarks/defi.md): from
/// the block queuing a note to the block inserting it, at the testnet's inserter settings
/// (`nox_testnet::chain::INSERTER_MAX_WAIT_MS` = 2 s, jitter ≤ 1 s, poll 0.5 s), two relayers
/// racing, five rounds; prints each and the median.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test -p nox-relayer --test inserter -- --ignored --nocapture"]
async fn queued_to_spendable_at_the_testnet_defaults() {
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).try_init();
    let w = world().await;
    let a = w.funded_relayer("a", RELAYER_A).await;
    let b = w.funded_relayer("b", RELAYER_B).await;
    let testnet = |w: &World| InserterConfig { poll_ms: 500, ..w.inserter_config(2_000, 1_000) };
    let _ia = spawned(inserter::spawn(a, testnet(&w)).await);
    let _ib = spawned(inserter::spawn(b, testnet(&w)).await);
    let mut times = Vec::new();
    for round in 0..5 {
        // From the receipt of the deposit (the note queued) to the pool showing it inserted.
        w.deposit(100 + round).await;
        let took = w.until_inserted(Duration::from_secs(120)).await;
        eprintln!("round {round}: queued → inserted in {took:?}");
        times.push(took);
    }
    times.sort();
    eprintln!("median queued → spendable: {:?} (min {:?}, max {:?})", times[2], times[0], times[4]);
}
