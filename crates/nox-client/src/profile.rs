//! Client cover profiles (`nox client --profile NAME`): which of the λ_P send queue's free
//! slots carry cover. The decision is `nox_cover::CoverGate`'s (pure, tested there); this
//! module wires it into the core: a request queued is a *use*, a real packet or stream message
//! leaving in a slot is a *real send*, and a free slot the gate refuses stays silent. Real
//! packets keep the queue's slots whatever the profile.

use nox_cover::{CoverGate, Instant};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

pub use nox_cover::{CoverProfile, MobileProfile, PROFILE_NAMES, ProfileError, UnknownProfile, WalletProfile};

/// The gate of a running core, with its own RNG (drawn from the packet RNG once, at start).
pub(crate) struct ProfileGate {
    gate: Option<CoverGate<ChaCha20Rng>>,
}

impl ProfileGate {
    /// A gate for `profile` over slots of `rate` carrying `packet_bytes`; `always-on` needs no
    /// state (every free slot is cover), nor does a core without cover traffic.
    pub(crate) fn new(
        profile: CoverProfile,
        rate: f64,
        packet_bytes: usize,
        start: Instant,
        rng: &mut ChaCha20Rng,
    ) -> Result<Self, ProfileError> {
        if rate <= 0.0 || profile == CoverProfile::AlwaysOn {
            return Ok(Self { gate: None });
        }
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let gate = CoverGate::new(profile, rate, packet_bytes as u64, start, ChaCha20Rng::from_seed(seed))?;
        Ok(Self { gate: Some(gate) })
    }

    pub(crate) fn on_use(&mut self, now: Instant) {
        if let Some(g) = &mut self.gate {
            g.on_use(now);
        }
    }

    pub(crate) fn on_real_sent(&mut self, at: Instant) {
        if let Some(g) = &mut self.gate {
            g.on_real_sent(at);
        }
    }

    pub(crate) fn allow_cover(&mut self, at: Instant) -> bool {
        self.gate.as_mut().is_none_or(|g| g.allow_cover(at))
    }
}
