//! Settings of the client core.

use std::collections::BTreeSet;
use std::time::Duration;

use nox_cover::HealthConfig;
use nox_sphinx::NodeId;

/// The λ_P (packets per second) the `nox client` daemon and the wallet's commands send at unless
/// told otherwise: Loopix substitution cover on, the frontier's choice (`nox bench frontier`,
/// docs/benchmarks/frontier.md): the fastest round trip at ≤ 1 GB a day of 4 KiB packets
/// (2.75 × 4,112 B × 86,400 s = 0.98 GB) with ≥ 90 % of log₂ 1000 sender entropy at μ = 50 ms.
/// The core's own default is 0 (off).
pub const DAEMON_COVER_RATE: f64 = 2.75;

/// What the core needs to know besides the topology.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Assumed loss rate of a reply packet, for sizing the SURB budget
    /// (default 0.05).
    pub loss: f64,
    /// Probability that a reply is recoverable that the budget aims at
    /// (default 0.99).
    pub target: f64,
    /// Parity shards added to a multi-fragment request, in percent of its
    /// data shards (default 25).
    pub parity_percent: u16,
    /// Time after which a request without a complete reply fails with
    /// `ClientError::Timeout` (default 30 s). It is never retransmitted.
    pub timeout: Duration,
    /// Loopix λ_P in packets per second; 0 disables cover traffic and sends
    /// real packets at once (default 0 in the core; the daemon uses
    /// [`DAEMON_COVER_RATE`]).
    pub cover_rate: f64,
    /// Which free λ_P slots carry cover (`nox client --profile`; default `always-on`: every
    /// one). Real packets take the same slots under every profile (crate::profile).
    pub profile: nox_cover::CoverProfile,
    /// Real packets the send queue holds while waiting for a slot (default 4096).
    pub queue_capacity: usize,
    /// Requests in flight at most (default 1024).
    pub max_pending: usize,
    /// Share of the cover slots that carry a loop (an echo request to
    /// ourselves, a health probe) instead of a drop (default 0.5). Without
    /// cover traffic there are no loops.
    pub loop_fraction: f64,
    /// Loop-health settings: a loop not back within `return_timeout`
    /// (default 5 s here) is lost; `losses_to_degrade` consecutive losses
    /// (default 5) mark a node degraded, `returns_to_recover` consecutive
    /// returns (default 2) restore it.
    pub health: HealthConfig,
    /// Nodes never to use (distrusted), on top of those loop health marks
    /// degraded.
    pub avoid: BTreeSet<NodeId>,
    /// Threads for proof-of-work solving (1: deterministic).
    pub pow_threads: usize,
    /// Streams (SOCKS5 `CONNECT`): buffers, timers, the SURB pool target.
    pub streams: crate::StreamConfig,
    /// Streams open at once at most (default 256).
    pub max_streams: usize,
    /// Share of forward packets the shell drops on purpose instead of
    /// sending, in [0, 1) (default 0). For loss tests and measurements only.
    pub inject_loss: f64,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            loss: 0.05,
            target: 0.99,
            parity_percent: 25,
            timeout: Duration::from_secs(30),
            cover_rate: 0.0,
            profile: nox_cover::CoverProfile::AlwaysOn,
            queue_capacity: 4096,
            max_pending: 1024,
            loop_fraction: 0.5,
            health: HealthConfig { return_timeout: Duration::from_secs(5), ..HealthConfig::default() },
            avoid: BTreeSet::new(),
            pow_threads: 1,
            streams: crate::StreamConfig::default(),
            max_streams: 256,
            inject_loss: 0.0,
        }
    }
}
