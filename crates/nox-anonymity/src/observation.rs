//! What a global passive adversary (GPA) sees, what it knows, and the ground truth kept apart.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::AnonymityError;

/// One end of an observed link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Endpoint {
    /// A client (sender) machine.
    Client(u32),
    /// A mix node.
    Node(u16),
    /// A destination contacted by an exit node (the exit performing the request is visible).
    Destination(u32),
}

/// One packet seen on one link: a client→entry send, a node→node forward, or an
/// exit→destination emission. Packets are fixed-size and bitwise unlinkable, so time and
/// endpoints are all the adversary gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkEvent {
    /// When the packet crossed the link, in microseconds on the adversary's clock.
    pub time_us: u64,
    /// The sending end.
    pub from: Endpoint,
    /// The receiving end.
    pub to: Endpoint,
}

/// Everything the GPA observed, in non-decreasing time order. When two events share a
/// timestamp, an arrival that caused a departure must come before it (the order the packets
/// were captured in).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// The observed link events.
    pub events: Vec<LinkEvent>,
}

impl Observation {
    /// Checks the time order and that every node is in `topology`.
    pub fn validate(&self, topology: &Topology) -> Result<(), AnonymityError> {
        let known: std::collections::HashSet<u16> = topology.layers.iter().flatten().copied().collect();
        for (index, event) in self.events.iter().enumerate() {
            if index > 0 && event.time_us < self.events[index - 1].time_us {
                return Err(AnonymityError::UnsortedEvents { index });
            }
            for end in [event.from, event.to] {
                if let Endpoint::Node(node) = end
                    && !known.contains(&node)
                {
                    return Err(AnonymityError::UnknownNode { index, node });
                }
            }
        }
        Ok(())
    }

    /// Distinct clients seen sending (real or cover traffic alike): the largest possible
    /// anonymity set.
    pub fn clients(&self) -> Vec<u32> {
        let mut clients: Vec<u32> = self
            .events
            .iter()
            .filter_map(|e| match e.from {
                Endpoint::Client(c) => Some(c),
                _ => None,
            })
            .collect();
        clients.sort_unstable();
        clients.dedup();
        clients
    }

    /// Indices of the exit→destination emissions.
    pub fn deliveries(&self) -> Vec<usize> {
        (0..self.events.len()).filter(|&i| matches!(self.events[i].to, Endpoint::Destination(_))).collect()
    }
}

/// A real (non-cover) message, numbered by whoever captured the ground truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MessageId(pub u64);

/// What actually happened. Never shown to the adversary; used only to score its guesses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundTruth {
    /// The client that sent each message.
    pub message_sender: HashMap<MessageId, u32>,
    /// The index in [`Observation::events`] of each message's exit→destination emission.
    pub message_delivery: HashMap<MessageId, usize>,
}

/// The stratified topology, public to everyone: `layers[0]` are entry nodes, the last layer
/// the exits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// Node ids per layer.
    pub layers: Vec<Vec<u16>>,
}

impl Topology {
    /// `layers` layers of `width` nodes, numbered `0..layers·width` layer by layer.
    pub fn uniform(layers: usize, width: u16) -> Self {
        let layers = (0..layers).map(|l| (0..width).map(|w| l as u16 * width + w).collect()).collect();
        Self { layers }
    }
}

/// The adversary's knowledge of the per-hop delay: Exp(μ) after a constant processing time.
///
/// The mixing parameter is public (it is in the network configuration), so a GPA knows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DelayModel {
    /// μ, the mean mixing delay per hop, in microseconds.
    pub mean_delay_us: f64,
    /// Constant processing time per hop (unwrap, checks, link), in microseconds.
    pub processing_us: f64,
    /// Scale floor of the delay density: the adversary uses Exp(max(μ, floor)). With μ = 0 this
    /// is the processing jitter, and the posterior collapses onto the closest earlier arrival
    /// (FIFO / closest-in-time matching).
    pub jitter_floor_us: f64,
}

impl DelayModel {
    /// μ per hop with no processing time and a 1 µs floor.
    pub fn mixing(mean_delay_us: f64) -> Self {
        Self { mean_delay_us, processing_us: 0.0, jitter_floor_us: 1.0 }
    }

    /// The exponential scale the adversary uses: `max(μ, jitter_floor_us, 1e-3)`.
    pub fn scale_us(&self) -> f64 {
        self.mean_delay_us.max(self.jitter_floor_us).max(1e-3)
    }

    /// Log-likelihood, up to a constant, that a packet departed `lag_us` after it arrived:
    /// `−(lag − p)/scale` when `lag ≥ p`; an order the model calls impossible (`lag < p`) gets
    /// an extra `−IMPOSSIBLE_PENALTY` (≈ e⁻⁴⁰ relative mass) instead of exactly zero, so a
    /// slightly wrong processing estimate cannot make the posterior empty.
    pub fn log_likelihood(&self, lag_us: f64) -> f64 {
        let excess = lag_us - self.processing_us;
        if excess >= 0.0 { -excess / self.scale_us() } else { excess / self.scale_us() - IMPOSSIBLE_PENALTY }
    }
}

/// Extra negative log-likelihood of a departure faster than the processing time.
pub const IMPOSSIBLE_PENALTY: f64 = 40.0;
