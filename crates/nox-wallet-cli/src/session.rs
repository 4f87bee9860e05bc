//! A wallet session on a pool: where the pool is ([`PoolAt`], resolved by the command from its
//! testnet, chain preset or flags), the provider reads go through, the sync with progress, the
//! balance, and the journal's recall before anything is handed over.

use std::time::Instant;

use alloy::{
    primitives::{Address, B256},
    providers::{DynProvider, Provider, ProviderBuilder},
};
use ark_bn254::Fr;
use nox_wallet::{PoolView, Seed};
use nox_wallet_io::chain::{PoolSpan, SyncProgress, unit_of};
use nox_zk::field;

use crate::{CliError, files::WalletArgs};

/// Where the pool is.
#[derive(Clone, Debug)]
pub struct PoolAt {
    /// The JSON-RPC URL every read (and send) goes through.
    pub rpc: String,
    /// The ShieldedPool.
    pub pool: Address,
    /// The BatchExecutor, when the testnet or chain record names one.
    pub executor: Option<Address>,
    /// The first block scanned by a wallet without state.
    pub from_block: u64,
}

/// A read-only provider of `rpc`.
pub fn read_provider(rpc: &str) -> Result<DynProvider, CliError> {
    let url = rpc.parse().map_err(|e| CliError::RpcUrl { url: rpc.to_owned(), why: format!("{e}") })?;
    Ok(ProviderBuilder::new().connect_http(url).erased())
}

/// An asset's address as the circuit's field element.
pub fn asset_word(a: Address) -> Fr {
    field::address(&a.0.0)
}

/// A field element holding an address, as the address.
pub fn fr_address(a: &Fr) -> Address {
    Address::from_slice(&field::to_be32(a)[12..])
}

/// The sync's progress line (stderr) for `p`, `started` being when the sync began.
pub fn sync_line(p: &SyncProgress<'_>, started: Instant) -> String {
    match p {
        SyncProgress::Page { first, to, head, events, new_notes } => {
            format!(
                "sync: blocks {first}..{to} of {head} scanned, {events} pool events, {new_notes} new note(s) of this wallet"
            )
        }
        SyncProgress::Corrupt(c) => format!(
            "WARNING: a note addressed to this wallet at queue index {} (commitment 0x{}) does not open or does not \
             match its commitment ({:?}{}): it was tampered with or re-targeted and cannot be spent; tell the sender",
            c.queue_index,
            hex::encode(field::to_be32(&c.commitment)),
            c.reason,
            c.claimed_value.map(|v| format!(", claims {v} base units")).unwrap_or_default()
        ),
        SyncProgress::Done { found, corrupt } => {
            format!("sync: done in {:.2} s ({found} note(s) found, {corrupt} corrupt)", started.elapsed().as_secs_f64())
        }
    }
}

/// Opens the wallet and applies the pool's events since its view's last block
/// (`nox_wallet_io::chain::sync`) through `provider`, with progress on stderr (blocks and
/// events scanned, this wallet's notes found, and a warning for every ciphertext addressed to it
/// that does not open or does not match its commitment: tampered or re-targeted, reported, never
/// silently dropped); saves the view. A failed read is [`CliError::Sync`] with `is_read()`.
pub async fn sync_view(w: &WalletArgs, at: &PoolAt, provider: &DynProvider) -> Result<(Seed, PoolView), CliError> {
    let seed = crate::files::open_seed(w)?;
    let dir = w.dir();
    let mut view = dir.load_view(&seed, at.from_block)?;
    let started = Instant::now();
    let span = PoolSpan { pool: at.pool, from_block: at.from_block };
    let mut progress = |p: SyncProgress<'_>| eprintln!("{}", sync_line(&p, started));
    nox_wallet_io::chain::sync(provider, span, &seed, &mut view, &mut progress).await?;
    dir.save_view(&seed, &view, &mut crate::files::os_rng())?;
    Ok((seed, view))
}

/// `nox wallet balance`'s lines: the pool and block, every asset's balance (its unit read
/// through `provider`), the commitments queued for insertion.
pub async fn balance_lines(provider: &DynProvider, pool: Address, view: &PoolView) -> Vec<String> {
    let mut lines = vec![format!("pool {pool} synced to block {}", view.last_block)];
    let assets = view.assets();
    if assets.is_empty() {
        lines.push("no notes".to_owned());
    }
    for a in assets {
        let unit = unit_of(provider, fr_address(&a)).await;
        let b = view.balance(&a);
        lines.push(format!(
            "{}: spendable {} in {} note(s) (largest {}, largest two {}), pending insertion {}",
            unit.symbol,
            unit.show(b.spendable),
            b.notes,
            unit.show(b.largest),
            unit.show(b.largest_pair),
            unit.show(b.pending),
        ));
    }
    let queued = view.queued().count();
    if queued > 0 {
        lines.push(format!("{queued} commitment(s) queued for the next batch insertion (a relayer inserts them)"));
    }
    lines
}

/// Before a command hands a transaction over: if an earlier run of the same command (`intent`)
/// lost its answer, asks the chain about that transaction (`nox_wallet_io::send::recall`).
/// `Some((hash, block))`: it landed, and the caller reports it and sends nothing; `None`:
/// nothing outstanding (or it can no longer land), send. Still pending: an `UNCONFIRMED`
/// error, nothing sent.
pub async fn journal_recall(
    w: &WalletArgs,
    provider: &DynProvider,
    pool: Address,
    intent: &str,
) -> Result<Option<(B256, u64)>, CliError> {
    use nox_wallet_io::send::{Recall, recall};
    match recall(&w.dir(), provider, pool, intent).await? {
        Recall::Landed { tx_hash, block } => Ok(Some((tx_hash, block))),
        Recall::Nothing => Ok(None),
        Recall::SendAgain(why) => {
            eprintln!("{why}");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_survives_the_field_and_back() {
        let a: Address = "0x00000000000000000000000000000000deadbeef".parse().expect("address");
        assert_eq!(fr_address(&asset_word(a)), a);
        assert_eq!(fr_address(&asset_word(Address::ZERO)), Address::ZERO);
    }

    #[test]
    fn a_bad_rpc_url_is_named() {
        let e = read_provider("not a url").expect_err("refused");
        assert!(e.to_string().starts_with("RPC URL \"not a url\": "), "{e}");
    }

    #[test]
    fn the_sync_lines_say_what_was_scanned_and_found() {
        let page = SyncProgress::Page { first: 10, to: 19, head: 30, events: 4, new_notes: 1 };
        assert_eq!(
            sync_line(&page, Instant::now()),
            "sync: blocks 10..19 of 30 scanned, 4 pool events, 1 new note(s) of this wallet"
        );
        let done = sync_line(&SyncProgress::Done { found: 2, corrupt: 0 }, Instant::now());
        assert!(done.starts_with("sync: done in ") && done.ends_with(" s (2 note(s) found, 0 corrupt)"), "{done}");
    }
}
