//! Proving with progress: the elapsed-time [`Ticker`] on stderr, the wallet's proving keys
//! (the testnet keys cached in the wallet directory, or a ceremony's transfer key), and a
//! prepared transaction's proof.

use std::{
    io::IsTerminal,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use nox_wallet_io::keys::{self, CachedKey, ProvingKey};

use crate::{CliError, files::WalletArgs};

/// Shows elapsed time while a long computation runs (redrawn in place on a terminal; a start
/// and an end line otherwise).
pub struct Ticker {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    started: Instant,
    label: String,
}

impl Ticker {
    /// Starts showing `label` and the time since now.
    pub fn start(label: &str) -> Self {
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

    /// Stops it and prints the time taken.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            eprint!("\r");
        }
        eprintln!("{}: done in {:.2} s", self.label, self.started.elapsed().as_secs_f64());
    }
}

/// A circuit's testnet proving key, cached in the wallet directory after the first use
/// (`nox_wallet_io::keys`): a corrupt, truncated or foreign cache is reported and derived
/// again, never used.
pub fn cached_key(w: &WalletArgs, circuit: &CachedKey) -> Result<ProvingKey, CliError> {
    match keys::load_cached(&w.wallet, circuit) {
        Ok(Some(pk)) => return Ok(pk),
        Ok(None) => {}
        Err(why) => eprintln!(
            "the cached {} proving key {} is not used ({why}): deriving it again",
            circuit.what,
            keys::cache_path(&w.wallet, circuit).display()
        ),
    }
    let t = Ticker::start(&format!("deriving the testnet {} proving key (first use; cached afterwards)", circuit.what));
    let pk = keys::derive(&w.wallet, circuit)?;
    t.finish();
    Ok(pk)
}

/// The transfer proving key: `--proving-key` (a ceremony's, checked), else the cached testnet key.
pub fn transfer_keys(w: &WalletArgs) -> Result<ProvingKey, CliError> {
    if let Some(file) = &w.proving_key {
        return ceremony_transfer_key(file);
    }
    cached_key(w, &keys::TRANSFER)
}

/// A transfer proving key from a ceremony, checked before use (`nox_wallet_io::keys`). Each
/// proof is then verified against the key's own verifying key before it leaves.
fn ceremony_transfer_key(file: &Path) -> Result<ProvingKey, CliError> {
    let k = keys::ceremony_transfer_key(file)?;
    eprintln!("proving with the key {} ({} bytes, keccak {})", file.display(), k.len, k.keccak);
    Ok(k.key)
}

/// The insertion circuit's (testnet) proving key.
pub fn insert_keys(w: &WalletArgs) -> Result<ProvingKey, CliError> {
    cached_key(w, &keys::INSERT)
}

/// Proves a prepared transaction (checked locally before it is sent anywhere).
pub fn prove_transaction(w: &WalletArgs, prepared: &nox_wallet::PreparedTransaction) -> Result<[u8; 256], CliError> {
    let pk = transfer_keys(w)?;
    let t = Ticker::start("proving the transaction (2 inputs, 2 outputs)");
    let proof = nox_pay::prove(&pk, prepared, &mut crate::files::os_rng())?;
    t.finish();
    Ok(proof)
}
