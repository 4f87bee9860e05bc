//! The append-only journal of tags inserted since the last snapshot (format:
//! `docs/spec/replay-cache.md`).
//!
//! ```text
//! header (32 bytes):  magic "NOXRPLJ1" (8) | version u16 LE = 1 | reserved u16 = 0 |
//!                     epoch u32 LE | check (16) = BLAKE3-derive_key(HEADER_CONTEXT, bytes 0..16)[..16]
//! record (40 bytes):  tag (32) | check (8) = BLAKE3-derive_key(RECORD_CONTEXT, epoch LE ‖ tag)[..8]
//! ```
//!
//! A torn last record (short, or failing its check) ends the valid prefix; everything after it
//! is reported as discarded and the node truncates the file to [`ParsedJournal::valid_len`]
//! before appending again.

use crate::error::JournalError;

/// Bytes of the journal header.
pub const HEADER_LEN: usize = 32;
/// Bytes of one record.
pub const RECORD_LEN: usize = 40;
/// Journal magic.
pub const MAGIC: [u8; 8] = *b"NOXRPLJ1";
/// Journal format version.
pub const VERSION: u16 = 1;
/// BLAKE3 `derive_key` context of the header check.
pub const HEADER_CONTEXT: &str = "NOX replay journal v1 header";
/// BLAKE3 `derive_key` context of the record check.
pub const RECORD_CONTEXT: &str = "NOX replay journal v1 record";

/// The header that starts a journal for `epoch`.
pub fn encode_header(epoch: u32) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[0..8].copy_from_slice(&MAGIC);
    header[8..10].copy_from_slice(&VERSION.to_le_bytes());
    header[12..16].copy_from_slice(&epoch.to_le_bytes());
    let check = header_check(&header[0..16]);
    header[16..32].copy_from_slice(&check);
    header
}

/// The record for `tag` in a journal for `epoch`.
pub fn encode_record(epoch: u32, tag: &[u8; 32]) -> [u8; RECORD_LEN] {
    let mut record = [0u8; RECORD_LEN];
    record[0..32].copy_from_slice(tag);
    record[32..40].copy_from_slice(&record_check(epoch, tag));
    record
}

fn header_check(prefix: &[u8]) -> [u8; 16] {
    let hash = blake3::Hasher::new_derive_key(HEADER_CONTEXT).update(prefix).finalize();
    let mut check = [0u8; 16];
    check.copy_from_slice(&hash.as_bytes()[..16]);
    check
}

fn record_check(epoch: u32, tag: &[u8; 32]) -> [u8; 8] {
    let hash = blake3::Hasher::new_derive_key(RECORD_CONTEXT).update(&epoch.to_le_bytes()).update(tag).finalize();
    let mut check = [0u8; 8];
    check.copy_from_slice(&hash.as_bytes()[..8]);
    check
}

/// A journal whose header is valid, split into its valid record prefix and a discarded tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedJournal<'a> {
    epoch: u32,
    records: &'a [u8],
    discarded_bytes: usize,
}

impl<'a> ParsedJournal<'a> {
    /// Validates the header and finds the longest prefix of intact records.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, JournalError> {
        let header = bytes.get(..HEADER_LEN).ok_or(JournalError::TruncatedHeader)?;
        if header[0..8] != MAGIC {
            return Err(JournalError::BadMagic);
        }
        let version = u16::from_le_bytes([header[8], header[9]]);
        if header_check(&header[0..16]) != header[16..32] {
            return Err(JournalError::HeaderChecksumMismatch);
        }
        if version != VERSION || header[10..12] != [0, 0] {
            return Err(JournalError::UnsupportedVersion(version));
        }
        let epoch = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
        let body = &bytes[HEADER_LEN..];
        let intact = body
            .chunks_exact(RECORD_LEN)
            .take_while(|record| {
                let mut tag = [0u8; 32];
                tag.copy_from_slice(&record[..32]);
                record_check(epoch, &tag) == record[32..]
            })
            .count();
        let valid = intact * RECORD_LEN;
        Ok(Self { epoch, records: &body[..valid], discarded_bytes: body.len() - valid })
    }

    /// The key epoch named in the header.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The intact records' tags, in append order.
    pub fn tags(&self) -> impl Iterator<Item = [u8; 32]> + 'a {
        self.records.chunks_exact(RECORD_LEN).map(|record| {
            let mut tag = [0u8; 32];
            tag.copy_from_slice(&record[..32]);
            tag
        })
    }

    /// Number of intact records.
    pub fn record_count(&self) -> usize {
        self.records.len() / RECORD_LEN
    }

    /// Length of the valid prefix (header plus intact records): truncate the file to this.
    pub fn valid_len(&self) -> usize {
        HEADER_LEN + self.records.len()
    }

    /// Bytes after the valid prefix (a torn or corrupt tail).
    pub fn discarded_bytes(&self) -> usize {
        self.discarded_bytes
    }
}

/// What [`crate::ReplayCache::apply_journal`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalRecovery {
    /// Intact records read.
    pub records: usize,
    /// Records whose tag was not yet in the filter.
    pub newly_inserted: usize,
    /// Length of the valid prefix; truncate the journal file to it before appending.
    pub valid_len: usize,
    /// Bytes discarded after the valid prefix. Less than one record is an ordinary torn
    /// write; more means corruption in the middle of the journal, which the node should report
    /// loudly (records after it are lost).
    pub discarded_bytes: usize,
}
