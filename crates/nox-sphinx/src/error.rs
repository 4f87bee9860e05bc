//! Errors. Every malformed input maps to one of these; nothing panics.

/// Why a packet, SURB or key was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SphinxError {
    /// Geometry parameters out of range ([`crate::GeometryError`]).
    #[error("invalid geometry: {0}")]
    InvalidGeometry(crate::GeometryError),
    /// Input of the wrong length for this geometry.
    #[error("{what} must be {expected} bytes, got {actual}")]
    WrongLength {
        /// Which object was measured.
        what: &'static str,
        /// Length the geometry requires.
        expected: usize,
        /// Length received.
        actual: usize,
    },
    /// The packet's geometry tag differs from ours.
    #[error("packet built for geometry {actual:02x?}, this node uses {expected:02x?}")]
    WrongGeometry {
        /// Our geometry tag.
        expected: [u8; 4],
        /// The tag found in the packet.
        actual: [u8; 4],
    },
    /// No key is held for the key epoch the packet names.
    #[error("no key for epoch {0}")]
    UnknownEpoch(u32),
    /// The ephemeral key is not a canonical ristretto255 encoding, or is the
    /// identity; or an X25519 KEM ciphertext of low order.
    #[error("ephemeral key is not a valid group element")]
    InvalidEphemeralKey,
    /// A public key is not a canonical ristretto255 encoding or is the
    /// identity; an ML-KEM key fails FIPS 203's modulus check; or an X25519
    /// key has low order.
    #[error("public key is not a valid group element")]
    InvalidPublicKey,
    /// The header MAC did not verify: tampered, misrouted or wrong key.
    #[error("header MAC mismatch")]
    MacMismatch,
    /// The routing block names a command this implementation does not know.
    #[error("unknown routing command {0:#04x}")]
    UnknownCommand(u8),
    /// A routing block field that must be zero is not.
    #[error("malformed routing block")]
    MalformedRoutingBlock,
    /// The body failed its integrity check after the last layer was removed.
    #[error("payload integrity check failed")]
    PayloadIntegrity,
    /// The padding after the payload is not ISO/IEC 7816-4.
    #[error("payload padding is malformed")]
    BadPadding,
    /// The payload does not fit in one packet.
    #[error("payload of {actual} bytes exceeds the capacity of {capacity}")]
    PayloadTooLarge {
        /// Bytes available.
        capacity: usize,
        /// Bytes offered.
        actual: usize,
    },
    /// A path must have between 1 and `geometry.hops()` hops.
    #[error("path has {actual} hops, geometry allows 1 to {max}")]
    PathLength {
        /// Maximum hops.
        max: usize,
        /// Hops given.
        actual: usize,
    },
    /// The proof-of-work nonce does not meet the difficulty.
    #[error("proof of work has {actual} leading zero bits, {required} required")]
    InsufficientWork {
        /// Required difficulty in bits.
        required: u8,
        /// Leading zero bits achieved.
        actual: u8,
    },
    /// The difficulty asked for cannot be reached (more than 64 bits).
    #[error("proof-of-work difficulty {0} is out of range")]
    DifficultyOutOfRange(u8),
    /// A key of one scheme was used with a geometry of another.
    #[error("key of scheme {actual} used with a {expected} geometry")]
    WrongKeyScheme {
        /// The geometry's scheme.
        expected: crate::Scheme,
        /// The key's scheme.
        actual: crate::Scheme,
    },
    /// A reply was opened with recovery keys of another SURB.
    #[error("reply does not belong to this SURB")]
    SurbMismatch,
}
