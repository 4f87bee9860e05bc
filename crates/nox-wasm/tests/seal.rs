//! The sealed wallet files natively (issue 31): the seed sealed as `wallet.key` opens only with
//! its passphrase and unaltered (status 12), a file of another format is status 13, a native
//! `nox_wallet::file` key opens in the module and the module's opens natively, and the sealed
//! pool view (`state`) opens only with its own seed.

use nox_wallet::{Seed, file};
use nox_wasm::Module;
use rand_core_06::SeedableRng;

const SEED: [u8; 32] = [7; 32];

fn module() -> Module {
    let mut m = Module::new();
    m.seed(&[42; 32]).unwrap();
    m
}

#[test]
fn wallet_key_round_trip_and_refusals() {
    let mut m = module();
    let sealed = m.wallet_seal_key(&SEED, b"pass").unwrap();
    assert_eq!(m.wallet_open_key(&sealed, b"pass").unwrap(), SEED);
    assert_eq!(m.wallet_open_key(&sealed, b"Pass").unwrap_err().code(), 12);
    for at in [15, 20, 40, 48, sealed.len() - 1] {
        let mut t = sealed.clone();
        t[at] ^= 1;
        assert_eq!(m.wallet_open_key(&t, b"pass").unwrap_err().code(), 12, "byte {at}");
    }
    let mut magic = sealed.clone();
    magic[0] ^= 1;
    assert_eq!(m.wallet_open_key(&magic, b"pass").unwrap_err().code(), 13);
    assert_eq!(m.wallet_open_key(&sealed[..sealed.len() - 1], b"pass").unwrap_err().code(), 13);
    let mut lanes = sealed.clone();
    lanes[19] = 0;
    assert_eq!(m.wallet_open_key(&lanes, b"pass").unwrap_err().code(), 13);
}

#[test]
fn wallet_key_is_the_native_format_both_ways() {
    let mut m = module();
    let mut rng = rand_chacha_03::ChaCha20Rng::from_seed([9; 32]);
    let native = file::seal_seed(&Seed::from_bytes(SEED), b"pw", file::KdfParams::default(), &mut rng).unwrap();
    assert_eq!(m.wallet_open_key(&native, b"pw").unwrap(), SEED);
    let ours = m.wallet_seal_key(&SEED, b"pw").unwrap();
    assert_eq!(file::open_seed(&ours, b"pw").unwrap().as_bytes(), &SEED);
}

#[test]
fn sealed_state_opens_only_with_its_seed() {
    let mut m = module();
    let view = br#"{"any":"json the module does not read"}"#;
    let sealed = m.wallet_seal_state(&SEED, view).unwrap();
    assert!(!sealed.windows(view.len()).any(|w| w == view));
    assert_eq!(m.wallet_open_state(&SEED, &sealed).unwrap(), view);
    assert_eq!(file::open_state(&Seed::from_bytes(SEED), &sealed).unwrap(), view);
    assert_eq!(m.wallet_open_state(&[8; 32], &sealed).unwrap_err().code(), 12);
    let mut t = sealed.clone();
    t[25] ^= 1;
    assert_eq!(m.wallet_open_state(&SEED, &t).unwrap_err().code(), 12);
    assert_eq!(m.wallet_open_state(&SEED, b"NOXWLT01").unwrap_err().code(), 13);
    assert_eq!(m.wallet_seal_state(&[1; 31], view).unwrap_err().code(), 1);
}
