//! Per-hop routing blocks: the 64-byte instruction each hop finds after
//! removing its layer of the routing field β.
//!
//! ```text
//! offset len  Forward            Deliver (exit)   DeliverReply (SURB end)
//! 0      1    0x01               0x02             0x03
//! 1      3    zero               zero             zero
//! 4      4    delay µs (BE u32)  delay µs         delay µs
//! 8      32   next node id       zero             recipient id
//! 40     16   next hop's MAC     zero             SURB id
//! 56     8    next hop's nonce   zero             zero
//! ```

use crate::{error::SphinxError, geometry::ROUTING_BLOCK_LEN, keys::NodeId};

const CMD_FORWARD: u8 = 0x01;
const CMD_DELIVER: u8 = 0x02;
const CMD_DELIVER_REPLY: u8 = 0x03;

/// A 16-byte SURB identifier, chosen at random by the client. It lets the
/// client find the right recovery keys without trial decryption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SurbId(pub [u8; 16]);

/// Mixing delay requested by the packet's builder, in microseconds.
/// `0` leaves the choice to the node's own delay policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Delay(pub u32);

impl Delay {
    /// The delay as a `Duration`, or `None` when the node should choose.
    pub fn requested(self) -> Option<core::time::Duration> {
        (self.0 != 0).then(|| core::time::Duration::from_micros(u64::from(self.0)))
    }
}

/// What the packet's builder asks one hop to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoutingBlock {
    Forward { delay: Delay, next_hop: NodeId, next_mac: [u8; 16], next_nonce: [u8; 8] },
    Deliver { delay: Delay },
    DeliverReply { delay: Delay, recipient: NodeId, surb_id: SurbId },
}

impl RoutingBlock {
    pub(crate) fn encode(&self) -> [u8; ROUTING_BLOCK_LEN] {
        let mut out = [0u8; ROUTING_BLOCK_LEN];
        let delay = match self {
            RoutingBlock::Forward { delay, next_hop, next_mac, next_nonce } => {
                out[0] = CMD_FORWARD;
                out[8..40].copy_from_slice(&next_hop.0);
                out[40..56].copy_from_slice(next_mac);
                out[56..64].copy_from_slice(next_nonce);
                delay
            }
            RoutingBlock::Deliver { delay } => {
                out[0] = CMD_DELIVER;
                delay
            }
            RoutingBlock::DeliverReply { delay, recipient, surb_id } => {
                out[0] = CMD_DELIVER_REPLY;
                out[8..40].copy_from_slice(&recipient.0);
                out[40..56].copy_from_slice(&surb_id.0);
                delay
            }
        };
        out[4..8].copy_from_slice(&delay.0.to_be_bytes());
        out
    }

    /// Strict decoding: unused fields must be zero.
    pub(crate) fn decode(block: &[u8; ROUTING_BLOCK_LEN]) -> Result<Self, SphinxError> {
        let all_zero = |range: core::ops::Range<usize>| block[range].iter().all(|b| *b == 0);
        if !all_zero(1..4) {
            return Err(SphinxError::MalformedRoutingBlock);
        }
        let delay = Delay(u32::from_be_bytes([block[4], block[5], block[6], block[7]]));
        let address = || {
            let mut id = [0u8; 32];
            id.copy_from_slice(&block[8..40]);
            NodeId(id)
        };
        match block[0] {
            CMD_FORWARD => {
                let mut next_mac = [0u8; 16];
                next_mac.copy_from_slice(&block[40..56]);
                let mut next_nonce = [0u8; 8];
                next_nonce.copy_from_slice(&block[56..64]);
                Ok(RoutingBlock::Forward { delay, next_hop: address(), next_mac, next_nonce })
            }
            CMD_DELIVER if all_zero(8..64) => Ok(RoutingBlock::Deliver { delay }),
            CMD_DELIVER_REPLY if all_zero(56..64) => {
                let mut surb_id = [0u8; 16];
                surb_id.copy_from_slice(&block[40..56]);
                Ok(RoutingBlock::DeliverReply { delay, recipient: address(), surb_id: SurbId(surb_id) })
            }
            CMD_DELIVER | CMD_DELIVER_REPLY => Err(SphinxError::MalformedRoutingBlock),
            other => Err(SphinxError::UnknownCommand(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let blocks = [
            RoutingBlock::Forward {
                delay: Delay(1500),
                next_hop: NodeId([3; 32]),
                next_mac: [4; 16],
                next_nonce: [5; 8],
            },
            RoutingBlock::Deliver { delay: Delay(0) },
            RoutingBlock::DeliverReply { delay: Delay(7), recipient: NodeId([9; 32]), surb_id: SurbId([1; 16]) },
        ];
        for block in blocks {
            assert_eq!(RoutingBlock::decode(&block.encode()), Ok(block));
        }
    }

    #[test]
    fn strict_decoding() {
        let mut raw = RoutingBlock::Deliver { delay: Delay(1) }.encode();
        raw[20] = 1;
        assert_eq!(RoutingBlock::decode(&raw), Err(SphinxError::MalformedRoutingBlock));
        let mut raw = RoutingBlock::Deliver { delay: Delay(1) }.encode();
        raw[2] = 1;
        assert_eq!(RoutingBlock::decode(&raw), Err(SphinxError::MalformedRoutingBlock));
        let mut raw = [0u8; ROUTING_BLOCK_LEN];
        raw[0] = 0x7f;
        assert_eq!(RoutingBlock::decode(&raw), Err(SphinxError::UnknownCommand(0x7f)));
    }
}
