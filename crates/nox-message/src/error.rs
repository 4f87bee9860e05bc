//! Typed errors. Every malformed input maps to one of these; nothing panics.

use nox_fec::{CodecError, LayoutError, LimitsError, PlanningError, ReassemblyError};
use nox_sphinx::SphinxError;

/// Why a message was refused or could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MessageError {
    /// The input ended inside a field.
    #[error("truncated {field}: {needed} bytes needed, {remaining} left")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// Bytes left over after a message that must consume its input exactly.
    #[error("{extra} trailing bytes after the message")]
    TrailingBytes {
        /// Bytes left over.
        extra: usize,
    },
    /// A message version this implementation does not speak.
    #[error("unknown message version {0}")]
    UnknownVersion(u8),
    /// A request kind this implementation does not know.
    #[error("unknown request kind {0:#04x}")]
    UnknownKind(u8),
    /// A response status this implementation does not know.
    #[error("unknown response status {0:#04x}")]
    UnknownStatus(u8),
    /// A field longer (or a count larger) than the format allows.
    #[error("{field} is {len}, the maximum is {max}")]
    FieldTooLong {
        /// The field.
        field: &'static str,
        /// Its length or count.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// A field whose contents break the format's rules.
    #[error("invalid {field}: {reason}")]
    InvalidField {
        /// The field.
        field: &'static str,
        /// The rule broken.
        reason: &'static str,
    },
    /// A message too large to be fragmented or reassembled at all.
    #[error("message of {len} bytes exceeds the maximum of {max}")]
    MessageTooLarge {
        /// Its length.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// The reply needs more data shards than there are SURBs: send a short
    /// error reply (which always fits one SURB) instead.
    #[error("reply needs {needed} SURBs, only {have} available")]
    NotEnoughSurbs {
        /// Data shards the reply needs.
        needed: usize,
        /// SURBs held.
        have: usize,
    },
    /// A SURB was refused, or a reply packet could not be built.
    #[error("sphinx: {0}")]
    Sphinx(#[from] SphinxError),
    /// A fragment layout could not be formed.
    #[error("fragment layout: {0}")]
    Layout(#[from] LayoutError),
    /// Encoding fragments failed.
    #[error("fragment codec: {0}")]
    Codec(#[from] CodecError),
    /// A fragment was refused by the reassembler.
    #[error("reassembly: {0}")]
    Reassembly(#[from] ReassemblyError),
    /// Invalid reassembly limits.
    #[error("reassembly limits: {0}")]
    Limits(#[from] LimitsError),
    /// Parity planning refused its input (e.g. a loss that is not a probability).
    #[error("parity planning: {0}")]
    Planning(#[from] PlanningError),
}

impl MessageError {
    /// The status an exit answers with when handling a request fails with
    /// this error: malformed input is `BadRequest`, an unknown kind
    /// `Unsupported`, size limits `TooLarge`, full reassembly buffers `Busy`,
    /// too few SURBs `NotEnoughSurbs`; anything else (a local failure) is
    /// `Upstream`.
    pub fn status(&self) -> crate::Status {
        use crate::Status;
        match self {
            Self::Truncated { .. }
            | Self::TrailingBytes { .. }
            | Self::UnknownVersion(_)
            | Self::UnknownStatus(_)
            | Self::FieldTooLong { .. }
            | Self::InvalidField { .. }
            | Self::Sphinx(_) => Status::BadRequest,
            Self::UnknownKind(_) => Status::Unsupported,
            Self::MessageTooLarge { .. } | Self::Reassembly(ReassemblyError::MessageTooLarge { .. }) => {
                Status::TooLarge
            }
            Self::Reassembly(ReassemblyError::TooManyMessages { .. } | ReassemblyError::MemoryFull { .. }) => {
                Status::Busy
            }
            Self::Reassembly(_) => Status::BadRequest,
            Self::NotEnoughSurbs { .. } => Status::NotEnoughSurbs,
            Self::Layout(_) | Self::Codec(_) | Self::Limits(_) | Self::Planning(_) => Status::Upstream,
        }
    }
}
