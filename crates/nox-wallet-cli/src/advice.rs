//! The privacy advice before a withdrawal (docs/design/pool-anonymity.md §5): what links it to
//! this wallet's deposits (a matching amount, a withdrawal soon after), from the pool's deposits
//! and their block times recorded during the sync. The user decides: the advice never stops the
//! command.

use alloy::primitives::Address;
use nox_wallet::{
    PoolView,
    privacy::{self, PrivacyWarning},
    units::{Unit, format_units},
};

/// The command a withdrawal's privacy advice is printed for: its split names that command with
/// amounts as that command reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WithdrawCommand {
    /// `nox wallet withdraw --amount` (the asset's unit, decimals).
    Wallet,
    /// `nox tx withdraw --amount` (wei).
    Tx,
}

impl WithdrawCommand {
    /// The advice's line with the 1-2-5 split `suggested`, one command each.
    pub fn split_advice(self, suggested: &[u128], unit: &Unit) -> String {
        let (command, steps): (&str, Vec<String>) = match self {
            WithdrawCommand::Wallet => (
                "nox wallet withdraw",
                suggested.iter().map(|v| format!("--amount {}", format_units(*v, unit.decimals))).collect(),
            ),
            WithdrawCommand::Tx => ("nox tx withdraw", suggested.iter().map(|v| format!("--amount {v}")).collect()),
        };
        format!("PRIVACY: the split, one `{command}` each, best at different times: {}", steps.join(", then "))
    }
}

/// The advice's lines (for stderr) before withdrawing `amount` of `asset` at chain time `now`
/// from the synced `view`; none when nothing links it.
pub fn privacy_lines(
    view: &PoolView,
    now: u64,
    asset: Address,
    amount: u128,
    unit: &Unit,
    command: WithdrawCommand,
) -> Vec<String> {
    let asset = crate::session::asset_word(asset);
    let (own, pool) = privacy::deposit_history(view, &asset);
    // The fee of a paid withdrawal is not known yet: within the advice's tolerance anyway.
    let plan = privacy::WithdrawalPlan { time_s: now, public_out: amount, fee: 0 };
    let warnings = privacy::advise_withdrawal(&plan, &own, &pool, &privacy::AdvicePolicy::default());
    let mut lines = Vec::new();
    for w in &warnings {
        lines.push(format!("PRIVACY: {}", w.describe(|v| unit.show(v))));
        if let PrivacyWarning::MatchesOwnDeposit { suggested, .. } = w {
            lines.push(command.split_advice(suggested, unit));
        }
    }
    if view.deposits_from_block() > 0 && !warnings.is_empty() {
        lines.push(format!(
            "PRIVACY: (this wallet's deposit history starts at block {}: delete wallet.state and resync for all of it)",
            view.deposits_from_block()
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_advice_names_each_withdraw_command_in_its_own_amounts() {
        let split = [100_000_000_000_000_000, 20_000_000_000_000_000];
        assert_eq!(
            WithdrawCommand::Wallet.split_advice(&split, &Unit::eth()),
            "PRIVACY: the split, one `nox wallet withdraw` each, best at different times: --amount 0.1, then --amount \
             0.02"
        );
        assert_eq!(
            WithdrawCommand::Tx.split_advice(&split, &Unit::eth()),
            "PRIVACY: the split, one `nox tx withdraw` each, best at different times: --amount 100000000000000000, \
             then --amount 20000000000000000"
        );
    }

    #[test]
    fn an_empty_pool_gives_no_advice() {
        let view = PoolView::new();
        assert!(privacy_lines(&view, 1_000, Address::ZERO, 5, &Unit::eth(), WithdrawCommand::Wallet).is_empty());
    }
}
