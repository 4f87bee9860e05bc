//! The nonce journal (docs/spec/relay.md §5): the relayer's next nonce and every transaction it
//! signed and has not seen mined, written durably **before** the transaction is broadcast. After
//! a crash or restart the relayer rebroadcasts and tracks what the journal holds, so a nonce is
//! never used twice for different bundles and never skipped.
//!
//! Writes are atomic (temporary file, fsync, rename, fsync of the directory). A journal that
//! does not parse is an error, never an empty journal: starting over could reuse a nonce.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use alloy_primitives::{Address, B256, Bytes, U256};
use serde::{Deserialize, Serialize};

/// Journal format version.
pub const VERSION: u32 = 1;

/// Why the journal could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading or writing failed.
    #[error("nonce journal {path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The file does not parse.
    #[error(
        "nonce journal {path} is damaged ({why}); refusing to start (a fresh journal could reuse a nonce): inspect it or move it aside once every listed transaction is settled"
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The parse error.
        why: String,
    },
    /// Written for another chain or account.
    #[error("nonce journal {path} belongs to {found_account} on chain {found_chain}, not {account} on {chain}")]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// Its account.
        found_account: Address,
        /// Its chain.
        found_chain: u64,
        /// This relayer's account.
        account: Address,
        /// This relayer's chain.
        chain: u64,
    },
}

/// A signed transaction not yet seen mined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pending {
    /// Its nonce.
    pub nonce: u64,
    /// Every hash signed at this nonce (replacements add one), oldest first.
    pub hashes: Vec<B256>,
    /// The latest signed transaction (EIP-2718 bytes).
    pub raw: Bytes,
    /// Gas limit.
    pub gas_limit: u64,
    /// Latest priority fee.
    pub priority_fee: u128,
    /// Latest max fee per gas.
    pub max_fee_per_gas: u128,
    /// The bundle's fee.
    pub fee: U256,
    /// Its asset.
    pub asset: Address,
    /// The payment's first nullifier (for the operator's log; the guard keeps both).
    pub nullifier: U256,
    /// The fee's value in wei when it was admitted (bumps stay below it).
    pub value_wei: U256,
    /// Fee bumps so far.
    pub bumps: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct State {
    version: u32,
    chain_id: u64,
    account: Address,
    next_nonce: u64,
    pending: Vec<Pending>,
}

/// The journal file and its contents.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    state: State,
}

impl Journal {
    /// Opens the journal at `path`, or creates an empty one (next nonce 0) if the file does not
    /// exist.
    pub fn open(path: &Path, chain_id: u64, account: Address) -> Result<Self, JournalError> {
        let io = |error| JournalError::Io { path: path.to_owned(), error };
        let state = match fs::read(path) {
            Ok(bytes) => {
                let state: State = serde_json::from_slice(&bytes)
                    .map_err(|e| JournalError::Damaged { path: path.to_owned(), why: e.to_string() })?;
                if state.version != VERSION {
                    return Err(JournalError::Damaged {
                        path: path.to_owned(),
                        why: format!("unknown version {}", state.version),
                    });
                }
                if state.chain_id != chain_id || state.account != account {
                    return Err(JournalError::Mismatch {
                        path: path.to_owned(),
                        found_account: state.account,
                        found_chain: state.chain_id,
                        account,
                        chain: chain_id,
                    });
                }
                state
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                State { version: VERSION, chain_id, account, next_nonce: 0, pending: Vec::new() }
            }
            Err(e) => return Err(io(e)),
        };
        let journal = Self { path: path.to_owned(), state };
        journal.save()?;
        Ok(journal)
    }

    /// The next nonce to use.
    pub fn next_nonce(&self) -> u64 {
        self.state.next_nonce
    }

    /// Transactions signed and not yet seen mined.
    pub fn pending(&self) -> &[Pending] {
        &self.state.pending
    }

    /// Moves the next nonce up to the chain's count of this account's transactions (some were
    /// sent by another program with the same key, or the journal is new). Never moves it down.
    pub fn reconcile(&mut self, chain_pending_count: u64) -> Result<(), JournalError> {
        if chain_pending_count > self.state.next_nonce {
            self.state.next_nonce = chain_pending_count;
            self.save()?;
        }
        Ok(())
    }

    /// Records `tx`, signed at [`Journal::next_nonce`], and advances the nonce: durable before
    /// the caller broadcasts it.
    pub fn record(&mut self, tx: Pending) -> Result<(), JournalError> {
        debug_assert_eq!(tx.nonce, self.state.next_nonce);
        self.state.next_nonce = tx.nonce + 1;
        self.state.pending.push(tx);
        self.save()
    }

    /// Takes back the last recorded transaction, never broadcast (its broadcast was refused):
    /// its nonce is reused by the next one, so no gap opens. Only the last nonce can be taken
    /// back; for any other, returns false and changes nothing.
    pub fn unrecord(&mut self, nonce: u64) -> Result<bool, JournalError> {
        if nonce + 1 != self.state.next_nonce || self.state.pending.last().map(|p| p.nonce) != Some(nonce) {
            return Ok(false);
        }
        self.state.pending.pop();
        self.state.next_nonce = nonce;
        self.save()?;
        Ok(true)
    }

    /// Replaces the transaction at `nonce` by a re-signed one (a fee bump), durably before it is
    /// broadcast.
    pub fn replace(
        &mut self,
        nonce: u64,
        hash: B256,
        raw: Bytes,
        priority_fee: u128,
        max_fee_per_gas: u128,
    ) -> Result<(), JournalError> {
        if let Some(p) = self.state.pending.iter_mut().find(|p| p.nonce == nonce) {
            p.hashes.push(hash);
            p.raw = raw;
            p.priority_fee = priority_fee;
            p.max_fee_per_gas = max_fee_per_gas;
            p.bumps += 1;
            self.save()?;
        }
        Ok(())
    }

    /// Forgets the transaction at `nonce` (mined, or its nonce taken).
    pub fn settle(&mut self, nonce: u64) -> Result<(), JournalError> {
        let before = self.state.pending.len();
        self.state.pending.retain(|p| p.nonce != nonce);
        if self.state.pending.len() != before {
            self.save()?;
        }
        Ok(())
    }

    fn save(&self) -> Result<(), JournalError> {
        let io = |error| JournalError::Io { path: self.path.clone(), error };
        let bytes = serde_json::to_vec_pretty(&self.state).map_err(|e| io(std::io::Error::other(e)))?;
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let tmp = self.path.with_extension("tmp");
        {
            let mut file = fs::File::create(&tmp).map_err(io)?;
            file.write_all(&bytes).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        fs::rename(&tmp, &self.path).map_err(io)?;
        fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(nonce: u64) -> Pending {
        Pending {
            nonce,
            hashes: vec![B256::repeat_byte(nonce as u8)],
            raw: Bytes::from(vec![nonce as u8]),
            gas_limit: 1,
            priority_fee: 1,
            max_fee_per_gas: 2,
            fee: U256::from(3u64),
            asset: Address::ZERO,
            nullifier: U256::from(nonce),
            value_wei: U256::from(3u64),
            bumps: 0,
        }
    }

    #[test]
    fn survives_reopening_and_never_reuses_a_nonce() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nonces.json");
        let me = Address::repeat_byte(1);
        let mut j = Journal::open(&path, 5, me).unwrap();
        j.reconcile(7).unwrap();
        j.record(tx(7)).unwrap();
        j.record(tx(8)).unwrap();
        // Only the last can be taken back.
        assert!(!j.unrecord(7).unwrap());
        assert!(j.unrecord(8).unwrap());
        j.record(tx(8)).unwrap();
        j.replace(8, B256::repeat_byte(0xee), Bytes::from(vec![9]), 2, 4).unwrap();
        drop(j);
        let mut j = Journal::open(&path, 5, me).unwrap();
        assert_eq!(j.next_nonce(), 9);
        assert_eq!(j.pending().len(), 2);
        assert_eq!(j.pending()[1].hashes.len(), 2);
        assert_eq!(j.pending()[1].bumps, 1);
        // The chain's count never moves the nonce down.
        j.reconcile(3).unwrap();
        assert_eq!(j.next_nonce(), 9);
        j.settle(7).unwrap();
        assert_eq!(Journal::open(&path, 5, me).unwrap().pending().len(), 1);
    }

    #[test]
    fn damaged_or_foreign_journals_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nonces.json");
        Journal::open(&path, 5, Address::ZERO).unwrap();
        assert!(matches!(Journal::open(&path, 6, Address::ZERO), Err(JournalError::Mismatch { .. })));
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(matches!(Journal::open(&path, 5, Address::ZERO), Err(JournalError::Damaged { .. })));
    }
}
