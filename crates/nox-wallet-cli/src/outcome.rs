//! A private transaction's plan (what it makes, before the fee is known), why it stopped
//! ([`Stop`]), and the report of one that landed.

use std::time::Instant;

use alloy::primitives::{Address, B256};
use nox_wallet::{PaymentAddress, WalletError, units::Unit};

use crate::{CliError, RunError};

/// What a private transaction makes, before the fee is known.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The asset (and the fee's).
    pub asset: Address,
    /// Shielded outputs besides the change.
    pub outputs: Vec<(PaymentAddress, u128)>,
    /// A join: the wallet's two smallest spendable notes become one, less the fee.
    pub join: bool,
    /// Value leaving the pool to `recipient`.
    pub public_out: u128,
    /// Its receiver (`Address::ZERO` iff `public_out` is 0).
    pub recipient: Address,
    /// What it does, for the confirmation and the report.
    pub what: String,
}

impl Plan {
    /// What a re-run of the same command has in common with this one (the journal's key).
    pub fn intent(&self) -> String {
        let outputs: Vec<String> = self.outputs.iter().map(|(to, v)| format!("{v} to {to}")).collect();
        format!(
            "private transaction: asset {}, outputs [{}], join {}, {} out to {}",
            self.asset,
            outputs.join(", "),
            self.join,
            self.public_out,
            self.recipient
        )
    }

    /// A join of two of this wallet's notes of `asset`.
    pub fn join(asset: Address) -> Plan {
        Plan {
            asset,
            outputs: Vec::new(),
            join: true,
            public_out: 0,
            recipient: Address::ZERO,
            what: "joining two of this wallet's notes into one".into(),
        }
    }
}

/// Why a private transaction did not land.
#[derive(Debug)]
pub enum Stop {
    /// The balance covers it but no two notes do: join first.
    NeedsJoin(String),
    /// Anything else (nothing was sent, or the message says what was).
    Failed(String),
    /// An earlier run of the same command lost its answer, and its transaction has landed
    /// since (the journal): nothing was sent again.
    Already {
        /// The earlier transaction.
        tx_hash: B256,
        /// Its block.
        block: u64,
    },
}

impl From<String> for Stop {
    fn from(e: String) -> Self {
        Stop::Failed(e)
    }
}

impl From<&str> for Stop {
    fn from(e: &str) -> Self {
        Stop::Failed(e.to_owned())
    }
}

impl From<CliError> for Stop {
    fn from(e: CliError) -> Self {
        Stop::Failed(e.to_string())
    }
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        Stop::Failed(e.to_string())
    }
}

impl Stop {
    /// A wallet error, with `NeedsJoin` kept apart.
    pub fn wallet(e: WalletError) -> Self {
        match e {
            e @ WalletError::NeedsJoin { .. } => Stop::NeedsJoin(e.to_string()),
            e => Stop::Failed(e.to_string()),
        }
    }

    /// The message (of a stop reported as an error).
    pub fn message(self) -> String {
        match self {
            Stop::NeedsJoin(m) | Stop::Failed(m) => m,
            Stop::Already { tx_hash, block } => already_line(tx_hash, block),
        }
    }

    /// The command's result: `Already` is a success (reported), the rest an error.
    pub fn finish(r: Result<(), Stop>) -> Result<(), RunError> {
        match r {
            Ok(()) => Ok(()),
            Err(Stop::Already { tx_hash, block }) => {
                already(tx_hash, block);
                Ok(())
            }
            Err(Stop::NeedsJoin(why)) => Err(RunError::NeedsJoin(why)),
            Err(Stop::Failed(e)) => Err(RunError::Stopped(e)),
        }
    }
}

/// The error of a command the user did not confirm on the terminal.
pub const NOT_CONFIRMED: &str = "not confirmed; nothing was proved, spent or sent";

/// The line of a re-run that found its transaction already landed.
pub fn already_line(tx_hash: B256, block: u64) -> String {
    format!("already submitted as {tx_hash}; mined in block {block}; nothing was sent again")
}

/// Prints [`already_line`].
pub fn already(tx_hash: B256, block: u64) {
    println!("{}", already_line(tx_hash, block));
}

/// What a landed private transaction did.
pub struct Landed {
    /// Its transaction hash.
    pub tx_hash: B256,
    /// Its block.
    pub block: u64,
    /// Gas used by the whole transaction (a bundle's: payment and action).
    pub gas_used: u64,
    /// The relayer's fee (0 direct).
    pub fee: u128,
    /// The two notes it made.
    pub outputs: [nox_wallet::PreparedOutput; 2],
    /// The values of the notes it spent.
    pub spent: Vec<u128>,
}

/// The report of a landed transaction, `elapsed_s` after it started: every note it spent and
/// made, the fee, the gas and the time.
pub fn report_lines(landed: &Landed, unit: &Unit, elapsed_s: f64) -> Vec<String> {
    let mut lines = vec![format!(
        "included in block {} (tx {}); gas {}; fee {}; {:.1} s",
        landed.block,
        landed.tx_hash,
        landed.gas_used,
        unit.show(landed.fee),
        elapsed_s
    )];
    let spent: Vec<String> = landed.spent.iter().map(|v| unit.show(*v)).collect();
    lines.push(format!("spent note(s): {}", if spent.is_empty() { "none".to_owned() } else { spent.join(", ") }));
    for o in &landed.outputs {
        use nox_wallet::OutputRole;
        lines.push(match o.role {
            OutputRole::Requested => format!("new note: {} to {}", unit.show(o.value), o.to),
            OutputRole::Change => format!("change note: {} to this wallet", unit.show(o.value)),
            OutputRole::Padding => "padding note: 0 to this wallet (every transaction makes two notes)".to_owned(),
        });
    }
    lines.push("new notes are spendable once a relayer inserts their batch".to_owned());
    lines
}

/// Prints [`report_lines`] on stdout.
pub fn report(landed: &Landed, unit: &Unit, started: Instant) {
    for line in report_lines(landed, unit, started.elapsed().as_secs_f64()) {
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enough_in_all_but_not_in_two_notes_says_join_and_how() {
        let e = nox_wallet::WalletError::NeedsJoin { total: 670, largest_pair: 450, needed: 500 };
        let Err(error) = Stop::finish(Err(Stop::wallet(e))) else { panic!("a needed join is an error") };
        let message = error.to_string();
        assert!(message.contains("your notes must be joined first (`nox wallet join`)"), "{message}");
        assert!(message.contains("670 spendable in all") && message.contains("500 is needed"), "{message}");
    }

    #[test]
    fn an_already_landed_transaction_is_a_success_and_other_stops_are_errors() {
        let hash = B256::repeat_byte(0xab);
        assert!(Stop::finish(Err(Stop::Already { tx_hash: hash, block: 7 })).is_ok());
        assert_eq!(Stop::finish(Err("refused".into())).map_err(|e| e.to_string()), Err("refused".to_owned()));
        assert_eq!(
            Stop::Already { tx_hash: hash, block: 7 }.message(),
            format!("already submitted as {hash}; mined in block 7; nothing was sent again")
        );
        assert!(matches!(Stop::wallet(WalletError::BadFile("x")), Stop::Failed(_)));
    }

    #[test]
    fn the_intent_names_every_output_and_the_public_part() {
        let mut plan = Plan::join(Address::ZERO);
        assert_eq!(
            plan.intent(),
            format!("private transaction: asset {0}, outputs [], join true, 0 out to {0}", Address::ZERO)
        );
        plan.join = false;
        plan.public_out = 5;
        plan.recipient = Address::repeat_byte(1);
        let other = Plan { public_out: 6, ..plan.clone() };
        assert_ne!(plan.intent(), other.intent(), "a different amount is a different transaction");
        assert!(plan.intent().ends_with(&format!("join false, 5 out to {}", Address::repeat_byte(1))));
    }
}
