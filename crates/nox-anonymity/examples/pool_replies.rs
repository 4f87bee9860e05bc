//! Do SURB replies belong in the pool model's crowd? (issue 32, docs/benchmarks/anonymity.md)
//!
//! At growing N, always-on substitution cover (half the users making 0.25 requests/s), 3 × 3
//! nodes, μ = 50 ms: the link-level simulator without and with the shipped loops, SURB replies
//! and node cover (scored by the testnet capture's tracer and delay model), beside the pool model
//! as shipped (replies attributed in proportion to the senders' weight: no change to the
//! posterior) and the pool model with each reply counted as one more send of its user.
//! Whichever pool variant the link-level figures approach as N grows is the right mean field.
//!
//! `cargo run --release -p nox-anonymity --example pool_replies [λ_P] [seconds] [N,N,…]`
//! (defaults 2.75, 20, 10,30,100).

use nox_anonymity::activity::{
    ActivityConfig, Profile, SubstitutionConfig, pool_sender_anonymity, simulate_substitution,
};
use nox_anonymity::{DelayModel, sender_entropy};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let lambda: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2.75);
    let seconds: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20);
    let users: Vec<u32> =
        args.get(3).map(|a| a.split(',').filter_map(|x| x.parse().ok()).collect()).unwrap_or_else(|| vec![10, 30, 100]);
    let mut rng = ChaCha20Rng::seed_from_u64(32);
    let model = DelayModel { mean_delay_us: 50_000.0, processing_us: 0.0, jitter_floor_us: 300.0 };
    println!("λ_P {lambda}/s, {seconds} s windows, 2 link-level runs and 2,000 pool trials per point: bits / top-1");
    println!(
        "    N | link-level bare | link-level + loops, replies | pool (shipped) | pool, replies as sends | log2 N"
    );
    for n in users {
        let bare = SubstitutionConfig {
            clients: n,
            active: n / 2,
            cover_rate_per_s: lambda,
            duration_us: seconds * 1_000_000,
            ..SubstitutionConfig::default()
        };
        let full = SubstitutionConfig {
            loop_fraction: 0.5,
            reply_packets: 2,
            node_loop_rate_per_s: 0.05,
            node_drop_rate_per_s: 0.05,
            ..bare
        };
        let mut line = format!("{n:>5}");
        for config in [bare, full] {
            let (mut bits, mut top1, mut messages) = (0.0, 0.0, 0usize);
            for _ in 0..2 {
                let sim = simulate_substitution(&config, &mut rng);
                match sender_entropy(&sim.observation, &sim.topology, &model, Some(&sim.truth)) {
                    Ok(r) => {
                        bits += r.mean_entropy_bits * r.messages as f64;
                        top1 += r.top1_accuracy.unwrap_or(f64::NAN) * r.messages as f64;
                        messages += r.messages;
                    }
                    Err(e) => eprintln!("N = {n}: {e}"),
                }
            }
            let m = messages.max(1) as f64;
            line += &format!(" | {:.2} / {:.2}", bits / m, top1 / m);
        }
        let pool = ActivityConfig {
            users: n,
            profile: Profile::AlwaysOn,
            cover_rate_per_s: lambda,
            ..ActivityConfig::default()
        };
        // Each reply as one more send: the same model with λ_P raised by the reply rate.
        let as_sends = ActivityConfig { cover_rate_per_s: lambda + pool.reply_rate_while_sending(), ..pool };
        for config in [pool, as_sends] {
            match pool_sender_anonymity(&config, 2_000, &mut rng) {
                Ok(r) => line += &format!(" | {:.2} / {:.2}", r.mean_entropy_bits, r.top1_accuracy),
                Err(e) => eprintln!("N = {n}: {e}"),
            }
        }
        println!("{line} | {:.2}", f64::from(n).log2());
    }
}
