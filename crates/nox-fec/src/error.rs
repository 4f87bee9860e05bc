//! Typed errors. Every error is `Clone + Send + Sync` and says which bound or
//! field was violated, so a caller can log it or count it without parsing text.

use crate::wire::{HEADER_LEN, MessageId};

/// A message layout (data shards, parity shards, message length) that the
/// format cannot express.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// A message needs at least one data shard.
    #[error("a message needs at least one data shard")]
    NoDataShards,
    /// Data plus parity shards exceed [`crate::MAX_TOTAL_SHARDS`].
    #[error("{data} data + {parity} parity shards exceed the limit of 255 shards")]
    TooManyShards {
        /// Requested data shards.
        data: usize,
        /// Requested parity shards.
        parity: usize,
    },
    /// The message length does not fit the 32-bit length field, or needs more
    /// than 255 shards at the given fragment size.
    #[error("a message of {message_len} bytes is larger than the {max} bytes this layout allows")]
    MessageTooLarge {
        /// Length of the message.
        message_len: usize,
        /// Largest length allowed.
        max: usize,
    },
    /// More data shards than needed: the last data shard would hold only
    /// padding. The format allows exactly one layout per (length, d).
    #[error("{data_shards} data shards for {message_len} bytes leave a data shard with no message byte")]
    PaddingOnlyShard {
        /// Length of the message.
        message_len: usize,
        /// Requested data shards.
        data_shards: usize,
    },
    /// The payload available per packet cannot hold the header and two bytes.
    #[error("a fragment of at most {max_fragment_len} bytes cannot hold the header and a shard (minimum {min})")]
    FragmentTooSmall {
        /// The given maximum fragment length.
        max_fragment_len: usize,
        /// The smallest usable maximum fragment length.
        min: usize,
    },
    /// A parity ratio above 100 parity shards per data shard was requested.
    #[error("parity ratio of {per_mille} per mille is above the maximum of 100 000")]
    RatioTooLarge {
        /// The requested ratio, in parity shards per thousand data shards.
        per_mille: u32,
    },
}

/// Bytes that are not a well-formed fragment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FragmentError {
    /// Shorter than the fixed header.
    #[error("fragment of {len} bytes is shorter than the {HEADER_LEN}-byte header")]
    Truncated {
        /// Length received.
        len: usize,
    },
    /// A format version this implementation does not speak.
    #[error("unsupported fragment format version {0}")]
    UnsupportedVersion(u8),
    /// The counts and length in the header do not form a valid layout.
    #[error("invalid layout in header: {0}")]
    InvalidLayout(#[from] LayoutError),
    /// The shard index is not below d + p.
    #[error("shard index {index} is out of range for {total} shards")]
    IndexOutOfRange {
        /// Index in the header.
        index: u8,
        /// d + p from the header.
        total: usize,
    },
    /// The bytes after the header are not exactly the shard length that the
    /// header implies (a truncated or oversized fragment).
    #[error("fragment carries {actual} shard bytes, its header implies {expected}")]
    ShardLengthMismatch {
        /// Shard length implied by the header.
        expected: usize,
        /// Bytes present after the header.
        actual: usize,
    },
}

/// Encoding or decoding failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The message is not the length the layout was planned for.
    #[error("message is {actual} bytes, the layout was planned for {expected}")]
    MessageLengthMismatch {
        /// Length in the layout.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// Fewer distinct shards than data shards: the message cannot be rebuilt.
    #[error("only {received} distinct shards of the {needed} needed")]
    NotEnoughShards {
        /// Distinct valid shards received.
        received: usize,
        /// Data shards d.
        needed: usize,
    },
    /// A shard index is not below d + p.
    #[error("shard index {index} is out of range for {total} shards")]
    IndexOutOfRange {
        /// Index given.
        index: usize,
        /// d + p.
        total: usize,
    },
    /// A shard is not the layout's shard length.
    #[error("shard {index} is {actual} bytes, the layout's shard length is {expected}")]
    ShardLengthMismatch {
        /// Index of the shard.
        index: usize,
        /// Layout shard length.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// Fragments given to one decode call belong to different messages or
    /// disagree on the layout.
    #[error("fragments disagree on message id or layout")]
    MixedMessages,
    /// The Reed-Solomon backend refused its input. Unreachable for layouts
    /// this crate validated; kept as an error rather than a panic.
    #[error("reed-solomon backend: {0}")]
    Backend(String),
}

impl From<reed_solomon_simd::Error> for CodecError {
    fn from(err: reed_solomon_simd::Error) -> Self {
        Self::Backend(err.to_string())
    }
}

/// A fragment the reassembler refused. The message in progress for the same
/// id, if any, is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReassemblyError {
    /// The bytes are not a fragment.
    #[error("malformed fragment: {0}")]
    Malformed(#[from] FragmentError),
    /// The header disagrees with the first fragment seen for this id.
    #[error("fragment for message {message_id:?} disagrees with the first one on {field}")]
    Inconsistent {
        /// Message id in the header.
        message_id: MessageId,
        /// Which header field differs.
        field: &'static str,
    },
    /// Same id and index as a stored shard, but different bytes.
    #[error("shard {index} of message {message_id:?} arrived twice with different bytes")]
    ConflictingDuplicate {
        /// Message id in the header.
        message_id: MessageId,
        /// Shard index.
        index: u8,
    },
    /// The announced message is longer than the configured maximum.
    #[error("announced message of {message_len} bytes exceeds the maximum of {max}")]
    MessageTooLarge {
        /// Length announced in the header.
        message_len: usize,
        /// Configured maximum.
        max: usize,
    },
    /// The cap on concurrent incomplete messages is reached.
    #[error("{max} incomplete messages already pending")]
    TooManyMessages {
        /// Configured maximum.
        max: usize,
    },
    /// Storing the shard would exceed the total memory cap.
    #[error("storing {needed} bytes would exceed the buffer cap ({used} of {max} used)")]
    MemoryFull {
        /// Bytes this fragment would add.
        needed: usize,
        /// Bytes in use.
        used: usize,
        /// Configured maximum.
        max: usize,
    },
    /// Decoding a message with enough shards failed (a backend failure; not
    /// expected for validated input). The message is dropped.
    #[error("decoding failed: {0}")]
    Decode(#[from] CodecError),
}

/// Invalid parameters for the limits of a [`crate::Reassembler`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    /// A limit that must be positive is zero.
    #[error("reassembly limit `{0}` must be positive")]
    Zero(&'static str),
}

/// Parity planning could not meet the request.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanningError {
    /// A probability outside `[0, 1]`, or NaN.
    #[error("{name} must be a probability in [0, 1], got {value}")]
    InvalidProbability {
        /// Which argument.
        name: &'static str,
        /// Value given.
        value: f64,
    },
    /// Fewer SURBs than data shards: the message cannot be sent at all.
    #[error("{data_shards} data shards need at least as many SURBs, only {surb_budget} available")]
    BudgetBelowDataShards {
        /// Data shards the message needs.
        data_shards: usize,
        /// SURBs available.
        surb_budget: usize,
    },
    /// The target cannot be met within the budget (or the 255-shard limit).
    /// `best` is the most parity allowed and its predicted delivery, so the
    /// caller can still decide to send with it.
    #[error(
        "delivery target {target} unreachable: best is {} with {} parity shards",
        best.delivery_probability,
        best.parity_shards
    )]
    TargetUnreachable {
        /// The requested delivery probability.
        target: f64,
        /// The best choice allowed by the budget.
        best: crate::ParityChoice,
    },
    /// The message cannot be laid out.
    #[error("layout: {0}")]
    Layout(#[from] LayoutError),
}
