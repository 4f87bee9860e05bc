//! Private value between two wallets end to end, on real processes (issue 30): `nox testnet up`
//! (Anvil, the contracts with the shielded pool, one node per layer, every exit a paid relayer
//! that also inserts queued notes), a `nox client --rpc` daemon through which every wallet read
//! goes, and the `nox wallet` commands as separate processes.
//!
//! A deposits 1 ETH → splits off 0.3 (paid through the mixnet) → joins the two notes again
//! (`--direct`: submitted from an account of A's own) → sends 0.4 to B's `nox1…` address (paid
//! through the mixnet) → B syncs through the mixnet and finds it → B sends 0.1 back (paid) → B
//! withdraws 0.2 to a fresh address (paid: one proof, the fresh address holds and pays nothing).
//! After every step both wallets' balances are exact (fees read from the commands' own output)
//! and the pool holds exactly what the two wallets own; nobody calls `insertBatch` by hand (the
//! exits' relayers insert). Finally a wallet restored from A's seed file alone finds A's balance.
//!
//! One step is direct and the rest paid through the mixnet (the brief allows covering the direct
//! path for one step: every paid step costs a quote, a proof and a bundle through the mixnet).

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, U256},
    providers::{Provider, ProviderBuilder},
};

use crate::common::{
    QUIET, Testnet, USER_KEY, figures, nox, port_base, rpc_daemon, testnet_dir, wait_until, write_key,
};

/// Anvil's default account 1 (the depositor) and 4 (A's own account for the direct step).
const OWN_KEY: &str = "47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a";
const MILLI: u128 = 1_000_000_000_000_000;

/// The `nox wallet` command line of one wallet.
struct Wallet {
    dir: PathBuf,
    testnet: String,
    rpc: String,
}

impl Wallet {
    fn args(&self, cmd: &str, extra: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = ["wallet", cmd, "--wallet"].iter().map(|s| (*s).to_owned()).collect();
        v.push(self.dir.to_str().expect("utf-8").to_owned());
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    }

    /// A command reading the chain through the daemon.
    fn run(&self, cmd: &str, extra: &[&str]) -> String {
        let mut a = self.args(cmd, extra);
        a.extend(["--testnet".to_owned(), self.testnet.clone(), "--rpc".to_owned(), self.rpc.clone()]);
        let started = Instant::now();
        let out = nox(&a).unwrap_or_else(|e| panic!("nox {a:?} failed:\n{e}"));
        eprintln!("[{:.1} s] nox wallet {cmd} {extra:?}", started.elapsed().as_secs_f64());
        out
    }

    /// A private transaction paid through the mixnet (exit 0); returns the output and the fee.
    fn paid(&self, cmd: &str, extra: &[&str]) -> (String, u128) {
        let mut e: Vec<&str> = extra.to_vec();
        e.extend(["--exit", "0", "--yes"]);
        let out = self.run(cmd, &e);
        let fee = crate::common::fee_paid(&out);
        assert!(out.contains("\"outcome\":\"included\""), "{out}");
        (out, fee)
    }

    /// (spendable, pending) ETH.
    fn balance(&self) -> (u128, u128) {
        figures(&self.run("balance", &[]))
    }

    /// Waits for the exits' relayers to insert this wallet's pending notes; the spendable balance.
    fn settled(&self) -> u128 {
        let mut spendable = 0;
        let inserted = wait_until(Duration::from_secs(120), Duration::from_secs(2), || {
            let (now, pending) = self.balance();
            spendable = now;
            pending == 0
        });
        assert!(inserted, "pending notes never inserted by the relayers");
        spendable
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_wallets_deposit_split_join_transfer_and_withdraw_through_the_mixnet() {
    let started = Instant::now();
    let dir = testnet_dir("nox-it", "private-transfer");
    let _ = std::fs::remove_dir_all(&dir);
    let base = port_base(29_000, 100, 30);
    let args = QUIET;
    let mut net = Testnet::up(dir.clone(), base, &args);
    let info = nox_testnet::chain::load(&dir).expect("chain.json");
    let pool = info.pool.clone().expect("the testnet deploys the shielded pool").pool;
    let chain = ProviderBuilder::new().connect_http(info.rpc_url.parse().expect("url"));
    eprintln!("[{:.1} s] testnet up", started.elapsed().as_secs_f64());

    let rpc = rpc_daemon(&mut net);
    let wallet =
        |name: &str| Wallet { dir: dir.join(name), testnet: dir.to_str().expect("utf-8").to_owned(), rpc: rpc.clone() };
    let (a, b) = (wallet("a"), wallet("b"));
    let key = |name: &str, hex: &str| write_key(&dir, name, hex).to_str().expect("utf-8").to_owned();
    let (user_key, own_key) = (key("user.key", USER_KEY), key("own.key", OWN_KEY));

    let out = nox(&a.args("new", &[])).expect("new");
    assert!(out.contains("nox1") && out.contains("ONLY backup") && out.contains("nox wallet restore"), "{out}");
    nox(&b.args("new", &[])).expect("new");
    let address = |w: &Wallet| nox(&w.args("address", &[])).expect("address").trim().to_owned();
    let (addr_a, addr_b) = (address(&a), address(&b));
    assert!(addr_b.starts_with("nox1"), "{addr_b}");
    // The viewing key is another string that is not an address.
    let view_b = nox(&b.args("viewing-key", &[])).expect("viewing key");
    assert!(view_b.lines().any(|l| l.starts_with("noxview1")), "{view_b}");

    let pool_holds = || async { chain.get_balance(pool).await.expect("pool balance") };
    let exact = |what: &str, a_has: u128, b_has: u128, pool_has: U256| {
        assert_eq!(pool_has, U256::from(a_has + b_has), "{what}: the pool holds exactly what the wallets own");
    };

    // 1. A deposits 1 ETH (a public transaction from the depositor's account).
    let out = a.run("deposit", &["--amount", "1", "--key-file", &user_key]);
    assert!(out.contains("deposited 1 ETH") && out.contains("gas "), "{out}");
    let mut has_a = 1000 * MILLI;
    assert_eq!(a.settled(), has_a);
    exact("deposit", has_a, 0, pool_holds().await);

    // 2. A splits off 0.3 ETH, paid through the mixnet: notes of 0.3 and 0.7 − fee.
    let (out, fee) = a.paid("split", &["--amounts", "0.3"]);
    assert!(out.contains("new note: 0.3 ETH") && out.contains("change note: "), "{out}");
    has_a -= fee;
    assert_eq!(a.settled(), has_a);
    exact("split", has_a, 0, pool_holds().await);
    // B proves with the same testnet key: its cached copy saves deriving it again.
    std::fs::copy(a.dir.join("testnet-transfer.pk"), b.dir.join("testnet-transfer.pk")).expect("cached key");

    // 3. A joins the two, directly from A's own account (no fee; that account pays the gas).
    let out = a.run("join", &["--direct", "--key-file", &own_key]);
    assert!(out.contains("submitting directly") && out.contains("spent note(s): "), "{out}");
    assert_eq!(a.settled(), has_a);
    exact("join", has_a, 0, pool_holds().await);

    // 4. A pays B 0.4 ETH privately, paid through the mixnet.
    let (out, fee) = a.paid("send", &["--to", &addr_b, "--amount", "0.4"]);
    assert!(out.contains(&format!("new note: 0.4 ETH to {addr_b}")), "{out}");
    has_a -= 400 * MILLI + fee;
    let mut has_b = 400 * MILLI;
    assert_eq!(a.settled(), has_a);

    // 5. B finds the note from the chain alone, through the mixnet.
    let out = b.run("sync", &[]);
    assert!(out.contains("1 note(s) found, 0 corrupt"), "{out}");
    assert_eq!(b.settled(), has_b);
    exact("transfer", has_a, has_b, pool_holds().await);

    // 6. B sends 0.1 back, paid through the mixnet from the note it received.
    let (_, fee) = b.paid("send", &["--to", &addr_a, "--amount", "0.1"]);
    has_b -= 100 * MILLI + fee;
    has_a += 100 * MILLI;
    assert_eq!(b.settled(), has_b);
    assert_eq!(a.settled(), has_a);
    exact("transfer back", has_a, has_b, pool_holds().await);

    // 7. B withdraws 0.2 to a fresh address, paid through the mixnet: one proof, the address
    // holds nothing before and pays nothing.
    let fresh = Address::from([0x5a; 20]);
    assert_eq!(chain.get_balance(fresh).await.expect("balance"), U256::ZERO);
    let (_, fee) = b.paid("withdraw", &["--amount", "0.2", "--to", &fresh.to_string()]);
    has_b -= 200 * MILLI + fee;
    assert_eq!(chain.get_balance(fresh).await.expect("balance"), U256::from(200 * MILLI));
    assert_eq!(b.settled(), has_b);
    exact("withdrawal", has_a, has_b, pool_holds().await);

    // A shielded address where an Ethereum address belongs, and the reverse, say so.
    let err = nox(&b.args("withdraw", &["--amount", "0.1", "--to", &addr_a])).expect_err("refused");
    assert!(err.contains("shielded address, not an Ethereum address"), "{err}");
    let err = nox(&b.args("send", &["--amount", "0.1", "--to", &fresh.to_string(), "--testnet", &b.testnet]))
        .expect_err("refused");
    assert!(err.contains("Ethereum address, not a shielded address"), "{err}");

    // Every operation also runs the other way (issue 30: each step direct and paid). Steps 1–7
    // split paid, joined direct, transferred and withdrew paid; now the reverse of each.
    // 7b. B withdraws 0.05 directly to another fresh address (the submitting account pays gas).
    let fresh2 = Address::from([0x5b; 20]);
    let out = b.run("withdraw", &["--amount", "0.05", "--to", &fresh2.to_string(), "--direct", "--key-file", &own_key]);
    assert!(out.contains("submitting directly"), "{out}");
    has_b -= 50 * MILLI;
    assert_eq!(chain.get_balance(fresh2).await.expect("balance"), U256::from(50 * MILLI));
    assert_eq!(b.settled(), has_b);
    exact("direct withdrawal", has_a, has_b, pool_holds().await);

    // 7c. A splits off 0.05 directly, then joins two notes paid through the mixnet.
    let out = a.run("split", &["--amounts", "0.05", "--direct", "--key-file", &own_key]);
    assert!(out.contains("submitting directly") && out.contains("new note: 0.05 ETH"), "{out}");
    assert_eq!(a.settled(), has_a);
    exact("direct split", has_a, has_b, pool_holds().await);
    let (out, fee) = a.paid("join", &[]);
    assert!(out.contains("spent note(s): "), "{out}");
    has_a -= fee;
    assert_eq!(a.settled(), has_a);
    exact("paid join", has_a, has_b, pool_holds().await);

    // 7d. A pays B 0.05 directly (A's shielded notes; the submitting account only pays gas).
    let out = a.run("send", &["--to", &addr_b, "--amount", "0.05", "--direct", "--key-file", &own_key]);
    assert!(out.contains(&format!("new note: 0.05 ETH to {addr_b}")), "{out}");
    has_a -= 50 * MILLI;
    has_b += 50 * MILLI;
    assert_eq!(a.settled(), has_a);
    let out = b.run("sync", &[]);
    assert!(out.contains("note(s) found, 0 corrupt"), "{out}");
    assert_eq!(b.settled(), has_b);
    exact("direct transfer", has_a, has_b, pool_holds().await);

    // 8. A wallet restored from A's seed file alone finds A's balance on the chain.
    let restored = wallet("restored");
    let copy = dir.join("a-backup.key");
    std::fs::copy(a.dir.join("wallet.key"), &copy).expect("backup");
    nox(&restored.args("restore", &["--from", copy.to_str().expect("utf-8")])).expect("restore");
    assert_eq!(address(&restored), addr_a);
    assert_eq!(restored.settled(), has_a);
    eprintln!("[{:.1} s] done", started.elapsed().as_secs_f64());
    drop(net);
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
