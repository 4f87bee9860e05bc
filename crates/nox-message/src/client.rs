//! Client side: fragmenting requests, sizing the SURB budget, reassembling replies.

use nox_fec::{
    Layout, MAX_TOTAL_SHARDS, MessageId, ParityRatio, PlanningError, ReassemblyLimits, data_shards_for, surbs_for_reply,
};
use nox_sphinx::Geometry;
use rand_core::{CryptoRng, RngCore};

use crate::{MessageError, RESPONSE_HEADER_LEN, exit::MAX_REQUEST_LEN};

/// Largest reply a [`ReplyAssembler`] with [`REPLY_LIMITS`] accepts: 8 MiB.
pub const MAX_REPLY_LEN: usize = 8 << 20;

/// Reassembly limits suited to replies on a client: 8 MiB replies, 64 MiB
/// buffered, 256 pending replies kept 120 s (replies cross the mixnet with
/// delays on every hop), 4096 completed ids remembered 300 s.
pub const REPLY_LIMITS: ReassemblyLimits = ReassemblyLimits {
    max_message_len: MAX_REPLY_LEN,
    max_buffered_bytes: 64 << 20,
    max_pending_messages: 256,
    pending_ttl_ms: 120_000,
    max_remembered_completed: 4096,
    completed_ttl_ms: 300_000,
};

/// Cuts an encoded request into fragments, each at most
/// `geometry.payload_capacity()` bytes: one per forward packet. The message
/// id is random. With d data shards, p = ceil(d · parity_percent / 100) when
/// d > 1 and p = 0 when d = 1, capped so that d + p ≤ 255.
pub fn request_fragments<R: RngCore + CryptoRng>(
    geometry: &Geometry,
    request: &[u8],
    parity_percent: u16,
    rng: &mut R,
) -> Result<Vec<Vec<u8>>, MessageError> {
    if request.len() > MAX_REQUEST_LEN {
        return Err(MessageError::MessageTooLarge { len: request.len(), max: MAX_REQUEST_LEN });
    }
    let ratio = ParityRatio::percent(u32::from(parity_percent))?;
    let data_shards = data_shards_for(request.len(), geometry.payload_capacity())?;
    let parity_shards =
        if data_shards > 1 { ratio.parity_for(data_shards).min(MAX_TOTAL_SHARDS - data_shards) } else { 0 };
    let layout = Layout::new(request.len(), data_shards, parity_shards)?;
    Ok(nox_fec::encode(request, MessageId::random(rng), &layout)?)
}

/// How many SURBs to attach so that a reply whose body is about
/// `expected_reply_len` bytes arrives with probability `target` at loss rate
/// `loss` (Theorem 1). The 2-byte response header is added here. Between 1
/// and 255; if 255 SURBs cannot reach the target, 255.
pub fn surbs_needed(
    geometry: &Geometry,
    expected_reply_len: usize,
    loss: f64,
    target: f64,
) -> Result<usize, MessageError> {
    let len = expected_reply_len.saturating_add(RESPONSE_HEADER_LEN);
    match surbs_for_reply(len, geometry.payload_capacity(), loss, target, MAX_TOTAL_SHARDS) {
        Ok(choice) => Ok(choice.total_shards().clamp(1, MAX_TOTAL_SHARDS)),
        Err(PlanningError::TargetUnreachable { best, .. }) => Ok(best.total_shards().clamp(1, MAX_TOTAL_SHARDS)),
        Err(PlanningError::Layout(nox_fec::LayoutError::MessageTooLarge { max, .. })) => {
            Err(MessageError::MessageTooLarge { len, max })
        }
        Err(err) => Err(err.into()),
    }
}

/// Reassembles reply fragments (opened from SURB replies) into responses.
pub type ReplyAssembler = crate::assembler::Assembler<crate::assembler::Replies>;

impl ReplyAssembler {
    /// Feeds one reply fragment; returns the encoded response once any d
    /// distinct fragments of it are in. Decode it with
    /// [`crate::Response::decode`].
    pub fn accept(&mut self, fragment: &[u8], now_ms: u64) -> Result<Option<Vec<u8>>, MessageError> {
        self.accept_raw(fragment, now_ms)
    }
}
