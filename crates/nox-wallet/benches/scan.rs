//! Wallet scanning (issue 30 target: a wallet syncs 10,000 pool notes in ≤ 2 s of CPU): one
//! viewing key trial-opens 10,000 note ciphertexts, 1 % of them its own, and checks each of its
//! own against the published commitment (two Poseidon hashes), as `PoolView` does for every
//! `Deposited` memo and both outputs of every `Transacted` event.
//!
//! ```text
//! cargo bench -p nox-wallet --bench scan
//! ```
//! Besides criterion's wall-clock figure it prints the **CPU time** of the scanning thread
//! (`/proc/thread-self/schedstat`, Linux), median of 7 scans: the target is CPU time, and on a
//! shared machine wall time also counts the other processes.
//! Figure: docs/benchmarks/zk.md, "Wallet scanning".

use ark_bn254::Fr;
use criterion::{Criterion, criterion_group, criterion_main};
use nox_wallet::{
    Seed,
    memo::{self, Opened},
};
use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};
use std::hint::black_box;

const NOTES: usize = 10_000;
const MINE_EVERY: usize = 100;

fn scan(c: &mut Criterion) {
    let me = Seed::from_bytes([1; 32]);
    let vk = me.viewing_key().expect("viewing key");
    let my_address = me.address().expect("address");
    let others: Vec<_> = (2..52u8).map(|n| Seed::from_bytes([n; 32]).address().expect("address")).collect();
    let asset = Fr::from(0u64);
    let mut rng = ChaCha20Rng::from_seed([9; 32]);
    let notes: Vec<(Vec<u8>, Fr)> = (0..NOTES)
        .map(|i| {
            let to = if i % MINE_EVERY == 0 { my_address } else { others[i % others.len()] };
            let value = 1_000 + i as u128;
            let blinding = nox_zk::note::random_scalar(&mut rng);
            let inner = nox_zk::poseidon::hash(&[to.owner(), blinding]).expect("inner");
            let commitment = nox_zk::note::commitment(value, asset, inner).expect("commitment");
            (memo::seal(&to, &asset, value, &blinding, &mut rng), commitment)
        })
        .collect();

    let scan_all = || {
        notes
            .iter()
            .filter(|(ct, cm)| matches!(memo::scan(&vk, black_box(ct), &asset, cm), Opened::Mine { .. }))
            .count()
    };
    if let Some(mut cpu) =
        (0..7).map(|_| thread_cpu(|| assert_eq!(scan_all(), NOTES / MINE_EVERY))).collect::<Option<Vec<f64>>>()
    {
        cpu.sort_by(f64::total_cmp);
        println!(
            "wallet_scan: {NOTES} notes, 1 % mine: CPU time median {:.3} s (min {:.3}, max {:.3}, 7 scans)",
            cpu[3], cpu[0], cpu[6]
        );
    }

    let mut g = c.benchmark_group("wallet_scan");
    g.sample_size(10);
    g.bench_function("10000_notes_1pct_mine", |b| {
        b.iter(|| {
            let mine = scan_all();
            assert_eq!(mine, NOTES / MINE_EVERY);
            mine
        })
    });
    g.finish();
}

/// CPU seconds this thread spends in `f` (the first field of `/proc/thread-self/schedstat`,
/// nanoseconds on the CPU); `None` where that file does not exist.
fn thread_cpu(f: impl FnOnce()) -> Option<f64> {
    let read = || -> Option<u64> {
        std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
    };
    let before = read()?;
    f();
    Some((read()? - before) as f64 / 1e9)
}

criterion_group!(benches, scan);
criterion_main!(benches);
