//! The link-level simulator's calibration against the testnet (issue 32), shared by `nox bench
//! cover` (measured and simulated side by side) and `nox bench anonymity-scale` (the simulation
//! alone, at the scale no testnet reaches): the traffic the shipped crates add besides the
//! clients' requests, and the adversary's delay model both are scored with.

use nox_anonymity::DelayModel;
use nox_anonymity::activity::SubstitutionConfig;
use nox_client::ClientConfig;
use nox_testnet::Layout;

use super::{BenchError, err};

/// The processing floor of the adversary's delay model, µs: what a node takes without mixing
/// (the floor `nox bench anonymity` measures and uses; a global observer calibrates it with its
/// own packets).
pub const PROCESSING_FLOOR_US: f64 = 300.0;
/// Bytes of an echo request body (`nox bench cover`'s and `profiles`' requests, the replies the
/// simulator counts).
pub const ECHO_BYTES: usize = 64;

/// The traffic the testnet carries besides the clients' requests and drop cover, as the shipped
/// crates set it, for the link-level simulator (issue 32's calibration): the client's share of
/// loop cover (`ClientConfig::default().loop_fraction`), the SURB reply packets per request and
/// per loop (`nox_message::surbs_needed` for an echo reply of `2 × ECHO_BYTES` at the client's
/// loss and target, on `layout`'s geometry; the exit sends one fragment per SURB up to its own
/// target, 0.999 ≥ the client's 0.99), and the nodes' loop and drop cover (`layout`'s
/// λ_L, λ_D, the node's `[cover]` defaults unless set). The testnet capture does not log the
/// exit's emission of a reply (it bypasses the logged egress), so neither does the simulation.
pub fn shipped_traffic(config: SubstitutionConfig, layout: &Layout) -> Result<SubstitutionConfig, BenchError> {
    let client = ClientConfig::default();
    let geometry =
        nox_sphinx::Geometry::with_scheme(layout.packet_len.bytes(), usize::from(layout.layers), layout.geometry)
            .map_err(err)?;
    let replies = nox_message::surbs_needed(&geometry, 2 * ECHO_BYTES, client.loss, client.target).map_err(err)?;
    Ok(SubstitutionConfig {
        loop_fraction: client.loop_fraction,
        reply_packets: u32::try_from(replies).map_err(err)?,
        reply_first_hop_observed: false,
        node_loop_rate_per_s: layout.loop_rate,
        node_drop_rate_per_s: layout.drop_rate,
        ..config
    })
}

/// The adversary's delay model of the testnet scoring (`nox bench cover`'s scoring): Exp(μ) with the processing
/// floor as its scale floor. The simulated runs are scored with the same model, so simulated and
/// measured differ only in the traffic, not in the observer.
pub fn testnet_model(mu_ms: f64) -> DelayModel {
    DelayModel { mean_delay_us: mu_ms * 1e3, processing_us: 0.0, jitter_floor_us: PROCESSING_FLOOR_US }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulator_gets_the_shipped_loops_replies_and_node_cover() {
        // Issue 32: the calibrated simulator runs the traffic the testnet's clients and nodes
        // send, read from their crates (a change there moves the simulation with it).
        let layout = Layout::default();
        let bare = SubstitutionConfig::default();
        let c = shipped_traffic(bare, &layout).unwrap();
        assert_eq!(c.loop_fraction, ClientConfig::default().loop_fraction);
        assert!(c.loop_fraction > 0.0);
        // A small echo reply: one data shard and one parity at loss 0.05, target 0.99.
        assert_eq!(c.reply_packets, 2);
        assert!(!c.reply_first_hop_observed, "the capture does not log the exit's reply emission");
        assert_eq!((c.node_loop_rate_per_s, c.node_drop_rate_per_s), (layout.loop_rate, layout.drop_rate));
        assert_eq!((c.clients, c.mean_delay_us), (bare.clients, bare.mean_delay_us), "the rest is kept");
        // Simulated and measured rows are scored with one delay model.
        assert_eq!(testnet_model(50.0).processing_us, 0.0);
        assert_eq!(testnet_model(50.0).jitter_floor_us, PROCESSING_FLOOR_US);
    }
}
