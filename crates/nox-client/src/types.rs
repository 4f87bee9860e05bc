//! Values the core exchanges with its shell.

use nox_cover::Instant;

use nox_sphinx::NodeId;

use crate::error::ClientError;

/// Payload prefix of a drop cover packet: exits discard it silently (the
/// node's `nox_node::cover::DROP_MAGIC`).
pub const DROP_MAGIC: &[u8; 8] = b"NOXDROP1";

/// The current time, as the core sees it: a monotonic instant for timers
/// and unix seconds for choosing the key epoch. The host supplies both (the
/// core reads no clock): the native shell with `Now::system()` (`shell`
/// feature), a browser from `performance.now()` and `Date.now()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// Monotonic time.
    pub at: Instant,
    /// Wall-clock unix seconds.
    pub unix: u64,
}

/// Names one request of this client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// One packet for the shell to send to its entry node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The entry node (layer 0) to hand the packet to.
    pub entry: NodeId,
    /// One Sphinx packet.
    pub packet: Vec<u8>,
    /// What it carries: the client's own bookkeeping, never on the wire (every kind is the
    /// same size and, with cover on, leaves in the same Poisson slots).
    pub kind: PacketKind,
}

/// What an [`Outgoing`] packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// A fragment of a request or of a stream message; `head` is the fragment's first 16
    /// bytes (format version and the first 15 bytes of its message id, fragments.md), which
    /// is all an exit needs to tell fragments of one message apart.
    Fragment {
        /// The fragment's first 16 bytes.
        head: [u8; 16],
    },
    /// A loop cover packet (an empty echo whose reply comes back to this client).
    Loop,
    /// A drop cover packet (the exit discards it).
    Drop,
}

/// A request that finished: its response, or why there is none.
#[derive(Debug)]
pub struct Completed {
    /// Which request.
    pub id: RequestId,
    /// The response, or the failure.
    pub result: Result<nox_message::Response, ClientError>,
}

/// Counters of what the core saw; nothing here identifies a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Requests sent (queued or handed out).
    pub requests: u64,
    /// Requests completed with a decoded response.
    pub completed: u64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Real packets built.
    pub real_packets: u64,
    /// Cover (drop) packets built.
    pub cover_packets: u64,
    /// Loop cover packets built (health probes; not requests).
    pub loops_sent: u64,
    /// Loops whose reply came back in time.
    pub loops_returned: u64,
    /// Loops not back within the health timeout.
    pub loops_lost: u64,
    /// Nodes currently marked degraded by loop health.
    pub degraded_nodes: u64,
    /// Reply fragments accepted.
    pub replies: u64,
    /// Replies for a SURB id this client never issued (or long forgotten).
    pub unknown_surb: u64,
    /// Second replies on a SURB already used: refused.
    pub reused_surb: u64,
    /// Replies on SURBs of requests already completed or timed out.
    pub late_replies: u64,
    /// Replies that failed authentication or fragment checks.
    pub bad_replies: u64,
    /// Downstream records that did not parse.
    pub malformed_downstream: u64,
    /// Stream retransmission timeouts (each resends what was unacknowledged).
    pub stream_timeouts: u64,
    /// Former reply gateways given up while replies were still owed through
    /// them (more than `MAX_OLD_GATEWAYS` changes in a row).
    pub reply_gateways_evicted: u64,
}
