//! Relayer economics from the measured gas, over a grid of ETH and gas prices, with the
//! relayer's own pricing rule.

use super::*;

/// Relayer economics from measured gas, with the relayer's pricing rule: the least fee it
/// accepts is `(1 + margin) × gas_limit × max_fee`, with `gas_limit = (gas + ⌈64·action_gas/63⌉)
/// × (1 + extra) + 10,000` (`price::gas_limit`; here the whole measured gas stands for the
/// payment part and the action's bound gas for 0, which understates the limit by action_gas/63)
/// and `max_fee = next base fee × (1 + headroom) + tip`; it then pays `gas × (base fee
/// + tip)`.
pub(super) fn economics(ops: &[(&str, f64)]) -> Value {
    let policy = nox_relayer::Policy::default();
    let tip_gwei = policy.priority_fee_wei as f64 / 1e9;
    let headroom = policy.base_fee_headroom_bps as f64 / 10_000.0;
    let margin = policy.margin_bps as f64 / 10_000.0;
    let client = f64::from(nox_pay::DEFAULT_FEE_PERCENT) / 100.0;
    let costs_per_month = [50.0, 300.0];
    let mut grid = Vec::new();
    for (op, gas) in ops {
        let gas_limit = nox_relayer::price::gas_limit(*gas as u64, 0, policy.gas_extra_bps) as f64;
        for eth_usd in [2_000.0, 3_000.0, 5_000.0] {
            for gas_gwei in [1.0, 10.0, 50.0] {
                let base = (gas_gwei - tip_gwei).max(0.0);
                let paid_gwei = base + tip_gwei;
                let max_fee = base * (1.0 + headroom) + tip_gwei;
                let cost = gas * paid_gwei * 1e-9;
                let min_fee = (1.0 + margin) * gas_limit * max_fee * 1e-9;
                let default_fee = client * min_fee;
                let profit_min = (min_fee - cost) * eth_usd;
                let profit_default = (default_fee - cost) * eth_usd;
                grid.push(json!({
                    "operation": op, "gas_used": gas, "gas_limit": gas_limit, "eth_usd": eth_usd, "gas_gwei": paid_gwei,
                    "gas_cost_usd": round3(cost * eth_usd),
                    "least_fee_usd": round3(min_fee * eth_usd), "default_fee_usd": round3(default_fee * eth_usd),
                    "profit_per_tx_usd_at_least_fee": round3(profit_min),
                    "profit_per_tx_usd_at_default_fee": round3(profit_default),
                    "realised_margin_at_least_fee": round3(min_fee / cost - 1.0),
                    "break_even_tx_per_day": costs_per_month.iter().map(|m| round3(m / 30.0 / profit_min)).collect::<Vec<_>>(),
                    "monthly_profit_usd_100_tx_per_day_at_least_fee": round3(profit_min * 100.0 * 30.0),
                }));
            }
        }
    }
    json!({
        "grid": grid,
        "assumptions": {
            "gas": "the medians measured in this run (whole bundle, as the relayer pays it)",
            "gas_price": format!("gas price = base fee + the relayer's tip ({tip_gwei} gwei); the base fee stays put between quote and inclusion"),
            "least_fee": format!("(1 + {margin}) × gas_limit × max_fee: the relayer's own rule (margin at the max fee it sets, max fee = base × {} + tip, gas limit = gas × 64/63 × {} + 10,000)", 1.0 + headroom, 1.0 + policy.gas_extra_bps as f64 / 10_000.0),
            "default_fee": format!("{} % of the quote (nox tx's default)", nox_pay::DEFAULT_FEE_PERCENT),
            "infrastructure": "break-even at $50/month (a VPS and a hosted RPC's free tier, as the report) and $300/month (with an own full node); the relayer's ETH float and its price risk are not counted",
        },
    })
}
