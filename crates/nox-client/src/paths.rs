//! Choosing hops from the topology. Every choice is uniform among the
//! layer's nodes that list a Sphinx key for the epoch, are not avoided and,
//! where the layer has any other, are not degraded (loop-cover health).

use std::collections::BTreeSet;

use nox_sphinx::{Delay, NodeId, PathHop};
use nox_topology::{Layer, VerifiedTopology};
use rand_core::{CryptoRng, RngCore};

use crate::error::ClientError;

/// Uniform index below `n` (> 0) without modulo bias.
pub(crate) fn uniform<R: RngCore + ?Sized>(rng: &mut R, n: usize) -> usize {
    let n = n as u64;
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let v = rng.next_u64();
        if v < zone {
            return (v % n) as usize;
        }
    }
}

/// The hop for node `id` in `epoch`, if it lists a key.
pub(crate) fn hop_of(topology: &VerifiedTopology, id: &NodeId, epoch: u32) -> Option<PathHop> {
    let node = topology.node(id)?;
    let public_key = node.descriptor.sphinx_key(epoch)?;
    Some(PathHop { node: *id, public_key, delay: Delay(0), pow_difficulty: node.descriptor.pow_difficulty })
}

/// Nodes a path choice leaves out: `avoid` always (configured), `degraded`
/// unless that would leave a layer empty (a client whose probes all fail,
/// e.g. while offline, must not lock itself out).
#[derive(Clone, Copy)]
pub(crate) struct Exclude<'a> {
    pub(crate) avoid: &'a BTreeSet<NodeId>,
    pub(crate) degraded: &'a BTreeSet<NodeId>,
}

/// A uniform random usable hop of `layer`.
pub(crate) fn random_hop<R: RngCore + CryptoRng>(
    topology: &VerifiedTopology,
    layer: Layer,
    epoch: u32,
    exclude: Exclude<'_>,
    rng: &mut R,
) -> Result<PathHop, ClientError> {
    let mut candidates: Vec<PathHop> = topology
        .nodes_in_layer(layer)
        .filter(|n| !exclude.avoid.contains(&n.id))
        .filter_map(|n| hop_of(topology, &n.id, epoch))
        .collect();
    if candidates.iter().any(|h| !exclude.degraded.contains(&h.node)) {
        candidates.retain(|h| !exclude.degraded.contains(&h.node));
    }
    if candidates.is_empty() {
        return Err(ClientError::NoRoute(format!("no usable node in layer {} for epoch {epoch}", layer.0)));
    }
    let index = uniform(rng, candidates.len());
    Ok(candidates.swap_remove(index))
}

/// The last layer (exits and reply gateways).
pub(crate) fn last_layer(topology: &VerifiedTopology) -> Layer {
    topology.layers().exit()
}

/// A path through layers 0 … L−2 chosen at random, ending at `last`.
pub(crate) fn path_ending_at<R: RngCore + CryptoRng>(
    topology: &VerifiedTopology,
    epoch: u32,
    exclude: Exclude<'_>,
    last: PathHop,
    rng: &mut R,
) -> Result<Vec<PathHop>, ClientError> {
    let exit = last_layer(topology);
    let mut path = Vec::with_capacity(usize::from(topology.layers().get()));
    for layer in topology.layers().iter().filter(|l| *l != exit) {
        path.push(random_hop(topology, layer, epoch, exclude, rng)?);
    }
    path.push(last);
    Ok(path)
}

/// The reply gateway to use with a new topology: `None` to keep `current`
/// (listed with a key for `epoch`, not avoided), or a fresh uniform
/// last-layer node. Whether a degraded gateway is left is loop health's
/// decision, with its patience (`crate::gateways::GatewayPatience`), not the
/// topology's: a new document must not cut that patience short.
pub(crate) fn keep_or_pick_gateway<R: RngCore + CryptoRng>(
    topology: &VerifiedTopology,
    current: &NodeId,
    exclude: Exclude<'_>,
    epoch: u32,
    rng: &mut R,
) -> Result<Option<NodeId>, ClientError> {
    if !exclude.avoid.contains(current) && hop_of(topology, current, epoch).is_some() {
        return Ok(None);
    }
    Ok(Some(random_hop(topology, last_layer(topology), epoch, exclude, rng)?.node))
}
