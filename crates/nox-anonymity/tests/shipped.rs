//! The simulator's copies of shipped client settings equal the settings the client ships.
//!
//! nox-anonymity is pure and does not depend on the client's crates, so the mobile profile's rate
//! is written here as a constant; this test fails if either side changes without the other.

use nox_anonymity::activity::MOBILE_DEFAULT_RATE_PER_S;

#[test]
fn mobile_rate_is_the_shipped_budget_at_the_shipped_packet_length() {
    let budget = nox_cover::MOBILE_DEFAULT_BUDGET as f64;
    let packet = nox_sphinx::DEFAULT_PACKET_LEN as f64;
    let shipped = budget / packet / 86_400.0;
    let relative = (MOBILE_DEFAULT_RATE_PER_S - shipped).abs() / shipped;
    assert!(relative < 1e-12, "simulator {MOBILE_DEFAULT_RATE_PER_S} packets/s, client ships {shipped} packets/s");
}
