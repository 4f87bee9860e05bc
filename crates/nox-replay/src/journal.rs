//! The append-only journal of tags inserted since the last snapshot (format:
//! `docs/spec/replay-cache.md` §3).
//!
//! ```text
//! header (32 bytes):  magic "NOXRPLJ1" (8) | version u16 LE = 2 | reserved u16 = 0 |
//!                     epoch u32 LE | check (16) = BLAKE3-derive_key(HEADER_CONTEXT, bytes 0..16)[..16]
//! slot (40 bytes), repeated, one of:
//!   record:  tag (32)                              | BLAKE3-derive_key(RECORD_CONTEXT, epoch LE ‖ tag)[..8]
//!   commit:  durable_len u64 LE (8) | zero (24)    | BLAKE3-derive_key(COMMIT_CONTEXT, epoch LE ‖ bytes 0..32)[..8]
//! ```
//!
//! The writer appends a batch of records, `fdatasync`s it, and starts the *next* batch with a
//! commit slot naming the file length that sync made durable. A commit slot on disk therefore
//! proves that everything before `durable_len` once reached stable storage.
//!
//! Reading ([`ParsedJournal::parse`]): the valid prefix runs up to the first slot that is short
//! or fails both checks. Bytes after it are
//! - a **torn tail** (cut off, reported in [`ParsedJournal::discarded_bytes`]) when no commit
//!   slot anywhere in the file claims a durable length past the first bad slot: they were never
//!   acknowledged as durable, so no packet left the node on their account;
//! - **damage** ([`JournalError::Damaged`]) when some intact commit slot does: bytes that were
//!   once durable are gone, and the tags in them are lost.
//!
//! Version 1 journals (no commit slots) are still read: there, an intact record after the first
//! bad slot is damage, anything else a torn tail.

use crate::error::JournalError;

/// Bytes of the journal header.
pub const HEADER_LEN: usize = 32;
/// Bytes of one slot (record or commit).
pub const RECORD_LEN: usize = 40;
/// Journal magic.
pub const MAGIC: [u8; 8] = *b"NOXRPLJ1";
/// Journal format version written by this code.
pub const VERSION: u16 = 2;
/// The previous version (records only, no commit slots), still read.
pub const VERSION_1: u16 = 1;
/// BLAKE3 `derive_key` context of the header check (both versions).
pub const HEADER_CONTEXT: &str = "NOX replay journal v1 header";
/// BLAKE3 `derive_key` context of the record check (both versions).
pub const RECORD_CONTEXT: &str = "NOX replay journal v1 record";
/// BLAKE3 `derive_key` context of the commit-slot check (version 2).
pub const COMMIT_CONTEXT: &str = "NOX replay journal v2 commit";

/// The header that starts a (version 2) journal for `epoch`.
pub fn encode_header(epoch: u32) -> [u8; HEADER_LEN] {
    encode_header_version(epoch, VERSION)
}

/// A header of an explicit `version` (1 or 2), e.g. to produce legacy test journals.
pub fn encode_header_version(epoch: u32, version: u16) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[0..8].copy_from_slice(&MAGIC);
    header[8..10].copy_from_slice(&version.to_le_bytes());
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

/// The commit slot stating that the first `durable_len` bytes of the journal file (header
/// included) were made durable by a completed sync. Write it at the start of the batch that
/// follows that sync, never in the batch it describes.
pub fn encode_commit(epoch: u32, durable_len: u64) -> [u8; RECORD_LEN] {
    let mut body = [0u8; 32];
    body[0..8].copy_from_slice(&durable_len.to_le_bytes());
    let mut slot = [0u8; RECORD_LEN];
    slot[0..32].copy_from_slice(&body);
    slot[32..40].copy_from_slice(&commit_check(epoch, body));
    slot
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

fn commit_check(epoch: u32, body: [u8; 32]) -> [u8; 8] {
    let hash = blake3::Hasher::new_derive_key(COMMIT_CONTEXT).update(&epoch.to_le_bytes()).update(&body).finalize();
    let mut check = [0u8; 8];
    check.copy_from_slice(&hash.as_bytes()[..8]);
    check
}

/// What one 40-byte slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Record,
    Commit(u64),
    Bad,
}

fn classify(epoch: u32, version: u16, slot: &[u8]) -> Slot {
    let Ok(slot) = <&[u8; RECORD_LEN]>::try_from(slot) else { return Slot::Bad };
    let mut body = [0u8; 32];
    body.copy_from_slice(&slot[..32]);
    if record_check(epoch, &body) == slot[32..] {
        return Slot::Record;
    }
    if version >= VERSION && body[8..].iter().all(|&b| b == 0) && commit_check(epoch, body) == slot[32..] {
        let mut len = [0u8; 8];
        len.copy_from_slice(&body[..8]);
        return Slot::Commit(u64::from_le_bytes(len));
    }
    Slot::Bad
}

/// A journal whose header is valid, split into its valid prefix and a discarded torn tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedJournal<'a> {
    epoch: u32,
    version: u16,
    /// The valid slots (records and commit slots), after the header.
    slots: &'a [u8],
    records: usize,
    durable_len: u64,
    discarded_bytes: usize,
}

impl<'a> ParsedJournal<'a> {
    /// Validates the header, finds the longest prefix of intact slots, and tells a torn tail
    /// (returned, with [`ParsedJournal::discarded_bytes`]) from damage to bytes that were once
    /// durable ([`JournalError::Damaged`]).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, JournalError> {
        let header = bytes.get(..HEADER_LEN).ok_or(JournalError::TruncatedHeader)?;
        if header[0..8] != MAGIC {
            return Err(JournalError::BadMagic);
        }
        let version = u16::from_le_bytes([header[8], header[9]]);
        if header_check(&header[0..16]) != header[16..32] {
            return Err(JournalError::HeaderChecksumMismatch);
        }
        if !(version == VERSION || version == VERSION_1) || header[10..12] != [0, 0] {
            return Err(JournalError::UnsupportedVersion(version));
        }
        let epoch = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
        let body = &bytes[HEADER_LEN..];
        let mut intact_slots = 0usize;
        let mut records = 0usize;
        let mut first_bad: Option<usize> = None;
        // The largest durable length any intact commit slot claims, wherever it lies.
        let mut durable_len = HEADER_LEN as u64;
        // Version 1: the end of the last intact record after the first bad slot, if any.
        let mut intact_after_bad: Option<u64> = None;
        for (index, slot) in body.chunks(RECORD_LEN).enumerate() {
            let kind = classify(epoch, version, slot);
            if let Slot::Commit(len) = kind {
                durable_len = durable_len.max(len);
            }
            match (first_bad, kind) {
                (None, Slot::Bad) => first_bad = Some(index),
                (None, Slot::Record) => {
                    intact_slots += 1;
                    records += 1;
                }
                (None, Slot::Commit(_)) => intact_slots += 1,
                (Some(_), Slot::Record) => intact_after_bad = Some((HEADER_LEN + (index + 1) * RECORD_LEN) as u64),
                (Some(_), _) => {}
            }
        }
        let valid = intact_slots * RECORD_LEN;
        if first_bad.is_some() {
            let first_bad_offset = (HEADER_LEN + valid) as u64;
            let lost_up_to = if version == VERSION_1 { intact_after_bad.unwrap_or(0) } else { durable_len };
            if lost_up_to > first_bad_offset {
                return Err(JournalError::Damaged { offset: first_bad_offset, durable_len: lost_up_to });
            }
        }
        durable_len = durable_len.min((HEADER_LEN + valid) as u64);
        Ok(Self { epoch, version, slots: &body[..valid], records, durable_len, discarded_bytes: body.len() - valid })
    }

    /// The key epoch named in the header.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The format version of the file (1 or 2).
    pub fn version(&self) -> u16 {
        self.version
    }

    /// The intact records' tags, in append order (commit slots skipped).
    pub fn tags(&self) -> impl Iterator<Item = [u8; 32]> + 'a {
        let (epoch, version) = (self.epoch, self.version);
        // Every slot of the valid prefix is intact: a record or a commit slot. Only a slot whose
        // bytes 8..32 are zero can be a commit slot, so the others need no second hash.
        self.slots
            .chunks_exact(RECORD_LEN)
            .filter(move |slot| slot[8..32].iter().any(|&b| b != 0) || classify(epoch, version, slot) == Slot::Record)
            .map(|slot| {
                let mut tag = [0u8; 32];
                tag.copy_from_slice(&slot[..32]);
                tag
            })
    }

    /// Number of intact records.
    pub fn record_count(&self) -> usize {
        self.records
    }

    /// Length of the valid prefix (header plus intact slots): truncate the file to this.
    pub fn valid_len(&self) -> usize {
        HEADER_LEN + self.slots.len()
    }

    /// The longest prefix a commit slot proves durable (at least the header's length).
    pub fn durable_len(&self) -> u64 {
        self.durable_len
    }

    /// Bytes of the torn tail after the valid prefix (never acknowledged as durable).
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
    /// Bytes of the torn tail cut off after the valid prefix: a batch whose sync never
    /// completed, so no packet was released on its account. (Damage to bytes that were once
    /// durable is not a tail: it is [`crate::JournalError::Damaged`].)
    pub discarded_bytes: usize,
}
