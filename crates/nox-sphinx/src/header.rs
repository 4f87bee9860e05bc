//! Cheap, allocation-free inspection of a packet before any public-key work:
//! length and geometry check, key epoch, replay tag and proof of work.
//!
//! Header layout (H = geometry hops):
//!
//! ```text
//! offset       len   field
//! 0            4     geometry tag
//! 4            4     key epoch (big-endian u32)
//! 8            32    α: ephemeral key (ristretto255)
//! 40           64·H  β: routing field
//! 40+64H       16    γ: MAC over (geometry tag ‖ epoch ‖ β)
//! 56+64H       8     proof-of-work nonce (not MAC-covered)
//! ```

use crate::{
    crypto::{CTX_REPLAY_TAG, kdf},
    error::SphinxError,
    geometry::{Geometry, POW_NONCE_LEN},
    pow,
};

/// A per-(packet, hop) replay tag. It covers every header byte except the
/// proof-of-work nonce, so a relay cannot change it without breaking the
/// MAC at this hop, and re-sending a packet with a new nonce keeps its tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReplayTag(pub [u8; 32]);

/// A borrowed view of a packet whose length and geometry tag were checked.
#[derive(Clone, Copy, Debug)]
pub struct HeaderView<'a> {
    geometry: &'a Geometry,
    packet: &'a [u8],
}

impl<'a> HeaderView<'a> {
    /// Checks the packet's length and geometry tag. Costs no cryptography.
    pub fn parse(geometry: &'a Geometry, packet: &'a [u8]) -> Result<Self, SphinxError> {
        check_packet(geometry, packet)?;
        Ok(Self { geometry, packet })
    }

    /// The key epoch the packet was built for: the node picks its secret
    /// key for this epoch, or refuses the packet.
    pub fn key_epoch(&self) -> u32 {
        let mut epoch = [0u8; 4];
        epoch.copy_from_slice(&self.packet[4..8]);
        u32::from_be_bytes(epoch)
    }

    /// The proof-of-work nonce.
    pub fn pow_nonce(&self) -> [u8; POW_NONCE_LEN] {
        let mut nonce = [0u8; POW_NONCE_LEN];
        nonce.copy_from_slice(&self.packet[self.geometry.nonce_range()]);
        nonce
    }

    /// `BLAKE3-derive_key(CTX_REPLAY_TAG, header without nonce)`.
    pub fn replay_tag(&self) -> ReplayTag {
        replay_tag_of(&self.packet[..self.geometry.nonce_range().start])
    }

    /// Verifies that the nonce meets `difficulty` leading zero bits. One
    /// short hash, given the tag.
    pub fn check_work(&self, tag: &ReplayTag, difficulty: u8) -> Result<(), SphinxError> {
        let actual = pow::work_bits(tag, &self.pow_nonce());
        if actual >= difficulty { Ok(()) } else { Err(SphinxError::InsufficientWork { required: difficulty, actual }) }
    }
}

/// The replay tag of a header given without its nonce.
pub(crate) fn replay_tag_of(header_without_nonce: &[u8]) -> ReplayTag {
    let mut tag = [0u8; 32];
    kdf(CTX_REPLAY_TAG, &[header_without_nonce], &mut tag);
    ReplayTag(tag)
}

/// Refuses packets of the wrong length or geometry.
pub(crate) fn check_packet(geometry: &Geometry, packet: &[u8]) -> Result<(), SphinxError> {
    if packet.len() != geometry.packet_len() {
        return Err(SphinxError::WrongLength { what: "packet", expected: geometry.packet_len(), actual: packet.len() });
    }
    let mut tag = [0u8; 4];
    tag.copy_from_slice(&packet[..4]);
    if tag != geometry.tag() {
        return Err(SphinxError::WrongGeometry { expected: geometry.tag(), actual: tag });
    }
    Ok(())
}
