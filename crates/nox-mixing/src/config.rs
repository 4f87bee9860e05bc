//! Configuration of the mixing scheduler and the per-packet delay request.

use std::time::Duration;

use crate::metrics::DEFAULT_DELAY_BUCKETS;

/// Where a packet's mixing delay comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delay {
    /// The scheduler draws the delay from Exp(1/μ) with μ = [`MixingConfig::mean_delay`].
    Sample,
    /// The delay was chosen by someone else, typically the sender, who wrote it into the
    /// packet's routing block. It is still measured from the packet's *arrival*.
    Given(Duration),
}

/// What to do with an *over-delayed* packet: one whose processing (arrival to enqueue) already
/// took longer than its delay, so its intended release instant `arrival + delay` has passed.
///
/// See `docs/design/mixing.md` for the reasoning; the seed analysis is Vu (2023), §3.2 and §5.2.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverDelayPolicy {
    /// Draw a fresh residual delay from Exp(1/μ) and release at `enqueue + residual`.
    ///
    /// By memorylessness the packet's time in the mix after processing is Exp(μ) whatever its
    /// first draw was: there is no spike of releases at the end of processing, which is what
    /// lets an observer link an over-delayed packet to its arrival. The default.
    #[default]
    ResampleResidual,
    /// Release at once (the seed's "strategy 1 of approach 1"). Lowest latency, but the
    /// over-delayed packets leave in arrival order right after processing: a point mass of
    /// released packets at `arrival + processing` that a timing observer can exploit. Offered
    /// for measurements and comparison, not recommended.
    ReleaseImmediately,
}

/// Configuration of a [`crate::MixingScheduler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MixingConfig {
    /// μ, the mean of the exponential delay. `Duration::ZERO` disables mixing: sampled delays
    /// are zero and packets are released as soon as they are enqueued.
    pub mean_delay: Duration,
    /// Maximum number of packets held at once; further inserts are refused.
    pub capacity: usize,
    /// Handling of packets whose processing outlasted their delay.
    pub over_delay_policy: OverDelayPolicy,
    /// Largest accepted [`Delay::Given`]. A sender-chosen delay beyond it is refused, so a
    /// sender cannot park packets in the bounded queue for hours.
    pub max_given_delay: Duration,
    /// Upper bounds of the delay histogram buckets (ascending); an implicit `+Inf` bucket follows.
    pub histogram_bounds: Vec<Duration>,
}

impl MixingConfig {
    /// A configuration with the given mean and capacity, the default over-delay policy,
    /// `max_given_delay = 40 · μ` (at least one second) and the default histogram buckets.
    ///
    /// `P(Exp(μ) > 40μ) = e^{-40} ≈ 4·10⁻¹⁸`, so honest sender-chosen delays are never refused.
    pub fn new(mean_delay: Duration, capacity: usize) -> Self {
        Self {
            mean_delay,
            capacity,
            over_delay_policy: OverDelayPolicy::default(),
            max_given_delay: mean_delay.saturating_mul(40).max(Duration::from_secs(1)),
            histogram_bounds: DEFAULT_DELAY_BUCKETS.to_vec(),
        }
    }
}
