//! The wallet's files as the commands open them: the passphrase (`--passphrase-file` or
//! `NOX_WALLET_PASSPHRASE`), a new or restored wallet, the seed, an account's key file; and the
//! clap arguments that name them ([`WalletArgs`], [`RestoreArgs`]).

use std::path::{Path, PathBuf};

use clap::Args;
use nox_wallet::{
    PaymentAddress, Seed,
    file::{self, KdfParams},
};
use nox_wallet_io::WalletDir;
use rand_core_06::SeedableRng;
use zeroize::Zeroizing;

use crate::CliError;

/// Where the wallet lives.
#[derive(Args, Clone)]
pub struct WalletArgs {
    /// Wallet directory (`wallet.key`, `wallet.state`, cached proving keys).
    #[arg(long, default_value = "nox-wallet")]
    pub wallet: PathBuf,
    /// File holding the passphrase (first line). Without it, `NOX_WALLET_PASSPHRASE`.
    #[arg(long)]
    pub passphrase_file: Option<PathBuf>,
    /// The transfer proving key to prove with: the `proving.key` of a ceremony (`nox zk setup
    /// finalize --circuit transfer`), checked before use. Without it, the testnet key (public
    /// randomness), derived once and cached in the wallet directory.
    #[arg(long, value_name = "FILE")]
    pub proving_key: Option<PathBuf>,
}

/// `nox wallet restore`
#[derive(Args, Clone)]
pub struct RestoreArgs {
    /// The new wallet's directory and passphrase (the copy's passphrase).
    #[command(flatten)]
    pub wallet: WalletArgs,
    /// A copy of the backed-up `wallet.key`.
    #[arg(long)]
    pub from: PathBuf,
}

impl WalletArgs {
    /// The wallet directory.
    pub fn dir(&self) -> WalletDir {
        WalletDir::new(&self.wallet)
    }
}

/// The operating system's randomness, as the prover's RNG.
pub fn os_rng() -> rand_chacha_03::ChaCha20Rng {
    rand_chacha_03::ChaCha20Rng::from_entropy()
}

/// The passphrase: the first line of `--passphrase-file`, else `NOX_WALLET_PASSPHRASE`; never
/// empty.
pub fn passphrase(w: &WalletArgs) -> Result<Zeroizing<String>, CliError> {
    let env = std::env::var("NOX_WALLET_PASSPHRASE").ok().map(Zeroizing::new);
    passphrase_from(w.passphrase_file.as_deref(), env)
}

/// [`passphrase`] with the environment's value given.
pub fn passphrase_from(file: Option<&Path>, env: Option<Zeroizing<String>>) -> Result<Zeroizing<String>, CliError> {
    let text = match file {
        Some(f) => {
            Zeroizing::new(std::fs::read_to_string(f).map_err(|source| CliError::File { path: f.to_owned(), source })?)
        }
        None => env.ok_or(CliError::NoPassphrase)?,
    };
    let line = Zeroizing::new(text.lines().next().unwrap_or_default().to_owned());
    if line.is_empty() {
        return Err(CliError::EmptyPassphrase);
    }
    Ok(line)
}

/// `nox wallet new`: a fresh seed sealed under the passphrase; prints the address and the backup
/// advice. An existing wallet is never overwritten.
pub fn new_wallet(w: &WalletArgs) -> Result<(), CliError> {
    let path = w.dir().key_path();
    if path.exists() {
        return Err(CliError::WalletExists(path));
    }
    let pass = passphrase(w)?;
    w.dir().create()?;
    let mut rng = os_rng();
    let seed = Seed::random(&mut rng);
    let sealed = file::seal_seed(&seed, pass.as_bytes(), KdfParams::default(), &mut rng)?;
    nox_wallet_io::dir::write_private(&path, &sealed)?;
    println!("wrote {}", path.display());
    println!("your shielded address: {}", seed.address()?);
    println!(
        "BACKUP: {} holds the wallet's seed, sealed under your passphrase; it is the ONLY backup of your notes. Keep \
         a copy of it elsewhere and remember the passphrase: `nox wallet restore --from <copy> --wallet <dir>` \
         restores the wallet, and `nox wallet sync` then finds every note on the chain again.",
        path.display()
    );
    Ok(())
}

/// `nox wallet restore`: a copy of `wallet.key`, checked to open under the passphrase, becomes
/// the new wallet's key. An existing wallet is never overwritten.
pub fn restore(r: &RestoreArgs) -> Result<(), CliError> {
    let path = r.wallet.dir().key_path();
    if path.exists() {
        return Err(CliError::WalletExists(path));
    }
    let bytes = std::fs::read(&r.from).map_err(|source| CliError::File { path: r.from.clone(), source })?;
    let seed = file::open_seed(&bytes, passphrase(&r.wallet)?.as_bytes())
        .map_err(|source| CliError::SeedFile { path: r.from.clone(), source })?;
    r.wallet.dir().create()?;
    nox_wallet_io::dir::write_private(&path, &bytes)?;
    println!("restored {} ({})", path.display(), seed.address()?);
    println!("run `nox wallet sync --wallet {}` to find its notes on the chain", r.wallet.wallet.display());
    Ok(())
}

/// The wallet's seed, opened with the passphrase.
pub fn open_seed(w: &WalletArgs) -> Result<Seed, CliError> {
    let dir = w.dir();
    let bytes = dir.read_key()?;
    Ok(dir.open_seed(&bytes, passphrase(w)?.as_bytes())?)
}

/// The Ethereum account in a key file (hex private key).
pub fn read_key_file(path: &Path) -> Result<nox_chain::PrivateKeySigner, CliError> {
    let text = Zeroizing::new(
        std::fs::read_to_string(path).map_err(|source| CliError::File { path: path.to_owned(), source })?,
    );
    nox_chain::deploy::signer(&text).map_err(|source| CliError::KeyFile { path: path.to_owned(), source })
}

/// A shielded address as a command-line value (an Ethereum address says it is one).
pub fn parse_shielded(text: &str) -> Result<PaymentAddress, CliError> {
    text.trim().parse().map_err(|source| CliError::ShieldedAddress { text: text.trim().to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_passphrase_is_the_files_first_line_and_never_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("pass");
        std::fs::write(&f, "correct horse\nsecond line\n").expect("write");
        let env = || Some(Zeroizing::new("from the environment".to_owned()));
        assert_eq!(passphrase_from(Some(&f), env()).expect("file").as_str(), "correct horse");
        assert_eq!(passphrase_from(None, env()).expect("env").as_str(), "from the environment");
        let e = passphrase_from(None, None).expect_err("none");
        assert_eq!(e.to_string(), "no passphrase: give --passphrase-file or set NOX_WALLET_PASSPHRASE");
        std::fs::write(&f, "\nsecond line\n").expect("write");
        assert_eq!(passphrase_from(Some(&f), env()).expect_err("empty").to_string(), "the passphrase is empty");
        let missing = dir.path().join("missing");
        let e = passphrase_from(Some(&missing), env()).expect_err("missing");
        assert!(e.to_string().starts_with(&format!("{}: ", missing.display())), "{e}");
    }

    #[test]
    fn a_new_wallet_opens_with_its_passphrase_and_is_never_overwritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pass = dir.path().join("pass");
        std::fs::write(&pass, "pw\n").expect("write");
        let w = WalletArgs { wallet: dir.path().join("w"), passphrase_file: Some(pass.clone()), proving_key: None };
        new_wallet(&w).expect("new");
        let seed = open_seed(&w).expect("opens");
        let e = new_wallet(&w).expect_err("exists");
        assert_eq!(e.to_string(), format!("{} exists: refusing to overwrite a wallet", w.dir().key_path().display()));
        // A restored copy is the same wallet; a wrong passphrase names the copy.
        let r =
            RestoreArgs { wallet: WalletArgs { wallet: dir.path().join("r"), ..w.clone() }, from: w.dir().key_path() };
        restore(&r).expect("restore");
        assert_eq!(open_seed(&r.wallet).expect("opens").address().ok(), seed.address().ok());
        std::fs::write(&pass, "wrong\n").expect("write");
        let r2 = RestoreArgs { wallet: WalletArgs { wallet: dir.path().join("r2"), ..w.clone() }, ..r };
        let e = restore(&r2).expect_err("wrong passphrase");
        assert!(e.to_string().starts_with(&format!("{}: ", w.dir().key_path().display())), "{e}");
        assert!(!r2.wallet.dir().key_path().exists());
    }

    #[test]
    fn a_shielded_address_is_checked_and_named_in_the_error() {
        let e = parse_shielded(" 0x0000000000000000000000000000000000000001 ").expect_err("an Ethereum address");
        assert!(e.to_string().starts_with("--to 0x0000000000000000000000000000000000000001: "), "{e}");
    }
}
