//! Single-use reply blocks (paper §4.5).
//!
//! The client builds a header for a return path ending in a `DeliverReply`
//! block that names it (recipient) and the SURB (id), plus a random reply
//! key `k_r`. The SURB (first hop, header, `k_r`) travels to the replier
//! inside a forward payload; the client keeps a [`SurbRecovery`] with `k_r`
//! and every hop's body key.
//!
//! The replier sends `header ‖ HCTR2_{K(k_r)}(0^16 ‖ reply ‖ 0x80 ‖ 0*)` to
//! the first hop: a packet of the same size and form as a forward packet.
//! Each hop removes a body layer as usual. The client re-applies those
//! layers' encryptions, decrypts with `k_r` and checks the 16 zero bytes,
//! which under a strong PRP authenticates the reply (a forgery or a wrong
//! SURB passes with probability 2^-128).

use rand_core::{CryptoRng, RngCore};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::{
    body::BodyKey,
    construct::{BuildOptions, PathHop, build_header},
    error::SphinxError,
    geometry::{Geometry, INTEGRITY_LEN},
    header::check_packet,
    keys::NodeId,
    padding::{decode_body, encode_body},
    routing::{RoutingBlock, SurbId},
};

/// What the replier holds: enough to send one reply, nothing about the client.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Surb {
    first_hop: [u8; 32],
    reply_key: [u8; 32],
    header: Vec<u8>,
}

impl core::fmt::Debug for Surb {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Surb").field("first_hop", &NodeId(self.first_hop)).finish_non_exhaustive()
    }
}

impl Surb {
    /// Encoded length for `geometry`: first hop (32) ‖ reply key (32) ‖ header.
    pub fn encoded_len(geometry: &Geometry) -> usize {
        64 + geometry.header_len()
    }

    /// The node the reply packet must be sent to.
    pub fn first_hop(&self) -> NodeId {
        NodeId(self.first_hop)
    }

    /// `first_hop ‖ reply_key ‖ header`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.header.len());
        out.extend_from_slice(&self.first_hop);
        out.extend_from_slice(&self.reply_key);
        out.extend_from_slice(&self.header);
        out
    }

    /// Parses a SURB of `geometry`, checking its length and geometry tag.
    pub fn from_bytes(geometry: &Geometry, bytes: &[u8]) -> Result<Self, SphinxError> {
        let expected = Self::encoded_len(geometry);
        if bytes.len() != expected {
            return Err(SphinxError::WrongLength { what: "SURB", expected, actual: bytes.len() });
        }
        let mut first_hop = [0u8; 32];
        first_hop.copy_from_slice(&bytes[..32]);
        let mut reply_key = [0u8; 32];
        reply_key.copy_from_slice(&bytes[32..64]);
        let header = bytes[64..].to_vec();
        if header[..4] != geometry.tag() {
            let mut actual = [0u8; 4];
            actual.copy_from_slice(&header[..4]);
            return Err(SphinxError::WrongGeometry { expected: geometry.tag(), actual });
        }
        Ok(Self { first_hop, reply_key, header })
    }

    /// Consumes the SURB and returns the reply packet for [`Surb::first_hop`].
    pub fn into_reply(self, geometry: &Geometry, reply: &[u8]) -> Result<Vec<u8>, SphinxError> {
        if self.header.len() != geometry.header_len() {
            return Err(SphinxError::WrongLength {
                what: "SURB header",
                expected: geometry.header_len(),
                actual: self.header.len(),
            });
        }
        let mut packet = vec![0u8; geometry.packet_len()];
        let (header, body) = packet.split_at_mut(geometry.header_len());
        header.copy_from_slice(&self.header);
        encode_body(reply, body)?;
        BodyKey::from_reply_key(&self.reply_key).encrypt(body);
        check_packet(geometry, &packet)?;
        Ok(packet)
    }
}

/// What the client keeps to read the reply to one SURB. Zeroized on drop.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct SurbRecovery {
    #[zeroize(skip)]
    id: SurbId,
    #[zeroize(skip)]
    body_len: usize,
    reply_key: [u8; 32],
    hop_body_keys: Vec<BodyKey>,
}

impl core::fmt::Debug for SurbRecovery {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SurbRecovery").field("id", &self.id).finish_non_exhaustive()
    }
}

impl SurbRecovery {
    /// The SURB this recovers replies for.
    pub fn id(&self) -> SurbId {
        self.id
    }

    /// Decrypts and authenticates a reply body delivered with `surb_id`.
    /// Fails if the id is another SURB's, or if the body was tampered with
    /// or was not made with this SURB.
    pub fn open(&self, surb_id: &SurbId, body: &[u8]) -> Result<Vec<u8>, SphinxError> {
        if *surb_id != self.id {
            return Err(SphinxError::SurbMismatch);
        }
        if body.len() != self.body_len {
            return Err(SphinxError::WrongLength { what: "reply body", expected: self.body_len, actual: body.len() });
        }
        let mut plain = Zeroizing::new(body.to_vec());
        for cipher in self.hop_body_keys.iter().rev() {
            cipher.encrypt(&mut plain);
        }
        BodyKey::from_reply_key(&self.reply_key).decrypt(&mut plain);
        let len = decode_body(&plain)?;
        Ok(plain[INTEGRITY_LEN..INTEGRITY_LEN + len].to_vec())
    }
}

/// Builds a SURB whose return path is `path`; its last hop hands the reply
/// to `recipient`.
pub fn build_surb<R: RngCore + CryptoRng>(
    geometry: &Geometry,
    options: &BuildOptions,
    path: &[PathHop],
    recipient: NodeId,
    rng: &mut R,
) -> Result<(Surb, SurbRecovery), SphinxError> {
    let mut id = [0u8; 16];
    rng.fill_bytes(&mut id);
    let id = SurbId(id);
    let last_delay = path.last().map(|hop| hop.delay).unwrap_or_default();
    let last = RoutingBlock::DeliverReply { delay: last_delay, recipient, surb_id: id };
    let built = build_header(geometry, options, path, last, rng)?;
    let mut reply_key = [0u8; 32];
    rng.fill_bytes(&mut reply_key);
    let surb = Surb { first_hop: path[0].node.0, reply_key, header: built.header.clone() };
    let recovery = SurbRecovery { id, body_len: geometry.body_len(), reply_key, hop_body_keys: built.body_keys };
    reply_key.zeroize();
    Ok((surb, recovery))
}
