//! Compromised nodes: how often a path is fully (or at both ends) in the adversary's hands.
//!
//! Adversary: controls a set of nodes and links the packets that cross only its nodes (full
//! path) or that it sees at entry and exit (end-to-end timing confirmation). Clients pick one
//! node per layer uniformly, so for a fixed compromised set the exact full-path rate is
//! `Π_l c_l / W_l` (`c_l` of the `W_l` nodes of layer `l` compromised). The naive `f^L`, with
//! `f` the overall compromised fraction, is exact only when every layer holds the same share.

use rand_core::RngCore;
use serde::Serialize;

use crate::random::index;
use crate::{AnonymityError, Topology};

/// How the compromised nodes are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum CompromiseModel {
    /// `round(f · W_l)` nodes of every layer.
    PerLayer {
        /// Fraction per layer.
        fraction: f64,
    },
    /// `round(f · total)` nodes uniformly from the whole network, whatever their layer.
    Uniform {
        /// Overall fraction.
        fraction: f64,
    },
}

/// Measured and analytic compromise rates for one compromised set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompromiseReport {
    /// The model used.
    pub model: CompromiseModel,
    /// Nodes in the topology.
    pub total_nodes: usize,
    /// Compromised nodes per layer.
    pub compromised_per_layer: Vec<usize>,
    /// `f`: compromised nodes / total nodes.
    pub fraction: f64,
    /// Paths sampled.
    pub sampled_paths: usize,
    /// Sampled fraction of paths with every hop compromised.
    pub measured_full_path_rate: f64,
    /// Binomial standard error of the measured rate (computed from the exact rate).
    pub standard_error: f64,
    /// `Π_l c_l / W_l`.
    pub exact_layered_rate: f64,
    /// `f^L`.
    pub naive_rate: f64,
    /// Sampled fraction with entry and exit compromised (timing confirmation).
    pub measured_entry_and_exit_rate: f64,
    /// `(c_1/W_1)(c_L/W_L)`.
    pub exact_entry_and_exit_rate: f64,
    /// Sampled fraction with at least one compromised hop (partial observation).
    pub measured_any_rate: f64,
}

/// Draws a compromised set under `model`, samples `paths` uniform paths and compares.
pub fn compromised_paths<R: RngCore + ?Sized>(
    topology: &Topology,
    model: CompromiseModel,
    paths: usize,
    rng: &mut R,
) -> Result<CompromiseReport, AnonymityError> {
    let layers = &topology.layers;
    if layers.is_empty() || layers.iter().any(Vec::is_empty) || paths == 0 {
        return Err(AnonymityError::InvalidParameter("need non-empty layers and paths ≥ 1"));
    }
    let (CompromiseModel::PerLayer { fraction } | CompromiseModel::Uniform { fraction }) = model;
    if !(0.0..=1.0).contains(&fraction) {
        return Err(AnonymityError::InvalidParameter("fraction must be in [0, 1]"));
    }
    // compromised[l][i]: whether node i of layer l is compromised.
    let mut compromised: Vec<Vec<bool>> = layers.iter().map(|l| vec![false; l.len()]).collect();
    let slots: Vec<(usize, usize)> =
        (0..layers.len()).flat_map(|l| (0..layers[l].len()).map(move |i| (l, i))).collect();
    match model {
        CompromiseModel::PerLayer { .. } => {
            for (l, layer) in layers.iter().enumerate() {
                let k = (fraction * layer.len() as f64).round() as usize;
                let mut order: Vec<usize> = (0..layer.len()).collect();
                for i in choose(&mut order, k, rng) {
                    compromised[l][i] = true;
                }
            }
        }
        CompromiseModel::Uniform { .. } => {
            let k = (fraction * slots.len() as f64).round() as usize;
            let mut order: Vec<usize> = (0..slots.len()).collect();
            for s in choose(&mut order, k, rng) {
                let (l, i) = slots[s];
                compromised[l][i] = true;
            }
        }
    }
    let per_layer: Vec<usize> = compromised.iter().map(|l| l.iter().filter(|&&c| c).count()).collect();
    let share = |l: usize| per_layer[l] as f64 / layers[l].len() as f64;
    let exact: f64 = (0..layers.len()).map(share).product();
    let last = layers.len() - 1;
    let (mut full, mut ends, mut any) = (0usize, 0usize, 0usize);
    for _ in 0..paths {
        let hops: Vec<bool> = compromised.iter().map(|layer| layer[index(rng, layer.len())]).collect();
        full += usize::from(hops.iter().all(|&h| h));
        ends += usize::from(hops[0] && hops[last]);
        any += usize::from(hops.iter().any(|&h| h));
    }
    let n = paths as f64;
    let total_nodes = slots.len();
    let f = per_layer.iter().sum::<usize>() as f64 / total_nodes as f64;
    let exact_entry_and_exit_rate = share(0) * share(last);
    Ok(CompromiseReport {
        model,
        total_nodes,
        compromised_per_layer: per_layer,
        fraction: f,
        sampled_paths: paths,
        measured_full_path_rate: full as f64 / n,
        standard_error: (exact * (1.0 - exact) / n).sqrt(),
        exact_layered_rate: exact,
        naive_rate: f.powi(layers.len() as i32),
        measured_entry_and_exit_rate: ends as f64 / n,
        exact_entry_and_exit_rate,
        measured_any_rate: any as f64 / n,
    })
}

/// The first `k` entries of a partial Fisher–Yates shuffle of `order`.
fn choose<R: RngCore + ?Sized>(order: &mut [usize], k: usize, rng: &mut R) -> Vec<usize> {
    let k = k.min(order.len());
    for i in 0..k {
        let j = i + index(rng, order.len() - i);
        order.swap(i, j);
    }
    order[..k].to_vec()
}
