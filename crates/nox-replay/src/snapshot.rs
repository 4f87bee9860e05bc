//! Snapshot encoding of a [`ReplayCache`] (format: `docs/spec/replay-cache.md`).
//!
//! ```text
//! header (64 bytes, little-endian):
//!   0  magic "NOXRPLS1"      8   version u16 = 1     10 reserved u16 = 0   12 epoch u32
//!   16 bits m u64            24  hashes k u32        28 reserved u32 = 0
//!   32 design capacity u64   40  design FP rate f64  48 set bits u64       56 inserted u64
//! page map: ⌈pages/8⌉ bytes, bit i (LSB first) set iff 4 KiB page i has a non-zero word
//! pages:    each present page's words as u64 LE (512 words; the last page may be shorter)
//! trailer:  BLAKE3-derive_key("NOX replay snapshot v1", everything before) (32 bytes)
//! ```
//!
//! Empty pages are skipped both in the file and on load, so a lightly used filter is small on
//! disk and its untouched pages stay non-resident after a restart.

use std::io::{self, Write};

use crate::cache::ReplayCache;
use crate::error::SnapshotError;
use crate::filter::{BitArray, WORDS_PER_PAGE};
use crate::params::BloomParameters;

/// Bytes of the snapshot header.
pub const SNAPSHOT_HEADER_LEN: usize = 64;
/// Bytes of the snapshot trailer (the checksum).
pub const SNAPSHOT_TRAILER_LEN: usize = 32;
const MAGIC: [u8; 8] = *b"NOXRPLS1";
const VERSION: u16 = 1;
const CHECKSUM_CONTEXT: &str = "NOX replay snapshot v1";

fn page_count(words: usize) -> usize {
    words.div_ceil(WORDS_PER_PAGE)
}

fn page_range(page: usize, words: usize) -> std::ops::Range<usize> {
    let start = page * WORDS_PER_PAGE;
    start..(start + WORDS_PER_PAGE).min(words)
}

/// A writer that hashes everything it passes on.
struct HashingWriter<'w, W: Write> {
    inner: &'w mut W,
    hasher: blake3::Hasher,
}

impl<W: Write> HashingWriter<'_, W> {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hasher.update(bytes);
        self.inner.write_all(bytes)
    }
}

impl ReplayCache {
    fn snapshot_header(&self) -> [u8; SNAPSHOT_HEADER_LEN] {
        let params = self.parameters();
        let mut header = [0u8; SNAPSHOT_HEADER_LEN];
        header[0..8].copy_from_slice(&MAGIC);
        header[8..10].copy_from_slice(&VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&self.epoch().to_le_bytes());
        header[16..24].copy_from_slice(&params.bits().to_le_bytes());
        header[24..28].copy_from_slice(&params.hashes().to_le_bytes());
        header[32..40].copy_from_slice(&params.design_capacity().to_le_bytes());
        header[40..48].copy_from_slice(&params.design_false_positive_rate().to_bits().to_le_bytes());
        header[48..56].copy_from_slice(&self.set_bits().to_le_bytes());
        header[56..64].copy_from_slice(&self.inserted().to_le_bytes());
        header
    }

    /// Streams the snapshot into `writer` (a file, a socket, a `Vec`), hashing as it goes, with
    /// one page of buffer: no second copy of the filter in memory. The crate does no I/O itself.
    pub fn write_snapshot<W: Write>(&self, writer: &mut W) -> io::Result<()> {
        let mut out = HashingWriter { inner: writer, hasher: blake3::Hasher::new_derive_key(CHECKSUM_CONTEXT) };
        out.write_all(&self.snapshot_header())?;
        let words = self.bits.words();
        let pages = page_count(words.len());
        let mut page_map = vec![0u8; pages.div_ceil(8)];
        for page in 0..pages {
            if words[page_range(page, words.len())].iter().any(|word| *word != 0) {
                page_map[page / 8] |= 1 << (page % 8);
            }
        }
        out.write_all(&page_map)?;
        let mut buffer = Vec::with_capacity(WORDS_PER_PAGE * 8);
        for page in (0..pages).filter(|page| page_map[page / 8] & (1 << (page % 8)) != 0) {
            buffer.clear();
            for word in &words[page_range(page, words.len())] {
                buffer.extend_from_slice(&word.to_le_bytes());
            }
            out.write_all(&buffer)?;
        }
        let checksum = out.hasher.finalize();
        out.inner.write_all(checksum.as_bytes())
    }

    /// The snapshot as one buffer (convenience over [`ReplayCache::write_snapshot`]; for a
    /// full 10⁷ filter this briefly doubles memory, so the node should stream instead).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = self.write_snapshot(&mut bytes);
        bytes
    }

    /// Decodes and fully validates a snapshot: structure and lengths first (nothing is
    /// allocated for a header that the input cannot back), then the checksum, then the
    /// set-bit count against the body.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SnapshotError> {
        let header = bytes.get(..SNAPSHOT_HEADER_LEN).ok_or(SnapshotError::Truncated)?;
        if header[0..8] != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let version = u16::from_le_bytes([header[8], header[9]]);
        if version != VERSION {
            return Err(SnapshotError::UnsupportedVersion(version));
        }
        let u32_at = |at: usize| u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
        let u64_at = |at: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&header[at..at + 8]);
            u64::from_le_bytes(word)
        };
        if header[10..12] != [0, 0] || u32_at(28) != 0 {
            return Err(SnapshotError::ReservedNotZero);
        }
        let epoch = u32_at(12);
        let params = BloomParameters::from_parts(u64_at(16), u32_at(24), u64_at(32), f64::from_bits(u64_at(40)))?;
        let (claimed_set_bits, inserted) = (u64_at(48), u64_at(56));

        let words = params.words();
        let pages = page_count(words);
        let map_start = SNAPSHOT_HEADER_LEN;
        let map_end = map_start + pages.div_ceil(8);
        let page_map = bytes.get(map_start..map_end).ok_or(SnapshotError::Truncated)?;
        if !pages.is_multiple_of(8) && page_map.last().is_some_and(|last| last >> (pages % 8) != 0) {
            return Err(SnapshotError::PageMapOverflow);
        }
        let is_present = |page: usize| page_map[page / 8] & (1 << (page % 8)) != 0;
        let body_len: usize =
            (0..pages).filter(|&page| is_present(page)).map(|page| page_range(page, words).len() * 8).sum();
        let expected = map_end + body_len + SNAPSHOT_TRAILER_LEN;
        if bytes.len() < expected {
            return Err(SnapshotError::Truncated);
        }
        if bytes.len() > expected {
            return Err(SnapshotError::TrailingBytes(bytes.len() - expected));
        }
        let (content, trailer) = bytes.split_at(expected - SNAPSHOT_TRAILER_LEN);
        let checksum = blake3::Hasher::new_derive_key(CHECKSUM_CONTEXT).update(content).finalize();
        if checksum.as_bytes()[..] != trailer[..] {
            return Err(SnapshotError::ChecksumMismatch);
        }

        let mut bits = BitArray::zeroed(&params);
        let mut body = &content[map_end..];
        for page in (0..pages).filter(|&page| is_present(page)) {
            let range = page_range(page, words);
            let (page_bytes, rest) = body.split_at(range.len() * 8);
            body = rest;
            if page_bytes.iter().all(|byte| *byte == 0) {
                return Err(SnapshotError::EmptyPresentPage);
            }
            for (word, chunk) in bits.words_mut()[range].iter_mut().zip(page_bytes.chunks_exact(8)) {
                let mut le = [0u8; 8];
                le.copy_from_slice(chunk);
                *word = u64::from_le_bytes(le);
            }
        }
        bits.recount();
        if bits.set_bits() != claimed_set_bits {
            return Err(SnapshotError::SetBitsMismatch { claimed: claimed_set_bits, actual: bits.set_bits() });
        }
        Ok(ReplayCache::from_parts(epoch, params, bits, inserted))
    }
}
