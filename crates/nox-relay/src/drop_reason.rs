//! Why a node dropped a packet: every drop is deliberate, typed and counted.

use nox_sphinx::SphinxError;

/// The reason a packet was dropped, one label per metrics series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// Not exactly one packet of our length.
    WrongLength,
    /// Built for another geometry.
    WrongGeometry,
    /// Names a key epoch we hold no key for (too old or not yet started).
    UnknownEpoch,
    /// Replay tag already seen in this epoch.
    Replay,
    /// Proof of work below the required difficulty.
    InsufficientWork,
    /// Header MAC failed: tampered, misrouted or forged.
    MacMismatch,
    /// Invalid ephemeral key or malformed routing block.
    Malformed,
    /// The exit's payload failed its integrity check.
    PayloadIntegrity,
    /// A stage's bounded queue was full.
    QueueFull,
    /// The requested mixing delay exceeds the node's maximum.
    DelayTooLong,
    /// The replay tag could not be written to the journal; forwarding the
    /// packet could let a replay through after a restart.
    JournalError,
    /// The packet's key epoch is refused because its replay state was lost
    /// (a damaged journal, an unreadable snapshot): accepting it could let a
    /// replay of an already forwarded packet through. Lasts until the epoch ends.
    ReplayStateLost,
    /// The link peer exceeded its rate tier (paper §4.9 (2)); refused at
    /// ingest before any public-key work.
    RateLimited,
}

impl DropReason {
    /// Every reason, for exporting zero-valued series.
    pub const ALL: [DropReason; 13] = [
        DropReason::WrongLength,
        DropReason::WrongGeometry,
        DropReason::UnknownEpoch,
        DropReason::Replay,
        DropReason::InsufficientWork,
        DropReason::MacMismatch,
        DropReason::Malformed,
        DropReason::PayloadIntegrity,
        DropReason::QueueFull,
        DropReason::DelayTooLong,
        DropReason::JournalError,
        DropReason::ReplayStateLost,
        DropReason::RateLimited,
    ];

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            DropReason::WrongLength => "wrong_length",
            DropReason::WrongGeometry => "wrong_geometry",
            DropReason::UnknownEpoch => "unknown_epoch",
            DropReason::Replay => "replay",
            DropReason::InsufficientWork => "insufficient_work",
            DropReason::MacMismatch => "mac_mismatch",
            DropReason::Malformed => "malformed",
            DropReason::PayloadIntegrity => "payload_integrity",
            DropReason::QueueFull => "queue_full",
            DropReason::DelayTooLong => "delay_too_long",
            DropReason::JournalError => "journal_error",
            DropReason::ReplayStateLost => "replay_state_lost",
            DropReason::RateLimited => "rate_limited",
        }
    }
}

impl From<SphinxError> for DropReason {
    fn from(error: SphinxError) -> Self {
        match error {
            SphinxError::WrongLength { .. } => DropReason::WrongLength,
            // A key of another scheme than the geometry's: the packet is for
            // another network's geometry as far as this node can serve it.
            SphinxError::WrongGeometry { .. } | SphinxError::WrongKeyScheme { .. } => DropReason::WrongGeometry,
            SphinxError::UnknownEpoch(_) => DropReason::UnknownEpoch,
            SphinxError::MacMismatch => DropReason::MacMismatch,
            SphinxError::InsufficientWork { .. } | SphinxError::DifficultyOutOfRange(_) => DropReason::InsufficientWork,
            SphinxError::PayloadIntegrity | SphinxError::BadPadding => DropReason::PayloadIntegrity,
            SphinxError::InvalidEphemeralKey
            | SphinxError::InvalidPublicKey
            | SphinxError::UnknownCommand(_)
            | SphinxError::MalformedRoutingBlock
            | SphinxError::InvalidGeometry(_)
            | SphinxError::PayloadTooLarge { .. }
            | SphinxError::PathLength { .. }
            | SphinxError::SurbMismatch => DropReason::Malformed,
        }
    }
}
