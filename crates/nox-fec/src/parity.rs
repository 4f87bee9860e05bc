//! Choosing the parity count from a loss estimate and a SURB budget, using
//! Theorem 1 of the NOX paper (§4.5).

use serde::{Deserialize, Serialize};

use crate::error::PlanningError;
use crate::layout::{Layout, MAX_TOTAL_SHARDS, data_shards_for};

/// Theorem 1: the probability that at least d of d + p shards arrive when each
/// is lost independently with probability `loss`,
/// `sum_{k=0..=p} C(d+p, k) loss^k (1-loss)^(d+p-k)`.
///
/// `loss` is clamped to `[0, 1]`; NaN gives NaN. Terms are summed in log
/// space, so large counts neither overflow nor underflow to a wrong sum.
pub fn recovery_probability(data_shards: usize, parity_shards: usize, loss: f64) -> f64 {
    if loss.is_nan() {
        return f64::NAN;
    }
    let loss = loss.clamp(0.0, 1.0);
    let total = data_shards.saturating_add(parity_shards);
    if parity_shards >= total {
        return 1.0;
    }
    if loss == 0.0 {
        return 1.0;
    }
    if loss == 1.0 {
        return 0.0;
    }
    let (ln_loss, ln_keep) = (loss.ln(), (1.0 - loss).ln());
    let n = total as f64;
    let mut ln_choose = 0.0f64; // ln C(n, 0)
    let mut sum = 0.0f64;
    for k in 0..=parity_shards {
        let kf = k as f64;
        if k > 0 {
            ln_choose += ((n - kf + 1.0) / kf).ln();
        }
        sum += (ln_choose + kf * ln_loss + (n - kf) * ln_keep).exp();
    }
    sum.clamp(0.0, 1.0)
}

/// Probability that all d shards arrive when nothing is coded: `(1-loss)^d`.
pub fn delivery_without_fec(data_shards: usize, loss: f64) -> f64 {
    let exponent = i32::try_from(data_shards).unwrap_or(i32::MAX);
    (1.0 - loss.clamp(0.0, 1.0)).powi(exponent)
}

/// A parity count and its predicted delivery probability.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParityChoice {
    /// Data shards d.
    pub data_shards: usize,
    /// Parity shards p.
    pub parity_shards: usize,
    /// Theorem 1 for (d, p) at the given loss.
    pub delivery_probability: f64,
}

impl ParityChoice {
    /// d + p: the SURBs (packets) this choice uses.
    pub fn total_shards(&self) -> usize {
        self.data_shards + self.parity_shards
    }
}

fn check_probability(name: &'static str, value: f64) -> Result<f64, PlanningError> {
    if (0.0..=1.0).contains(&value) { Ok(value) } else { Err(PlanningError::InvalidProbability { name, value }) }
}

/// The smallest p such that d data shards and p parity shards are delivered
/// with probability at least `target` under independent loss `loss`, with
/// d + p at most `surb_budget` and at most 255.
///
/// If no allowed p reaches the target, returns
/// [`PlanningError::TargetUnreachable`] carrying the largest allowed p and its
/// probability: the caller decides whether to send anyway.
pub fn choose_parity(
    data_shards: usize,
    surb_budget: usize,
    loss: f64,
    target: f64,
) -> Result<ParityChoice, PlanningError> {
    let loss = check_probability("loss", loss)?;
    let target = check_probability("target", target)?;
    if data_shards == 0 {
        return Err(crate::LayoutError::NoDataShards.into());
    }
    if surb_budget < data_shards {
        return Err(PlanningError::BudgetBelowDataShards { data_shards, surb_budget });
    }
    if data_shards > MAX_TOTAL_SHARDS {
        return Err(crate::LayoutError::TooManyShards { data: data_shards, parity: 0 }.into());
    }
    let max_parity = surb_budget.min(MAX_TOTAL_SHARDS) - data_shards;
    let mut best = ParityChoice { data_shards, parity_shards: 0, delivery_probability: 0.0 };
    for parity_shards in 0..=max_parity {
        let delivery_probability = recovery_probability(data_shards, parity_shards, loss);
        best = ParityChoice { data_shards, parity_shards, delivery_probability };
        if delivery_probability >= target {
            return Ok(best);
        }
    }
    Err(PlanningError::TargetUnreachable { target, best })
}

/// A reply layout planned by the exit: the fewest data shards for the reply,
/// and the parity from [`choose_parity`] within the SURBs it holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplyPlan {
    /// The layout to encode with.
    pub layout: Layout,
    /// Predicted delivery probability of that layout.
    pub delivery_probability: f64,
}

/// Plans a reply of `reply_len` bytes for an exit holding `surb_budget` SURBs.
/// On [`PlanningError::TargetUnreachable`] the caller may still build
/// `Layout::new(reply_len, best.data_shards, best.parity_shards)`.
pub fn plan_reply(
    reply_len: usize,
    max_fragment_len: usize,
    surb_budget: usize,
    loss: f64,
    target: f64,
) -> Result<ReplyPlan, PlanningError> {
    let data_shards = data_shards_for(reply_len, max_fragment_len)?;
    let choice = choose_parity(data_shards, surb_budget, loss, target)?;
    let layout = Layout::new(reply_len, choice.data_shards, choice.parity_shards)?;
    Ok(ReplyPlan { layout, delivery_probability: choice.delivery_probability })
}

/// For a client: how many SURBs to attach to a request whose reply is
/// expected to be `expected_reply_len` bytes, so that the reply meets
/// `target` at loss `loss`, attaching at most `max_surbs`. The SURB count is
/// [`ParityChoice::total_shards`].
pub fn surbs_for_reply(
    expected_reply_len: usize,
    max_fragment_len: usize,
    loss: f64,
    target: f64,
    max_surbs: usize,
) -> Result<ParityChoice, PlanningError> {
    let data_shards = data_shards_for(expected_reply_len, max_fragment_len)?;
    choose_parity(data_shards, max_surbs, loss, target)
}
