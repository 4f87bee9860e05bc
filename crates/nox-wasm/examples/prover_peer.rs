//! The native side of the WebAssembly prover's cross-checks and benchmark
//! (`crates/nox-wasm/js/test/prover.test.mjs`, `sdk/ts/test/prover.test.mjs`,
//! `scripts/bench/wasm-prover.sh`): it writes the testnet transfer proving key and a wallet
//! fixture (a seed and its pool view with two inserted notes), verifies natively the proofs the
//! module made, and times the same proof natively. Every failure exits non-zero.
//!
//! ```text
//! prover_peer fixture <out dir>        → <out dir>/transfer.pk (+ .uncompressed), <out dir>/fixture.json
//! prover_peer verify <proof file>      proof (256) ‖ 8 public inputs (8 × 32), as nox_transfer_prove returns
//! prover_peer bench <out dir> <proofs> JSON on stdout: native prepare and prove times (ms)
//! ```

use std::time::Instant;

use ark_bn254::Fr;
use nox_wallet::{PoolEvent, PoolView, Seed, TxRequest, memo};
use nox_zk::{Tree, field, groth16, transfer};
use rand_chacha_03::ChaCha20Rng;
use rand_core_06::SeedableRng;

/// The fixture wallet's seed (any fixed value: the test compares WASM with native).
const SEED: [u8; 32] = [0x42; 32];
/// The two deposits the fixture's view holds (wei).
const DEPOSITS: [u128; 2] = [1_000_000_000_000_000_000, 250_000_000_000_000_000];

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("fixture") if args.len() == 2 => fixture(&args[1]),
        Some("verify") if args.len() == 2 => verify(&args[1]),
        Some("bench") if args.len() == 3 => bench(&args[1], &args[2]),
        _ => Err("usage: prover_peer fixture <dir> | verify <proof file> | bench <dir> <proofs>".into()),
    };
    if let Err(e) = result {
        eprintln!("prover_peer: {e}");
        std::process::exit(1);
    }
}

/// A pool view of the fixture seed: both deposits queued and inserted in one batch.
fn view(rng: &mut ChaCha20Rng) -> Result<PoolView> {
    let seed = Seed::from_bytes(SEED);
    let address = seed.address()?;
    let asset = Fr::from(0u64);
    let vk = seed.viewing_key()?;
    let mut events = Vec::new();
    let mut tree = Tree::new();
    for (i, value) in DEPOSITS.into_iter().enumerate() {
        let blinding = nox_zk::note::random_scalar(rng);
        let commitment = vk.commitment(value, asset, blinding)?;
        let memo = memo::seal(&address, &asset, value, &blinding, rng);
        events.push(PoolEvent::Deposited { queue_index: i as u64, commitment, asset, amount: value, memo });
        tree.push(commitment)?;
    }
    while !tree.len().is_multiple_of(nox_wallet::state::BATCH_SIZE) {
        tree.push(Fr::from(0u64))?;
    }
    events.push(PoolEvent::BatchInserted {
        start_leaf: 0,
        first_queue: 0,
        count: DEPOSITS.len() as u64,
        new_root: tree.root(),
    });
    let mut view = PoolView::new();
    view.apply_all(&seed, &events)?;
    Ok(view)
}

/// The fixture's transaction: a payment of 0.3 ETH to a second wallet with a relayer fee, as
/// the request JSON the module reads and as the native request.
fn request() -> Result<(serde_json::Value, TxRequest)> {
    let to = Seed::from_bytes([0x07; 32]).address()?;
    let (value, fee) = (300_000_000_000_000_000u128, 1_000_000_000_000_000u128);
    let (relayer, pool, chain_id, deadline) = ([0x11u8; 20], [0x44u8; 20], 31337u64, 4_000_000_000u64);
    let json = serde_json::json!({
        "outputs": [{ "to": to.to_string(), "value": value.to_string() }],
        "fee": fee.to_string(),
        "relayer": hex::encode(relayer),
        "pool": hex::encode(pool),
        "chain_id": chain_id,
        "deadline": deadline,
    });
    let req = TxRequest {
        asset: Fr::from(0u64),
        outputs: vec![(to, value)],
        public_in: 0,
        public_out: 0,
        fee,
        recipient: [0; 20],
        relayer,
        execution_hash: [0; 32],
        chain_id,
        pool,
        deadline,
        avoid: Vec::new(),
    };
    Ok((json, req))
}

fn fixture(dir: &str) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let (pk, _) = transfer::testnet_keys()?;
    std::fs::write(format!("{dir}/transfer.pk"), transfer::proving_key_to_bytes(pk)?)?;
    // The form a browser cache keeps (nox_prover_key_bytes): the tests load it in milliseconds.
    let mut raw = Vec::new();
    ark_serialize::CanonicalSerialize::serialize_uncompressed(pk, &mut raw)?;
    std::fs::write(format!("{dir}/transfer.pk.uncompressed"), raw)?;
    let mut rng = ChaCha20Rng::from_seed([9; 32]);
    let view = view(&mut rng)?;
    let seed = Seed::from_bytes(SEED);
    let (request, _) = request()?;
    let balance = view.balance(&Fr::from(0u64));
    let out = serde_json::json!({
        "seed": hex::encode(SEED),
        "address": seed.address()?.to_string(),
        "view": String::from_utf8(view.to_json()?)?,
        "request": request,
        "spendable": balance.spendable.to_string(),
        "root": hex::encode(field::to_be32(&view.root())),
    });
    std::fs::write(format!("{dir}/fixture.json"), serde_json::to_vec_pretty(&out)?)?;
    Ok(())
}

fn verify(path: &str) -> Result<()> {
    let bytes = std::fs::read(path)?;
    if bytes.len() != groth16::PROOF_BYTES + 32 * transfer::TRANSFER_NUM_PUBLIC_INPUTS {
        return Err(format!("{} bytes: not a proof and its public inputs", bytes.len()).into());
    }
    let (proof, words) = bytes.split_at(groth16::PROOF_BYTES);
    let proof = groth16::proof_from_evm(proof.try_into()?)?;
    let w = words.chunks_exact(32).map(|c| Ok(field::from_be32(c.try_into()?)?)).collect::<Result<Vec<Fr>>>()?;
    let public = transfer::TransferPublic {
        root: w[0],
        nullifiers: [w[1], w[2]],
        commitments: [w[3], w[4]],
        public_amount: w[5],
        asset: w[6],
        context: w[7],
    };
    let (_, vk) = transfer::testnet_keys()?;
    transfer::verify(vk, &public, &proof)?;
    println!("{{\"verified\":true}}");
    Ok(())
}

fn bench(dir: &str, proofs: &str) -> Result<()> {
    let n: usize = proofs.parse()?;
    let pk = transfer::proving_key_from_bytes(&std::fs::read(format!("{dir}/transfer.pk"))?)?;
    let mut rng = ChaCha20Rng::from_seed([5; 32]);
    let view = view(&mut rng)?;
    let seed = Seed::from_bytes(SEED);
    let (_, req) = request()?;
    let t = Instant::now();
    let pk2 = transfer::proving_key_from_bytes(&std::fs::read(format!("{dir}/transfer.pk"))?)?;
    let key_load_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(pk2);
    let (mut prepare, mut prove) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        let tx = view.prepare_transaction(&seed, &req, &mut rng)?;
        prepare.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        transfer::prove_evm(&pk, &tx.public, &tx.witness, &mut rng)?;
        prove.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{}",
        serde_json::json!({
            "threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "key_load_ms": key_load_ms,
            "prepare_ms": median(&mut prepare),
            "prove_ms": median(&mut prove),
            "prove_all_ms": prove,
        })
    );
    Ok(())
}
