//! Node side: removing one layer from a packet, in place.

use aes::cipher::{KeyIvInit, StreamCipher};
use curve25519_dalek::{RistrettoPoint, constants::RISTRETTO_BASEPOINT_TABLE};
use zeroize::Zeroizing;

use crate::{
    crypto::{Aes128Ctr, HopKeys, header_mac, mac_matches},
    error::SphinxError,
    geometry::{Blinding, Geometry, PREFIX_LEN, ROUTING_BLOCK_LEN},
    header::check_packet,
    keys::{NodeId, SecretKey, decode_point},
    padding::decode_body,
    routing::{Delay, RoutingBlock, SurbId},
};

/// What a hop must do with a packet it has processed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Processed {
    /// The buffer now holds the packet for `next_hop`: hold it for the
    /// mixing delay, then send it.
    Forward {
        /// Where to send the packet.
        next_hop: NodeId,
        /// The delay the builder asked for.
        delay: Delay,
    },
    /// This hop is the exit: `buffer[payload]` is the authenticated payload.
    Deliver {
        /// The delay the builder asked for.
        delay: Delay,
        /// Byte range of the payload within the packet buffer.
        payload: core::ops::Range<usize>,
    },
    /// This hop ends a SURB's return path: hand `buffer[body]` (still
    /// encrypted for the client) and `surb_id` to `recipient`.
    Reply {
        /// The delay the builder asked for.
        delay: Delay,
        /// The client the reply is for.
        recipient: NodeId,
        /// Lets the client find its recovery keys.
        surb_id: SurbId,
        /// Byte range of the reply body within the packet buffer.
        body: core::ops::Range<usize>,
    },
}

/// Processes `packet` in place with this node's secret key for the packet's
/// key epoch (the caller picks it with [`crate::HeaderView::key_epoch`]):
/// [`verify_header`] then [`MacVerified::finish`]. A node that keeps a replay
/// cache calls the two steps itself and records the tag between them
/// (docs/spec/sphinx.md §5.4).
///
/// Order: length and geometry; ephemeral key; shared secret; key schedule;
/// MAC, in constant time, before anything else is trusted; then routing,
/// body and blinding. Any error leaves the buffer in an unspecified state.
pub fn process_packet(geometry: &Geometry, key: &SecretKey, packet: &mut [u8]) -> Result<Processed, SphinxError> {
    verify_header(geometry, key, packet)?.finish()
}

/// A packet whose header MAC verified at this hop (§5.4 checks 6–7 passed),
/// borrowed until [`MacVerified::finish`] removes this hop's layer. The
/// replay tag of such a packet must be recorded whatever `finish` then says:
/// the header is authentic, so a copy of it must never cost this node
/// public-key work again. Holds the hop keys (zeroized on drop).
#[must_use = "a packet whose MAC verified must have its replay tag recorded, then be finished"]
pub struct MacVerified<'p> {
    geometry: Geometry,
    packet: &'p mut [u8],
    /// The decoded α ([`crate::Scheme::Ristretto255`] only).
    alpha: Option<RistrettoPoint>,
    keys: HopKeys,
}

impl core::fmt::Debug for MacVerified<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MacVerified").field("geometry", &self.geometry).finish_non_exhaustive()
    }
}

/// The first half of [`process_packet`]: length and geometry, ephemeral key
/// (or KEM decapsulation), shared secret, key schedule and the header MAC
/// (constant time). Nothing of the routing block or body is looked at. The
/// buffer is not modified.
pub fn verify_header<'p>(
    geometry: &Geometry,
    key: &SecretKey,
    packet: &'p mut [u8],
) -> Result<MacVerified<'p>, SphinxError> {
    check_packet(geometry, packet)?;
    if key.scheme() != geometry.scheme() {
        return Err(SphinxError::WrongKeyScheme { expected: geometry.scheme(), actual: key.scheme() });
    }
    let ephemeral = &packet[geometry.alpha_range()];
    let (alpha, shared) = match key.scalar() {
        Some(scalar) => {
            let mut alpha_bytes = [0u8; 32];
            alpha_bytes.copy_from_slice(ephemeral);
            let alpha = decode_point(&alpha_bytes).ok_or(SphinxError::InvalidEphemeralKey)?;
            (Some(alpha), Zeroizing::new((alpha * scalar).compress().to_bytes()))
        }
        None => (None, key.decapsulate(ephemeral).ok_or(SphinxError::InvalidEphemeralKey)?),
    };
    let keys = HopKeys::derive(ephemeral, &shared);

    let (prefix, rest) = packet.split_at(PREFIX_LEN);
    let routing = &rest[geometry.routing_range().start - PREFIX_LEN..geometry.routing_range().end - PREFIX_LEN];
    let expected = header_mac(&keys.mac, prefix, routing);
    if !mac_matches(&expected, &packet[geometry.mac_range()]) {
        return Err(SphinxError::MacMismatch);
    }
    Ok(MacVerified { geometry: *geometry, packet, alpha, keys })
}

/// Largest shift of β at one hop: a routing block and an X-Wing ciphertext.
const MAX_SHIFT: usize = ROUTING_BLOCK_LEN + crate::kem::XWING_CIPHERTEXT_LEN;

impl MacVerified<'_> {
    /// The second half of [`process_packet`] (§5.4 checks 9–10): decodes the
    /// routing block, removes one HCTR2 layer from the body, re-blinds α
    /// (or takes the next hop's KEM ciphertext out of β) and rewrites the
    /// buffer for the next hop. Any error leaves the buffer in an
    /// unspecified state.
    pub fn finish(self) -> Result<Processed, SphinxError> {
        let MacVerified { geometry, packet, alpha, keys } = self;
        let header_len = geometry.header_len();
        let routing = geometry.routing_range();
        let shift = geometry.hop_shift();

        // β ‖ 0^shift, decrypted in place: our block (and, for KEM schemes,
        // the next hop's ciphertext), then the next hop's β. The stream's
        // tail, for the shifted-in bytes, is kept aside.
        let mut cipher = Aes128Ctr::new((&keys.routing).into(), &[0u8; 16].into());
        cipher.apply_keystream(&mut packet[routing.clone()]);
        let mut tail = [0u8; MAX_SHIFT];
        let tail = &mut tail[..shift];
        cipher.apply_keystream(tail);
        let mut block = [0u8; ROUTING_BLOCK_LEN];
        block.copy_from_slice(&packet[routing.start..routing.start + ROUTING_BLOCK_LEN]);
        let command = RoutingBlock::decode(&block)?;

        let body = header_len..packet.len();
        keys.body.decrypt(&mut packet[body.clone()]);

        match command {
            RoutingBlock::Forward { delay, next_hop, next_mac, next_nonce } => {
                match alpha {
                    Some(alpha) => {
                        let next_alpha = match geometry.blinding() {
                            Blinding::Multiplicative => alpha * keys.blinding,
                            Blinding::Additive => alpha + RISTRETTO_BASEPOINT_TABLE * &keys.blinding,
                        }
                        .compress()
                        .to_bytes();
                        packet[geometry.alpha_range()].copy_from_slice(&next_alpha);
                    }
                    None => {
                        let next = routing.start + ROUTING_BLOCK_LEN..routing.start + shift;
                        packet.copy_within(next, geometry.alpha_range().start);
                    }
                }
                packet.copy_within(routing.start + shift..routing.end, routing.start);
                packet[routing.end - shift..routing.end].copy_from_slice(tail);
                packet[geometry.mac_range()].copy_from_slice(&next_mac);
                packet[geometry.nonce_range()].copy_from_slice(&next_nonce);
                Ok(Processed::Forward { next_hop, delay })
            }
            RoutingBlock::Deliver { delay } => {
                let payload_len = decode_body(&packet[body.clone()])?;
                let start = header_len + crate::geometry::INTEGRITY_LEN;
                Ok(Processed::Deliver { delay, payload: start..start + payload_len })
            }
            RoutingBlock::DeliverReply { delay, recipient, surb_id } => {
                Ok(Processed::Reply { delay, recipient, surb_id, body })
            }
        }
    }
}
