//! Exit side: reassembling requests, planning and building SURB replies.

use nox_fec::{Layout, MAX_TOTAL_SHARDS, MessageId, PlanningError, ReassemblyLimits, plan_reply, shard_capacity};
use nox_sphinx::{Geometry, NodeId, Surb};
use rand_core::{CryptoRng, RngCore};

use crate::{MessageError, Request};

/// Largest request a [`RequestAssembler`] with [`REQUEST_LIMITS`] accepts
/// (and [`crate::request_fragments`] sends): 1 MiB.
pub const MAX_REQUEST_LEN: usize = 1 << 20;

/// Reassembly limits for requests at an exit: 1 MiB requests, 64 MiB
/// buffered, 1024 pending requests kept 30 s, 4096 completed ids
/// remembered 60 s.
pub const REQUEST_LIMITS: ReassemblyLimits = ReassemblyLimits {
    max_message_len: MAX_REQUEST_LEN,
    max_buffered_bytes: 64 << 20,
    max_pending_messages: 1024,
    pending_ttl_ms: 30_000,
    max_remembered_completed: 4096,
    completed_ttl_ms: 60_000,
};

/// Reassembles request fragments (forward payloads) into requests.
pub type RequestAssembler = crate::assembler::Assembler<crate::assembler::Requests>;

impl RequestAssembler {
    /// Feeds one fragment; returns the decoded request once any d distinct
    /// fragments of it are in. A completed message that is not a valid
    /// request is an error and is dropped; an exit that wants to answer such
    /// requests uses [`Self::accept_raw`] and [`Request::decode_surbs`].
    pub fn accept(
        &mut self,
        geometry: &Geometry,
        fragment: &[u8],
        now_ms: u64,
    ) -> Result<Option<Request>, MessageError> {
        match self.accept_raw(fragment, now_ms)? {
            Some(message) => Ok(Some(Request::decode(geometry, &message)?)),
            None => Ok(None),
        }
    }
}

/// Shard bytes one SURB reply carries: a reply body has the same payload
/// capacity as a forward packet, less the fragment header.
fn reply_shard_capacity(geometry: &Geometry) -> usize {
    shard_capacity(geometry.payload_capacity()).unwrap_or(0)
}

/// The largest encoded response that fits `n_surbs` SURBs with no parity
/// (at most 255 are used).
pub fn max_reply_len(geometry: &Geometry, n_surbs: usize) -> usize {
    reply_shard_capacity(geometry).saturating_mul(n_surbs.min(MAX_TOTAL_SHARDS))
}

/// Builds the reply packets for an encoded `response`, one fragment per
/// SURB: `(first hop, packet)` pairs. d is the fewest data shards for the
/// response; p is the least parity meeting `target` at `loss` within the
/// SURBs held, or all remaining SURBs (up to 255 shards) when the target is
/// out of reach. Unused SURBs are dropped.
///
/// Fails with [`MessageError::NotEnoughSurbs`] when the response needs more
/// data shards than there are SURBs: send `Response::error(NotEnoughSurbs, ..)`
/// instead, which always fits one SURB.
pub fn reply_packets<R: RngCore + CryptoRng>(
    geometry: &Geometry,
    response: &[u8],
    mut surbs: Vec<Surb>,
    loss: f64,
    target: f64,
    rng: &mut R,
) -> Result<Vec<(NodeId, Vec<u8>)>, MessageError> {
    reply_packets_from(geometry, response, &mut surbs, loss, target, rng)
}

/// [`reply_packets`] for a SURB pool (a stream's): takes from the front of
/// `surbs` only the SURBs the reply uses (d data shards and the least parity
/// meeting `target` at `loss`, or every SURB when the target is out of reach)
/// and leaves the rest. On an error no SURB is taken.
pub fn reply_packets_from<R: RngCore + CryptoRng>(
    geometry: &Geometry,
    response: &[u8],
    surbs: &mut Vec<Surb>,
    loss: f64,
    target: f64,
    rng: &mut R,
) -> Result<Vec<(NodeId, Vec<u8>)>, MessageError> {
    let capacity = reply_shard_capacity(geometry).max(1);
    let needed = response.len().div_ceil(capacity).max(1);
    if needed > surbs.len() || needed > MAX_TOTAL_SHARDS {
        return Err(MessageError::NotEnoughSurbs { needed, have: surbs.len() });
    }
    let layout = match plan_reply(response.len(), geometry.payload_capacity(), surbs.len(), loss, target) {
        Ok(plan) => plan.layout,
        Err(PlanningError::TargetUnreachable { best, .. }) => {
            Layout::new(response.len(), best.data_shards, best.parity_shards)?
        }
        Err(err) => return Err(err.into()),
    };
    let fragments = nox_fec::encode(response, MessageId::random(rng), &layout)?;
    let used: Vec<Surb> = surbs.drain(..fragments.len().min(surbs.len())).collect();
    fragments
        .iter()
        .zip(used)
        .map(|(fragment, surb)| {
            let hop = surb.first_hop();
            Ok((hop, surb.into_reply(geometry, fragment)?))
        })
        .collect()
}
