//! Typed errors of the replay crate.

/// Bloom filter parameters that cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ParameterError {
    /// Capacity must be at least one tag.
    #[error("capacity must be positive")]
    ZeroCapacity,
    /// The false-positive rate must lie strictly between 0 and 1.
    #[error("false-positive rate must be in (0, 1), got {0}")]
    FalsePositiveRate(f64),
    /// The filter would exceed [`crate::MAX_FILTER_BITS`].
    #[error("filter of {0} bits exceeds the supported maximum")]
    TooLarge(u64),
    /// Bits must be a positive multiple of 64 and hashes in `1..=MAX_HASHES`.
    #[error("invalid filter shape: {bits} bits, {hashes} hashes")]
    Shape {
        /// Requested bits.
        bits: u64,
        /// Requested hash count.
        hashes: u32,
    },
}

/// A snapshot that cannot be loaded. Every variant means "do not trust this file".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SnapshotError {
    /// The input ends before the encoding does.
    #[error("snapshot is truncated")]
    Truncated,
    /// The input continues after the trailer.
    #[error("snapshot has {0} trailing bytes")]
    TrailingBytes(usize),
    /// Not a replay-cache snapshot.
    #[error("bad snapshot magic")]
    BadMagic,
    /// A version this code does not read.
    #[error("unsupported snapshot version {0}")]
    UnsupportedVersion(u16),
    /// The BLAKE3 checksum does not match the content.
    #[error("snapshot checksum mismatch")]
    ChecksumMismatch,
    /// A reserved field is not zero.
    #[error("reserved snapshot field is not zero")]
    ReservedNotZero,
    /// The header describes an unusable filter.
    #[error("snapshot parameters: {0}")]
    Parameters(#[from] ParameterError),
    /// The header's set-bit count disagrees with the body.
    #[error("snapshot claims {claimed} set bits, body has {actual}")]
    SetBitsMismatch {
        /// Count in the header.
        claimed: u64,
        /// Count of the body.
        actual: u64,
    },
    /// A page marked present in the page map holds only zeros (non-canonical encoding).
    #[error("snapshot page marked present is empty")]
    EmptyPresentPage,
    /// The page map marks pages beyond the end of the filter.
    #[error("snapshot page map marks pages past the end")]
    PageMapOverflow,
}

/// A journal that cannot be used at all (a torn or corrupt *tail* is not an error: see
/// [`crate::JournalRecovery`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JournalError {
    /// Fewer bytes than a header: the journal was created but its header never made it to disk.
    /// No record can follow a missing header, so the journal is empty.
    #[error("journal header is truncated")]
    TruncatedHeader,
    /// Not a replay journal.
    #[error("bad journal magic")]
    BadMagic,
    /// A version this code does not read.
    #[error("unsupported journal version {0}")]
    UnsupportedVersion(u16),
    /// The header checksum does not match.
    #[error("journal header checksum mismatch")]
    HeaderChecksumMismatch,
    /// Bytes that a commit slot proves were once durable are unreadable (or, in a version 1
    /// journal, an intact record follows a bad one): the tags after `offset` are lost. The
    /// epoch is unprotected; the node must refuse its packets until the epoch ends.
    #[error(
        "journal damaged at offset {offset}: bytes up to {durable_len} were durable, tags after the damage are lost"
    )]
    Damaged {
        /// File offset of the first slot that fails its check.
        offset: u64,
        /// The durable length claimed by the latest intact commit slot (version 1: the file
        /// length up to the last intact record).
        durable_len: u64,
    },
    /// The journal belongs to another key epoch than the cache it is applied to.
    #[error("journal is for epoch {journal}, cache is for epoch {cache}")]
    EpochMismatch {
        /// Epoch in the journal header.
        journal: u32,
        /// Epoch of the cache.
        cache: u32,
    },
}

/// Errors of [`crate::EpochReplayCaches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EpochError {
    /// No cache is open for this epoch (never opened, or already retired).
    #[error("no replay cache for epoch {0}")]
    UnknownEpoch(u32),
    /// A cache for this epoch is already open.
    #[error("replay cache for epoch {0} is already open")]
    AlreadyOpen(u32),
    /// Opening another epoch would exceed the configured number of live caches.
    #[error("at most {0} epoch caches may be open at once")]
    TooManyEpochs(usize),
}
