//! `nox testnet demo`'s money part ([`nox::demo::private_transfer`], the library call the demo
//! makes) on a running testnet: two wallets, A deposits 1 ETH, A pays B 0.4 ETH through exit
//! 0's relayer, the exits' inserter makes the notes spendable, B finds the note through the
//! mixnet. The balances are exact (B exactly 0.4 ETH; A exactly 0.6 ETH less the fee the relayer
//! took; the pool exactly their sum), every step that sends a transaction reports its gas, and
//! the printed money section ([`nox::demo::money_section`]) shows each step, the total and the
//! balances.

use std::time::Instant;

use nox::wallet_cmd::Unit;

use crate::common::{QUIET, Testnet, port_base, testnet_dir};

const MILLI: u128 = 1_000_000_000_000_000;

#[test]
fn the_demo_pays_b_privately_through_the_mixnet_with_exact_balances() {
    let started = Instant::now();
    let dir = testnet_dir("nox-it", "demo-money");
    let _ = std::fs::remove_dir_all(&dir);
    let base = port_base(28_000, 100, 30);
    let net = Testnet::up(dir.clone(), base, &QUIET);
    eprintln!("[{:.1} s] testnet up", started.elapsed().as_secs_f64());

    let report = nox::demo::private_transfer(&net.dir).unwrap_or_else(|e| panic!("the demo's money part: {e}"));
    let section = nox::demo::money_section(&report);
    eprintln!("[{:.1} s] money part done\n{section}", started.elapsed().as_secs_f64());

    // The checks the demo makes (it fails otherwise), seen from outside.
    assert!(report.fee > 0, "the relayer was paid from the transaction: {report:?}");
    assert_eq!(report.b_spendable, 400 * MILLI, "B holds exactly what A sent");
    assert_eq!(report.a_spendable, 600 * MILLI - report.fee, "A holds the rest less the relayer's fee");
    assert_eq!(report.pool_balance, report.a_spendable + report.b_spendable, "the pool holds exactly both");
    assert_eq!(report.a_spendable + report.b_spendable + report.fee, 1_000 * MILLI, "A + B + fee = the deposit");
    let step = |what: &str| {
        report.steps.iter().find(|s| s.what.starts_with(what)).unwrap_or_else(|| panic!("no step {what}: {report:?}"))
    };
    // A deposit, a 2-in/2-out proof verified on chain, an insertion proof: each far more than a
    // plain transfer's 21,000 gas; the paid transfer within issue 30's 450,000 target.
    assert!(step("A deposits").gas > 21_000, "{report:?}");
    assert!((200_000..=450_000).contains(&step("A pays B").gas), "{report:?}");
    assert!(step("exits' inserter inserts it").gas > 100_000, "{report:?}");
    assert!(step("exits' inserter inserts both").gas > 100_000, "{report:?}");
    assert!(report.steps.iter().all(|s| s.seconds > 0.0), "{report:?}");

    // The printed section: every step with its time and gas, the total, the exact balances.
    let eth = Unit::eth();
    for s in &report.steps {
        let line = section.lines().find(|l| l.trim_start().starts_with(&s.what)).unwrap_or_else(|| panic!("{section}"));
        assert!(line.contains(&format!("{:.1} s", s.seconds)), "{line}");
        if s.gas > 0 {
            assert!(line.contains(&format!("{} gas", s.gas)), "{line}");
        }
    }
    let total: u64 = report.steps.iter().map(|s| s.gas).sum();
    let total_line =
        section.lines().find(|l| l.trim_start().starts_with("total")).unwrap_or_else(|| panic!("{section}"));
    assert!(total_line.contains(&format!("{total} gas")), "{total_line}");
    let balances = section.lines().find(|l| l.starts_with("balances (exact)")).unwrap_or_else(|| panic!("{section}"));
    for figure in [report.a_spendable, report.b_spendable, report.fee, report.pool_balance] {
        assert!(balances.contains(&eth.show(figure)), "{figure}: {balances}");
    }
    assert!(balances.contains("B 0.4 ETH;"), "{balances}");
    eprintln!("[{:.1} s] done", started.elapsed().as_secs_f64());
}
