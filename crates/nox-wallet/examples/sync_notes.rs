//! The 10,000 notes of `benches/scan.rs` (same seeds, same RNG, 1 % to seed `[1; 32]`) as pool
//! `Deposited` events: writes them as JSON for the SDK's sync benchmark (sdk/ts/bench/sync.mjs,
//! which encodes them as `eth_getLogs` entries and syncs a `NoxWallet` in Node and in Chromium), and
//! times the native `PoolView::apply_all` over the same events — the wallet sync without the chain
//! reads, as nox-wasm's `wallet_sync` runs it.
//!
//! ```text
//! cargo run --release -p nox-wallet --example sync_notes -- /tmp/notes.json
//! ```
//! Prints one JSON line: notes, mine, expected balance (wei), native sync ms (median of 5, wall
//! clock) and CPU ms of the same runs. Figures: docs/benchmarks/browser.md, "Wallet sync".

use ark_bn254::Fr;
use nox_wallet::{PoolEvent, PoolView, Seed, memo};
use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};
use std::fmt::Write as _;
use std::time::Instant;

const NOTES: usize = 10_000;
const MINE_EVERY: usize = 100;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).ok_or("usage: sync_notes <notes.json>")?;
    let me = Seed::from_bytes([1; 32]);
    let my_address = me.address()?;
    let others = (2..52u8).map(|n| Seed::from_bytes([n; 32]).address()).collect::<Result<Vec<_>, _>>()?;
    let asset = Fr::from(0u64);
    let mut rng = ChaCha20Rng::from_seed([9; 32]);
    let mut events = Vec::with_capacity(NOTES);
    let mut expected = 0u128;
    for i in 0..NOTES {
        let mine = i % MINE_EVERY == 0;
        let to = if mine { my_address } else { others[i % others.len()] };
        let value = 1_000 + i as u128;
        let blinding = nox_zk::note::random_scalar(&mut rng);
        let inner = nox_zk::poseidon::hash(&[to.owner(), blinding])?;
        let commitment = nox_zk::note::commitment(value, asset, inner)?;
        if mine {
            expected += value;
        }
        let memo = memo::seal(&to, &asset, value, &blinding, &mut rng);
        events.push(PoolEvent::Deposited { queue_index: i as u64, commitment, asset, amount: value, memo });
    }

    let mut json = String::from("{\"seed\":\"");
    json.push_str(&hex(&[1; 32]));
    let _ = write!(json, "\",\"expected\":\"{expected}\",\"notes\":[");
    for (i, e) in events.iter().enumerate() {
        if let PoolEvent::Deposited { queue_index, commitment, amount, memo, .. } = e {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(
                json,
                "{sep}{{\"queue_index\":{queue_index},\"commitment\":\"{}\",\"amount\":\"{amount}\",\"memo\":\"{}\"}}",
                hex(&nox_zk::field::to_be32(commitment)),
                hex(memo)
            );
        }
    }
    json.push_str("]}");
    std::fs::write(&out, json)?;

    let mut runs = Vec::new();
    for _ in 0..5 {
        let cpu0 = thread_cpu_ns();
        let t0 = Instant::now();
        let mut view = PoolView::new();
        view.apply_all(&me, &events)?;
        let wall = t0.elapsed().as_secs_f64() * 1e3;
        let cpu = match (cpu0, thread_cpu_ns()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e6,
            _ => f64::NAN,
        };
        let b = view.balance(&asset);
        if b.pending != expected || b.notes != NOTES / MINE_EVERY {
            return Err(format!("native sync found {} notes, {} wei (expected {expected})", b.notes, b.pending).into());
        }
        runs.push((wall, cpu));
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (wall, cpu) = runs[2];
    println!(
        "{{\"notes\":{NOTES},\"mine\":{},\"expected_wei\":\"{expected}\",\"native_ms_median\":{wall:.1},\"native_cpu_ms\":{cpu:.1},\"native_ms_min\":{:.1},\"native_ms_max\":{:.1},\"runs\":5}}",
        NOTES / MINE_EVERY,
        runs[0].0,
        runs[4].0
    );
    Ok(())
}

/// Nanoseconds this thread has spent on the CPU (`/proc/thread-self/schedstat`, Linux).
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}
