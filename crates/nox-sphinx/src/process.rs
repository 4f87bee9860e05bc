//! Node side: removing one layer from a packet, in place.

use curve25519_dalek::{RistrettoPoint, constants::RISTRETTO_BASEPOINT_TABLE};
use zeroize::Zeroizing;

use crate::{
    crypto::{HopKeys, header_mac, mac_matches, xor_keystream},
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
    alpha: RistrettoPoint,
    keys: HopKeys,
}

impl core::fmt::Debug for MacVerified<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MacVerified").field("geometry", &self.geometry).finish_non_exhaustive()
    }
}

/// The first half of [`process_packet`]: length and geometry, ephemeral key,
/// shared secret, key schedule and the header MAC (constant time). Nothing of
/// the routing block or body is looked at. The buffer is not modified.
pub fn verify_header<'p>(
    geometry: &Geometry,
    key: &SecretKey,
    packet: &'p mut [u8],
) -> Result<MacVerified<'p>, SphinxError> {
    check_packet(geometry, packet)?;
    let mut alpha_bytes = [0u8; 32];
    alpha_bytes.copy_from_slice(&packet[geometry.alpha_range()]);
    let alpha = decode_point(&alpha_bytes).ok_or(SphinxError::InvalidEphemeralKey)?;
    let shared = Zeroizing::new((alpha * key.scalar()).compress().to_bytes());
    let keys = HopKeys::derive(&alpha_bytes, &shared);

    let (prefix, rest) = packet.split_at(PREFIX_LEN);
    let routing = &rest[geometry.routing_range().start - PREFIX_LEN..geometry.routing_range().end - PREFIX_LEN];
    let expected = header_mac(&keys.mac, prefix, routing);
    if !mac_matches(&expected, &packet[geometry.mac_range()]) {
        return Err(SphinxError::MacMismatch);
    }
    Ok(MacVerified { geometry: *geometry, packet, alpha, keys })
}

impl MacVerified<'_> {
    /// The second half of [`process_packet`] (§5.4 checks 9–10): decodes the
    /// routing block, removes one Lioness layer from the body, re-blinds α and
    /// rewrites the buffer for the next hop. Any error leaves the buffer in an
    /// unspecified state.
    pub fn finish(self) -> Result<Processed, SphinxError> {
        let MacVerified { geometry, packet, alpha, keys } = self;
        let header_len = geometry.header_len();

        // β ‖ 0^c, decrypted: our block, then the next hop's β.
        let routing_len = geometry.routing_len();
        let mut unwrapped = [0u8; crate::geometry::MAX_HOPS * ROUTING_BLOCK_LEN + ROUTING_BLOCK_LEN];
        let unwrapped = &mut unwrapped[..routing_len + ROUTING_BLOCK_LEN];
        unwrapped[..routing_len].copy_from_slice(&packet[geometry.routing_range()]);
        xor_keystream(&keys.routing, unwrapped);
        let mut block = [0u8; ROUTING_BLOCK_LEN];
        block.copy_from_slice(&unwrapped[..ROUTING_BLOCK_LEN]);
        let command = RoutingBlock::decode(&block)?;

        let body = header_len..packet.len();
        keys.body.decrypt(&mut packet[body.clone()]);

        match command {
            RoutingBlock::Forward { delay, next_hop, next_mac, next_nonce } => {
                let next_alpha = match geometry.blinding() {
                    Blinding::Multiplicative => alpha * keys.blinding,
                    Blinding::Additive => alpha + RISTRETTO_BASEPOINT_TABLE * &keys.blinding,
                }
                .compress()
                .to_bytes();
                packet[geometry.alpha_range()].copy_from_slice(&next_alpha);
                packet[geometry.routing_range()].copy_from_slice(&unwrapped[ROUTING_BLOCK_LEN..]);
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
