//! The stream message: one per forward request body or SURB reply
//! (`docs/spec/streams.md` §2). Canonical: frames in ascending type order,
//! each at most once, so every message has exactly one encoding.

use crate::StreamError;

/// First byte of every stream message.
pub const STREAM_VERSION: u8 = 1;
/// Longest host name or address in an `OPEN` frame (as in SOCKS5).
pub const MAX_HOST_LEN: usize = 255;
/// Largest `DATA` frame: 8 MiB (a downstream message spans several SURBs).
pub const MAX_DATA_LEN: usize = 8 << 20;
/// Bytes of a message with no frame: version and stream id.
pub const MESSAGE_OVERHEAD: usize = 1 + 16;

const T_OPEN: u8 = 0x01;
const T_OPENED: u8 = 0x02;
const T_SURBS: u8 = 0x03;
const T_POOL: u8 = 0x04;
const T_ACK: u8 = 0x05;
const T_DATA: u8 = 0x06;
const T_FIN: u8 = 0x07;
const T_RESET: u8 = 0x08;

/// A stream's identifier: 16 random bytes chosen by the client. It appears
/// only inside encrypted payloads; nothing on the wire links a stream's packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub [u8; 16]);

/// Where a stream goes: a host (DNS name or IP literal, unresolved) and a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Host: a name or an IP address in text form, 1..=255 printable ASCII bytes.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

/// Cumulative acknowledgement and flow-control window of the sender's
/// receiving half: "I have every byte below `offset`; send nothing at or
/// beyond `window`". A FIN counts as one byte after the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// Every byte below this offset has arrived.
    pub offset: u64,
    /// The peer may send bytes below this offset.
    pub window: u64,
}

/// Stream bytes at an offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Data {
    /// Offset of the first byte in the stream.
    pub offset: u64,
    /// The bytes (non-empty, at most [`MAX_DATA_LEN`]).
    pub bytes: Vec<u8>,
}

/// Client → exit: the SURBs of this request belong to the stream's pool;
/// this is the client's `seq`-th batch (from 1) and holds `count` SURBs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurbBatch {
    /// Batch number, from 1, one more for every batch of the stream.
    pub seq: u32,
    /// SURBs in the batch (equal to the request's SURB count).
    pub count: u16,
}

/// Exit → client: SURBs the exit holds for the stream after sending this
/// message, and the highest SURB batch it has received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    /// SURBs left in the exit's pool.
    pub held: u16,
    /// Highest batch `seq` received (0: none).
    pub seen_seq: u32,
}

/// Why a stream was reset. Codes 1..=8 are the SOCKS5 reply codes of RFC
/// 1928 §6 for a failed `CONNECT`; the rest are stream-level.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResetCode {
    /// General failure.
    General = 0x01,
    /// The exit's destination policy refuses the target.
    Forbidden = 0x02,
    /// Network unreachable.
    NetworkUnreachable = 0x03,
    /// Host unreachable (or the name does not resolve).
    HostUnreachable = 0x04,
    /// Connection refused by the destination.
    Refused = 0x05,
    /// The connection attempt timed out.
    Timeout = 0x06,
    /// The exit does not know the stream (it restarted, or closed it).
    UnknownStream = 0x10,
    /// The peer broke the protocol (window overrun, bad offsets).
    Protocol = 0x11,
    /// A per-stream bound was exceeded (bytes, lifetime).
    Limit = 0x12,
    /// No traffic for the idle timeout, or the peer went silent.
    Idle = 0x13,
    /// The exit has no room for another stream.
    Busy = 0x14,
    /// The application on either end aborted the connection.
    Aborted = 0x15,
}

impl ResetCode {
    /// The SOCKS5 reply code for a `CONNECT` that ends with this reset.
    pub fn socks_reply(self) -> u8 {
        match self as u8 {
            code @ 0x01..=0x06 => code,
            _ => 0x01,
        }
    }
}

impl TryFrom<u8> for ResetCode {
    type Error = StreamError;

    fn try_from(value: u8) -> Result<Self, StreamError> {
        Ok(match value {
            0x01 => Self::General,
            0x02 => Self::Forbidden,
            0x03 => Self::NetworkUnreachable,
            0x04 => Self::HostUnreachable,
            0x05 => Self::Refused,
            0x06 => Self::Timeout,
            0x10 => Self::UnknownStream,
            0x11 => Self::Protocol,
            0x12 => Self::Limit,
            0x13 => Self::Idle,
            0x14 => Self::Busy,
            0x15 => Self::Aborted,
            other => return Err(StreamError::Malformed(format!("unknown reset code {other:#04x}"))),
        })
    }
}

/// One stream message. Which frames may appear in which direction is the
/// endpoints' business (`docs/spec/streams.md` §3); the format only fixes
/// their encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamMessage {
    /// The stream.
    pub id: StreamId,
    /// Client → exit, first message: connect to this target.
    pub open: Option<Target>,
    /// Exit → client: the connection to the target is up.
    pub opened: bool,
    /// Client → exit: the request's SURBs join the stream's pool.
    pub surbs: Option<SurbBatch>,
    /// Exit → client: the pool's state.
    pub pool: Option<Pool>,
    /// Acknowledgement and window.
    pub ack: Option<Ack>,
    /// Stream bytes.
    pub data: Option<Data>,
    /// The sender's last byte is below this offset.
    pub fin: Option<u64>,
    /// The stream is aborted.
    pub reset: Option<ResetCode>,
}

impl StreamMessage {
    /// A message with no frame.
    pub fn new(id: StreamId) -> Self {
        Self { id, open: None, opened: false, surbs: None, pool: None, ack: None, data: None, fin: None, reset: None }
    }

    /// Encoded length.
    pub fn encoded_len(&self) -> usize {
        MESSAGE_OVERHEAD
            + self.open.as_ref().map_or(0, |t| 1 + 2 + 1 + t.host.len())
            + usize::from(self.opened)
            + self.surbs.map_or(0, |_| 1 + 4 + 2)
            + self.pool.map_or(0, |_| 1 + 2 + 4)
            + self.ack.map_or(0, |_| 1 + 8 + 8)
            + self.data.as_ref().map_or(0, |d| 1 + 8 + 4 + d.bytes.len())
            + self.fin.map_or(0, |_| 1 + 8)
            + self.reset.map_or(0, |_| 1 + 1)
    }

    /// Bytes a message with these control frames leaves for `DATA` bytes
    /// within `budget` encoded bytes.
    pub fn data_room(&self, budget: usize) -> usize {
        let without = StreamMessage { data: None, ..self.clone() };
        budget.saturating_sub(without.encoded_len() + 1 + 8 + 4).min(MAX_DATA_LEN)
    }

    /// The canonical encoding. Does not validate: [`Self::decode`] refuses
    /// what [`Self::validate`] refuses.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.push(STREAM_VERSION);
        out.extend_from_slice(&self.id.0);
        if let Some(target) = &self.open {
            out.push(T_OPEN);
            out.extend_from_slice(&target.port.to_le_bytes());
            out.push(u8::try_from(target.host.len()).unwrap_or(0));
            out.extend_from_slice(target.host.as_bytes());
        }
        if self.opened {
            out.push(T_OPENED);
        }
        if let Some(batch) = self.surbs {
            out.push(T_SURBS);
            out.extend_from_slice(&batch.seq.to_le_bytes());
            out.extend_from_slice(&batch.count.to_le_bytes());
        }
        if let Some(pool) = self.pool {
            out.push(T_POOL);
            out.extend_from_slice(&pool.held.to_le_bytes());
            out.extend_from_slice(&pool.seen_seq.to_le_bytes());
        }
        if let Some(ack) = self.ack {
            out.push(T_ACK);
            out.extend_from_slice(&ack.offset.to_le_bytes());
            out.extend_from_slice(&ack.window.to_le_bytes());
        }
        if let Some(data) = &self.data {
            out.push(T_DATA);
            out.extend_from_slice(&data.offset.to_le_bytes());
            out.extend_from_slice(&u32::try_from(data.bytes.len()).unwrap_or(u32::MAX).to_le_bytes());
            out.extend_from_slice(&data.bytes);
        }
        if let Some(fin) = self.fin {
            out.push(T_FIN);
            out.extend_from_slice(&fin.to_le_bytes());
        }
        if let Some(code) = self.reset {
            out.push(T_RESET);
            out.push(code as u8);
        }
        out
    }

    /// Checks the fields against the format's rules.
    pub fn validate(&self) -> Result<(), StreamError> {
        if let Some(target) = &self.open {
            check_host(&target.host)?;
            if target.port == 0 {
                return Err(StreamError::Malformed("port 0".into()));
            }
        }
        if let Some(data) = &self.data {
            if data.bytes.is_empty() || data.bytes.len() > MAX_DATA_LEN {
                return Err(StreamError::Malformed(format!("DATA of {} bytes", data.bytes.len())));
            }
            end_of(data.offset, data.bytes.len())?;
        }
        if let Some(batch) = self.surbs
            && batch.seq == 0
        {
            return Err(StreamError::Malformed("SURB batch 0".into()));
        }
        if let (Some(data), Some(fin)) = (&self.data, self.fin)
            && end_of(data.offset, data.bytes.len())? > fin
        {
            return Err(StreamError::Malformed("DATA beyond FIN".into()));
        }
        Ok(())
    }

    /// Decodes a message; refuses anything [`Self::encode`] of a valid
    /// message would not produce.
    pub fn decode(bytes: &[u8]) -> Result<Self, StreamError> {
        let mut r = Reader(bytes);
        let version = r.u8()?;
        if version != STREAM_VERSION {
            return Err(StreamError::Malformed(format!("unknown stream version {version}")));
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(r.take(16)?);
        let mut message = Self::new(StreamId(id));
        let mut last = 0u8;
        while !r.0.is_empty() {
            let kind = r.u8()?;
            if kind <= last {
                return Err(StreamError::Malformed(format!("frame {kind:#04x} out of order or repeated")));
            }
            last = kind;
            match kind {
                T_OPEN => {
                    let port = u16::from_le_bytes(r.array()?);
                    let len = usize::from(r.u8()?);
                    let host = String::from_utf8(r.take(len)?.to_vec())
                        .map_err(|_| StreamError::Malformed("host is not ASCII".into()))?;
                    message.open = Some(Target { host, port });
                }
                T_OPENED => message.opened = true,
                T_SURBS => {
                    let seq = u32::from_le_bytes(r.array()?);
                    let count = u16::from_le_bytes(r.array()?);
                    message.surbs = Some(SurbBatch { seq, count });
                }
                T_POOL => {
                    let held = u16::from_le_bytes(r.array()?);
                    let seen_seq = u32::from_le_bytes(r.array()?);
                    message.pool = Some(Pool { held, seen_seq });
                }
                T_ACK => {
                    let offset = u64::from_le_bytes(r.array()?);
                    let window = u64::from_le_bytes(r.array()?);
                    message.ack = Some(Ack { offset, window });
                }
                T_DATA => {
                    let offset = u64::from_le_bytes(r.array()?);
                    let len = u32::from_le_bytes(r.array()?) as usize;
                    if len > MAX_DATA_LEN {
                        return Err(StreamError::Malformed(format!("DATA of {len} bytes")));
                    }
                    message.data = Some(Data { offset, bytes: r.take(len)?.to_vec() });
                }
                T_FIN => message.fin = Some(u64::from_le_bytes(r.array()?)),
                T_RESET => message.reset = Some(ResetCode::try_from(r.u8()?)?),
                other => return Err(StreamError::Malformed(format!("unknown frame type {other:#04x}"))),
            }
        }
        message.validate()?;
        Ok(message)
    }
}

/// `offset + len`, refusing overflow.
pub(crate) fn end_of(offset: u64, len: usize) -> Result<u64, StreamError> {
    offset.checked_add(len as u64).filter(|end| *end < u64::MAX).ok_or(StreamError::Malformed("offset overflow".into()))
}

fn check_host(host: &str) -> Result<(), StreamError> {
    let ok = !host.is_empty()
        && host.len() <= MAX_HOST_LEN
        && host.bytes().all(|b| b.is_ascii_graphic())
        && !host.contains(['/', '@', '?', '#']);
    if ok { Ok(()) } else { Err(StreamError::Malformed("invalid host".into())) }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], StreamError> {
        if n > self.0.len() {
            return Err(StreamError::Malformed(format!("truncated: {n} bytes wanted, {} left", self.0.len())));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, StreamError> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], StreamError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> StreamMessage {
        StreamMessage {
            id: StreamId([7; 16]),
            open: Some(Target { host: "example.org".into(), port: 443 }),
            opened: true,
            surbs: Some(SurbBatch { seq: 3, count: 40 }),
            pool: Some(Pool { held: 12, seen_seq: 2 }),
            ack: Some(Ack { offset: 1000, window: 5000 }),
            data: Some(Data { offset: 10, bytes: b"hello".to_vec() }),
            fin: Some(15),
            reset: Some(ResetCode::Refused),
        }
    }

    #[test]
    fn round_trip_and_length() {
        let m = full();
        let bytes = m.encode();
        assert_eq!(bytes.len(), m.encoded_len());
        assert_eq!(StreamMessage::decode(&bytes).unwrap(), m);
        let empty = StreamMessage::new(StreamId([1; 16]));
        assert_eq!(StreamMessage::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn every_truncation_is_refused_or_a_shorter_valid_message() {
        let bytes = full().encode();
        for cut in 0..bytes.len() {
            // A cut between frames is a valid shorter message; any other cut fails.
            if let Ok(m) = StreamMessage::decode(&bytes[..cut]) {
                assert_eq!(m.encode(), bytes[..cut], "cut {cut} decoded to something else");
            }
        }
    }

    #[test]
    fn non_canonical_inputs_are_refused() {
        let mut repeated = StreamMessage::new(StreamId([0; 16])).encode();
        repeated.extend_from_slice(&[T_FIN, 0, 0, 0, 0, 0, 0, 0, 0, T_FIN, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(StreamMessage::decode(&repeated).is_err());
        let mut swapped = StreamMessage::new(StreamId([0; 16])).encode();
        swapped.extend_from_slice(&[T_RESET, 1, T_OPENED]);
        assert!(StreamMessage::decode(&swapped).is_err());
        let mut unknown = StreamMessage::new(StreamId([0; 16])).encode();
        unknown.push(0x09);
        assert!(StreamMessage::decode(&unknown).is_err());
        let mut version = full().encode();
        version[0] = 2;
        assert!(StreamMessage::decode(&version).is_err());
    }

    #[test]
    fn invalid_fields_are_refused() {
        let bad = |m: StreamMessage| StreamMessage::decode(&m.encode()).is_err();
        let base = StreamMessage::new(StreamId([0; 16]));
        let host = |h: &str| Some(Target { host: h.into(), port: 80 });
        assert!(bad(StreamMessage { open: host(""), ..base.clone() }));
        assert!(bad(StreamMessage { open: host("a b"), ..base.clone() }));
        assert!(bad(StreamMessage { open: host("a/b"), ..base.clone() }));
        assert!(bad(StreamMessage { open: Some(Target { host: "a".into(), port: 0 }), ..base.clone() }));
        assert!(bad(StreamMessage { data: Some(Data { offset: 0, bytes: vec![] }), ..base.clone() }));
        assert!(bad(StreamMessage { data: Some(Data { offset: u64::MAX - 1, bytes: vec![1, 2] }), ..base.clone() }));
        assert!(bad(StreamMessage { surbs: Some(SurbBatch { seq: 0, count: 1 }), ..base.clone() }));
        assert!(bad(StreamMessage { data: Some(Data { offset: 0, bytes: vec![1, 2] }), fin: Some(1), ..base.clone() }));
        let mut bad_reset = base.encode();
        bad_reset.extend_from_slice(&[T_RESET, 0x77]);
        assert!(StreamMessage::decode(&bad_reset).is_err());
    }

    #[test]
    fn data_room_fills_a_budget_exactly() {
        let mut m = full();
        m.data = None;
        let room = m.data_room(4000);
        m.data = Some(Data { offset: 0, bytes: vec![0; room] });
        m.fin = None;
        assert_eq!(m.encoded_len(), 4000 - 9);
        let mut m = StreamMessage::new(StreamId([0; 16]));
        let room = m.data_room(4000);
        m.data = Some(Data { offset: 0, bytes: vec![0; room] });
        assert_eq!(m.encoded_len(), 4000);
    }

    #[test]
    fn socks_codes() {
        assert_eq!(ResetCode::Refused.socks_reply(), 5);
        assert_eq!(ResetCode::Forbidden.socks_reply(), 2);
        assert_eq!(ResetCode::Busy.socks_reply(), 1);
        assert_eq!(ResetCode::UnknownStream.socks_reply(), 1);
    }
}
