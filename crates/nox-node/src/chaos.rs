//! `[chaos]`: **fault injection for soak and chaos runs, off by default.** Drops and delays the
//! packets this node sends on its links — forwards to the next layer and replies handed to a
//! client's mailbox — so that `nox bench soak` can measure delivery under link loss and jitter
//! where `tc netem` is not available (no root, or a kernel without `sch_netem`).
//!
//! Never part of a production node: the fault layer exists only with the `chaos` cargo feature
//! (benchmark builds: `scripts/bench/run_all.sh` builds `nox` with `--features observe,chaos`).
//! Without it, [`LinkFaults`] is an empty enum (no value can exist, so the router's fault branch
//! is dead code) and a configuration with `[chaos]` is refused ([`COMPILED_IN`], [`NOT_BUILT`]).
//!
//! Per packet: dropped with probability `link_loss` (counted as
//! `nox_chaos_packets_total{fault="dropped"}`), otherwise held for `link_delay_ms` plus a uniform
//! `[0, link_jitter_ms)` before it is handed to the link (`fault="delayed"`; packets may overtake
//! each other, as on a jittery path). The exit's delivery to its own services is not a link and
//! is never touched.

use std::sync::Arc;

use nox_link::transport::SendShaper;
use serde::Deserialize;

/// Whether this build can inject faults (`chaos` cargo feature).
pub const COMPILED_IN: bool = cfg!(feature = "chaos");

/// Why a build without the `chaos` feature refuses `[chaos]`.
pub const NOT_BUILT: &str = "this node has no fault injection: [chaos] is a testing tool, available only in a build \
     with the `chaos` cargo feature (cargo build -p nox --features chaos, as scripts/bench/run_all.sh does for \
     `nox bench soak`); remove the [chaos] section";

/// Longest delay the section may ask for: a chaos run models a slow path, not a dead one.
const MAX_DELAY_MS: f64 = 10_000.0;

/// `[chaos]` (testing only; all zero: the layer passes everything).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ChaosSection {
    /// Probability that a packet leaving on a link is dropped, in [0, 1).
    pub link_loss: f64,
    /// Fixed delay added to every packet that is not dropped, ms.
    pub link_delay_ms: f64,
    /// Uniform extra delay in [0, `link_jitter_ms`), ms.
    pub link_jitter_ms: f64,
}

impl ChaosSection {
    /// Checks the ranges: loss in [0, 1), delays finite, ≥ 0 and together ≤ 10 s.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..1.0).contains(&self.link_loss) {
            return Err(format!("link_loss must be in [0, 1), not {}", self.link_loss));
        }
        let delay_ok = |d: f64| d.is_finite() && d >= 0.0;
        if !delay_ok(self.link_delay_ms)
            || !delay_ok(self.link_jitter_ms)
            || self.link_delay_ms + self.link_jitter_ms > MAX_DELAY_MS
        {
            return Err(format!("link_delay_ms and link_jitter_ms must be ≥ 0 and together at most {MAX_DELAY_MS} ms"));
        }
        Ok(())
    }
}

/// What the fault layer does with one packet (the link layer's shaping decision).
pub use nox_link::transport::LinkFault as Fault;

#[cfg(feature = "chaos")]
mod enabled {
    use std::sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    };

    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    use std::time::Duration;

    use super::{ChaosSection, Fault};

    /// The fault layer of a node built with the `chaos` feature.
    pub struct LinkFaults {
        section: ChaosSection,
        rng: Mutex<ChaCha20Rng>,
        dropped: AtomicU64,
        delayed: AtomicU64,
    }

    impl LinkFaults {
        /// A fault layer for `section` (validated by the configuration), seeded from the OS.
        pub fn new(section: &ChaosSection) -> Self {
            Self::with_rng(section, ChaCha20Rng::from_os_rng())
        }

        /// A fault layer drawing from `rng` (tests: a fixed seed).
        pub fn with_rng(section: &ChaosSection, rng: ChaCha20Rng) -> Self {
            Self {
                section: section.clone(),
                rng: Mutex::new(rng),
                dropped: AtomicU64::new(0),
                delayed: AtomicU64::new(0),
            }
        }

        fn uniform(&self) -> f64 {
            let word = match self.rng.lock() {
                Ok(mut rng) => rng.next_u64(),
                Err(poisoned) => poisoned.into_inner().next_u64(),
            };
            // 53 random bits → [0, 1).
            (word >> 11) as f64 / (1u64 << 53) as f64
        }

        /// Decides the fate of one packet and counts it.
        pub fn decide(&self) -> Fault {
            let section = &self.section;
            if section.link_loss > 0.0 && self.uniform() < section.link_loss {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return Fault::Drop;
            }
            let ms = section.link_delay_ms + section.link_jitter_ms * self.uniform();
            if ms <= 0.0 {
                return Fault::Pass;
            }
            self.delayed.fetch_add(1, Ordering::Relaxed);
            Fault::Delay(Duration::from_secs_f64(ms / 1e3))
        }

        /// `(dropped, delayed)` so far.
        pub fn counts(&self) -> (u64, u64) {
            (self.dropped.load(Ordering::Relaxed), self.delayed.load(Ordering::Relaxed))
        }
    }
}

#[cfg(feature = "chaos")]
pub use enabled::LinkFaults;

/// Without the `chaos` feature no fault layer can exist: this type has no values.
#[cfg(not(feature = "chaos"))]
pub enum LinkFaults {}

#[cfg(not(feature = "chaos"))]
impl LinkFaults {
    /// Unreachable: there is no value to call it on.
    pub fn decide(&self) -> Fault {
        match *self {}
    }

    /// Unreachable: there is no value to call it on.
    pub fn counts(&self) -> (u64, u64) {
        match *self {}
    }
}

/// The fault layer a configuration asks for: `None` without `[chaos]`; an error if `[chaos]` is
/// present in a build without the feature (also when the configuration was built in code).
pub fn from_config(section: Option<&ChaosSection>) -> Result<Option<LinkFaults>, &'static str> {
    match section {
        None => Ok(None),
        #[cfg(feature = "chaos")]
        Some(section) => Ok(Some(LinkFaults::new(section))),
        #[cfg(not(feature = "chaos"))]
        Some(_) => Err(NOT_BUILT),
    }
}

/// The layer as the link layer's [`SendShaper`] (node-to-node sends, including the exit's
/// replies and cover traffic).
pub fn shaper(faults: &Arc<LinkFaults>) -> SendShaper {
    let faults = faults.clone();
    Arc::new(move || faults.decide())
}

/// The `nox_chaos_packets_total` lines of `/metrics` (nothing without a fault layer).
pub fn render(faults: Option<&LinkFaults>) -> String {
    let Some(faults) = faults else { return String::new() };
    let (dropped, delayed) = faults.counts();
    format!(
        "# HELP nox_chaos_packets_total Packets the [chaos] fault layer dropped or delayed on this node's links.\n\
         # TYPE nox_chaos_packets_total counter\n\
         nox_chaos_packets_total{{fault=\"dropped\"}} {dropped}\n\
         nox_chaos_packets_total{{fault=\"delayed\"}} {delayed}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked() {
        assert!(ChaosSection::default().validate().is_ok());
        let ok = ChaosSection { link_loss: 0.1, link_delay_ms: 5.0, link_jitter_ms: 5.0 };
        assert!(ok.validate().is_ok());
        for bad in [
            ChaosSection { link_loss: 1.0, ..ok.clone() },
            ChaosSection { link_loss: -0.1, ..ok.clone() },
            ChaosSection { link_loss: f64::NAN, ..ok.clone() },
            ChaosSection { link_delay_ms: -1.0, ..ok.clone() },
            ChaosSection { link_jitter_ms: f64::INFINITY, ..ok.clone() },
            ChaosSection { link_delay_ms: 9_000.0, link_jitter_ms: 2_000.0, ..ok.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?} accepted");
        }
    }

    /// The default build has no fault layer (also for a configuration built in code); the
    /// manifests' defaults are checked in config.rs.
    #[test]
    fn no_layer_without_the_feature() {
        let section = ChaosSection { link_loss: 0.1, ..ChaosSection::default() };
        match from_config(Some(&section)) {
            Ok(layer) => assert!(COMPILED_IN && layer.is_some()),
            Err(message) => assert!(!COMPILED_IN && message.contains("--features chaos"), "{message}"),
        }
        assert!(matches!(from_config(None), Ok(None)));
    }

    #[cfg(feature = "chaos")]
    #[test]
    fn loss_and_delay_follow_the_section() {
        use rand_core::SeedableRng;
        let section = ChaosSection { link_loss: 0.1, link_delay_ms: 2.0, link_jitter_ms: 3.0 };
        let faults = LinkFaults::with_rng(&section, rand_chacha::ChaCha20Rng::seed_from_u64(7));
        let n: u32 = 20_000;
        let mut drops: u32 = 0;
        for _ in 0..n {
            match faults.decide() {
                Fault::Drop => drops += 1,
                Fault::Delay(d) => assert!((2.0..5.0).contains(&(d.as_secs_f64() * 1e3)), "{d:?}"),
                Fault::Pass => panic!("a delay of ≥ 2 ms was configured"),
            }
        }
        // 10 % ± 5σ (σ ≈ 0.21 % at n = 20,000).
        let rate = f64::from(drops) / f64::from(n);
        assert!((0.089..0.111).contains(&rate), "{rate}");
        assert_eq!(faults.counts(), (u64::from(drops), u64::from(n - drops)));
        assert!(render(Some(&faults)).contains(&format!("nox_chaos_packets_total{{fault=\"dropped\"}} {drops}")));
        let pass = LinkFaults::new(&ChaosSection::default());
        assert_eq!(pass.decide(), Fault::Pass);
    }
}
