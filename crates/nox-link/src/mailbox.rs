//! Client mailboxes and the frames a node sends down a client link
//! (`docs/spec/link.md` §2.4).
//!
//! A SURB's return path ends at a last-layer node (its *reply gateway*) with
//! a `DeliverReply(recipient, surb id)` block. A client that wants replies
//! keeps a link open to that gateway and names the recipient value — its
//! mailbox, 32 random bytes it chose — in the link's **mailbox record**: the
//! client's first transport message, sent right after Noise message 2 and
//! sealed under the hybrid key, so the mailbox is as safe from a future
//! quantum adversary as the records (`docs/spec/link.md` §2.2). The gateway
//! then sends each reply body for that mailbox down the link as a
//! [`Downstream::Reply`] record. An entry node uses the same direction to
//! tell its clients the proof-of-work difficulty it currently requires
//! ([`Downstream::Difficulty`]).
//!
//! Every downstream record is exactly one packet long, like every other
//! record, so a link observer sees the same sizes whatever it carries.

use crate::error::LinkError;

/// Bytes of a mailbox identifier.
pub const MAILBOX_LEN: usize = 32;
/// Bytes of a client's mailbox record on the wire: the mailbox sealed under
/// the hybrid initiator → responder key at nonce 0 (`MAILBOX_LEN` + tag).
pub const MAILBOX_RECORD_LEN: usize = MAILBOX_LEN + crate::TAG_LEN;
/// Bytes of a SURB identifier (as in `nox_sphinx::SurbId`).
pub const SURB_ID_LEN: usize = 16;

/// Frame type of a SURB reply body.
const TYPE_REPLY: u8 = 0x01;
/// Frame type of a difficulty notice.
const TYPE_DIFFICULTY: u8 = 0x02;

/// A client's reply mailbox: the `recipient` of its SURBs' last hop. All
/// zero means "no mailbox" on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mailbox(pub [u8; MAILBOX_LEN]);

impl Mailbox {
    /// The all-zero value, which names no mailbox.
    pub fn is_none(&self) -> bool {
        self.0 == [0u8; MAILBOX_LEN]
    }
}

impl core::fmt::Debug for Mailbox {
    // A mailbox links a client's replies: never print it whole.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Mailbox({:02x}{:02x}…)", self.0[0], self.0[1])
    }
}

/// A parsed downstream record.
#[derive(Debug, PartialEq, Eq)]
pub enum Downstream<'a> {
    /// A SURB reply: the body as the gateway received it (still encrypted
    /// for the client), and the SURB it answers.
    Reply {
        /// Which of the client's SURBs this reply travelled on.
        surb_id: [u8; SURB_ID_LEN],
        /// The reply body (`packet_len − header_len` bytes).
        body: &'a [u8],
    },
    /// The proof-of-work difficulty the entry node now requires of packets
    /// from its clients.
    Difficulty(u8),
}

/// Turns a processed reply packet into a downstream record in place: the
/// header region (`packet[..header_len]`, which the gateway no longer needs)
/// becomes `0x01 ‖ surb id ‖ 0…`; the body stays where it is.
pub fn encode_reply_in_place(
    packet: &mut [u8],
    header_len: usize,
    surb_id: &[u8; SURB_ID_LEN],
) -> Result<(), LinkError> {
    if header_len < 1 + SURB_ID_LEN || header_len >= packet.len() {
        return Err(LinkError::MalformedDownstream("header region too short for a reply frame"));
    }
    packet[..header_len].fill(0);
    packet[0] = TYPE_REPLY;
    packet[1..1 + SURB_ID_LEN].copy_from_slice(surb_id);
    Ok(())
}

/// A difficulty notice record of `packet_len` bytes.
pub fn encode_difficulty(packet_len: usize, difficulty: u8) -> Vec<u8> {
    let mut record = vec![0u8; packet_len.max(2)];
    record[0] = TYPE_DIFFICULTY;
    record[1] = difficulty;
    record
}

/// Parses a downstream record. `header_len` is the geometry's header length
/// (where a reply body starts). Padding must be zero, so each record has one
/// encoding.
pub fn parse_downstream(record: &[u8], header_len: usize) -> Result<Downstream<'_>, LinkError> {
    let (&kind, rest) = record.split_first().ok_or(LinkError::MalformedDownstream("empty record"))?;
    match kind {
        TYPE_REPLY => {
            if header_len < 1 + SURB_ID_LEN || header_len >= record.len() {
                return Err(LinkError::MalformedDownstream("record too short for a reply"));
            }
            let mut surb_id = [0u8; SURB_ID_LEN];
            surb_id.copy_from_slice(&rest[..SURB_ID_LEN]);
            if record[1 + SURB_ID_LEN..header_len].iter().any(|&b| b != 0) {
                return Err(LinkError::MalformedDownstream("nonzero padding in a reply frame"));
            }
            Ok(Downstream::Reply { surb_id, body: &record[header_len..] })
        }
        TYPE_DIFFICULTY => {
            let (&difficulty, padding) = rest.split_first().ok_or(LinkError::MalformedDownstream("short notice"))?;
            if padding.iter().any(|&b| b != 0) {
                return Err(LinkError::MalformedDownstream("nonzero padding in a difficulty notice"));
            }
            Ok(Downstream::Difficulty(difficulty))
        }
        _ => Err(LinkError::MalformedDownstream("unknown downstream frame type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_frame_round_trip_keeps_the_body_in_place() {
        let mut packet: Vec<u8> = (0..1024u32).map(|i| i as u8).collect();
        let body_before = packet[256..].to_vec();
        encode_reply_in_place(&mut packet, 256, &[7; 16]).unwrap();
        let parsed = parse_downstream(&packet, 256).unwrap();
        assert_eq!(parsed, Downstream::Reply { surb_id: [7; 16], body: &body_before });
    }

    #[test]
    fn difficulty_round_trip_and_padding_rules() {
        let record = encode_difficulty(1024, 19);
        assert_eq!(parse_downstream(&record, 256).unwrap(), Downstream::Difficulty(19));
        let mut bad = record.clone();
        bad[500] = 1;
        assert!(matches!(parse_downstream(&bad, 256), Err(LinkError::MalformedDownstream(_))));
        let mut reply = vec![0u8; 1024];
        encode_reply_in_place(&mut reply, 256, &[1; 16]).unwrap();
        reply[100] = 9;
        assert!(matches!(parse_downstream(&reply, 256), Err(LinkError::MalformedDownstream(_))));
        assert!(parse_downstream(&[0x03; 1024], 256).is_err());
        assert!(parse_downstream(&[], 256).is_err());
        assert!(parse_downstream(&[0x01; 10], 256).is_err());
    }

    #[test]
    fn zero_mailbox_is_none() {
        assert!(Mailbox([0; 32]).is_none());
        assert!(!Mailbox([1; 32]).is_none());
        assert_eq!(format!("{:?}", Mailbox([0xab; 32])), "Mailbox(abab…)");
    }
}
