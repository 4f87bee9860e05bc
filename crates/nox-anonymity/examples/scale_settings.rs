//! Sender entropy at 1,000 always-on users (pool model, `nox_anonymity::activity`) for the
//! shipped μ = 50 ms, λ_P = 2/s and the settings around it: which μ · λ_P reaches 90 % of
//! `log₂ N` (docs/benchmarks/anonymity.md, "Anonymity at scale and over days").
//!
//! `cargo run --release -p nox-anonymity --example scale_settings`

use nox_anonymity::activity::{ActivityConfig, pool_sender_anonymity};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn main() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    println!("users  μ (ms)  λ_P (/s)  H (bits)  % of log2 N  top-1");
    for (mu_ms, lambda) in [(50.0, 2.0), (50.0, 4.0), (100.0, 2.0), (100.0, 4.0), (50.0, 8.0), (100.0, 8.0)] {
        let config = ActivityConfig {
            users: 1_000,
            mean_delay_s: mu_ms / 1e3,
            cover_rate_per_s: lambda,
            ..ActivityConfig::default()
        };
        match pool_sender_anonymity(&config, 2_000, &mut rng) {
            Ok(r) => println!(
                "{:>5}  {mu_ms:>6}  {lambda:>8}  {:>8.2}  {:>10.1} %  {:.4}",
                config.users,
                r.mean_entropy_bits,
                100.0 * r.normalized_entropy,
                r.top1_accuracy
            ),
            Err(e) => eprintln!("μ = {mu_ms} ms, λ_P = {lambda}: {e}"),
        }
    }
}
