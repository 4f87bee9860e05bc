//! The bundle file `nox wallet pay` writes (issue 34: moved out of the command): what a relayer
//! needs to submit a payment (and its action) with `BatchExecutor.execute(bundle)`.

use alloy::primitives::{Address, B256, Bytes, U256};

/// The bundle a relayer submits: `BatchExecutor.execute(bundle)` from the `relayer` account.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct BundleFile {
    /// Chain id.
    pub chain_id: u64,
    /// The BatchExecutor.
    pub executor: Address,
    /// The payment plugin (the pool).
    pub payment: Address,
    /// `abi.encode(Transaction)`.
    pub payment_data: Bytes,
    /// The fee.
    pub fee: U256,
    /// The fee's asset (zero address: ETH).
    pub asset: Address,
    /// The only account whose submission the payment pays.
    pub relayer: Address,
    /// The action (zero: none).
    pub target: Address,
    /// The action's calldata.
    pub data: Bytes,
    /// The gas the executor forwards to the action (`Action.gas`).
    pub gas: u64,
    /// The raw execution hash `keccak256(target ‖ data ‖ fee ‖ gas)`.
    pub action_hash: B256,
    /// The transaction's two nullifiers (the exit refuses a bundle whose nullifier is spent).
    pub nullifiers: [U256; 2],
    /// Unix second after which the payment is refused.
    pub deadline: u64,
}

impl BundleFile {
    /// The file for `paid`, the proved `payment`: its payee's chain, executor, relayer and pool,
    /// its asset, fee, action (and the action's execution hash) and deadline, and the proved
    /// transaction's calldata and nullifiers.
    pub fn of(payment: &nox_pay::Payment<'_>, paid: &nox_pay::PaidBundle) -> Self {
        let action = &payment.action;
        BundleFile {
            chain_id: payment.payee.chain_id,
            executor: payment.payee.executor,
            payment: payment.payee.pool,
            payment_data: paid.submission.bundle.paymentData.clone(),
            fee: U256::from(payment.fee),
            asset: payment.asset,
            relayer: payment.payee.relayer,
            target: action.target,
            data: action.data.clone(),
            gas: action.gas,
            action_hash: B256::from(action.execution_hash(payment.fee)),
            nullifiers: paid.nullifiers,
            deadline: payment.deadline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nox_relayer::abi;
    use nox_wallet::{OutputRole, PreparedOutput, Seed};
    use rand_core_06::SeedableRng;

    fn paid(payment_data: &[u8], nullifiers: [U256; 2]) -> nox_pay::PaidBundle {
        let mut rng = rand_chacha_03::ChaCha20Rng::seed_from_u64(7);
        let to = Seed::random(&mut rng).address().expect("address");
        let output = |value, role| PreparedOutput { to, value, role, commitment: Default::default() };
        nox_pay::PaidBundle {
            submission: nox_relayer::Submission {
                pay_on_revert: false,
                simulate_only: false,
                chain_id: 0,
                executor: Address::ZERO,
                relayer: Address::ZERO,
                bundle: abi::Bundle {
                    payment: Address::ZERO,
                    paymentData: Bytes::copy_from_slice(payment_data),
                    asset: Address::ZERO,
                    fee: U256::ZERO,
                    action: abi::Action {
                        target: Address::ZERO,
                        value: U256::ZERO,
                        gas: U256::ZERO,
                        data: Bytes::new(),
                    },
                },
                calldata: Vec::new(),
            },
            nullifiers,
            inputs: Vec::new(),
            outputs: [output(5, OutputRole::Change), output(0, OutputRole::Padding)],
            change: 5,
        }
    }

    #[test]
    fn the_file_takes_each_field_from_the_payment_and_the_proved_transaction() {
        let (executor, relayer, pool, asset, target) = (
            Address::repeat_byte(1),
            Address::repeat_byte(2),
            Address::repeat_byte(3),
            Address::repeat_byte(4),
            Address::repeat_byte(5),
        );
        let payment = nox_pay::Payment {
            payee: nox_pay::Payee { chain_id: 31_337, executor, relayer, pool },
            asset,
            fee: 1_234,
            action: nox_pay::Action { target, data: Bytes::from_static(&[0xde, 0xad]), gas: 77_000 },
            outputs: Vec::new(),
            join: false,
            public_out: 0,
            recipient: Address::ZERO,
            deadline: 1_700_000_600,
            avoid: &[],
        };
        let nullifiers = [U256::from(11u8), U256::from(12u8)];
        let f = BundleFile::of(&payment, &paid(&[9, 8, 7], nullifiers));
        assert_eq!((f.chain_id, f.executor, f.payment, f.relayer), (31_337, executor, pool, relayer));
        assert_eq!((f.asset, f.fee, f.deadline), (asset, U256::from(1_234u32), 1_700_000_600));
        assert_eq!((f.target, f.data.as_ref(), f.gas), (target, &[0xde, 0xad][..], 77_000));
        assert_eq!(f.payment_data.as_ref(), &[9, 8, 7][..], "the proved transaction's calldata");
        assert_eq!(f.nullifiers, nullifiers);
        // The execution hash binds the fee: the same action with another fee hashes differently.
        assert_eq!(f.action_hash, B256::from(payment.action.execution_hash(1_234)));
        assert_ne!(f.action_hash, B256::from(payment.action.execution_hash(1_235)));
        // The JSON a relayer reads names every field.
        let json = serde_json::to_value(&f).expect("json");
        for key in ["chain_id", "executor", "payment", "payment_data", "fee", "asset", "relayer", "target", "data"] {
            assert!(json.get(key).is_some(), "{key}");
        }
        for key in ["gas", "action_hash", "nullifiers", "deadline"] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }

    #[test]
    fn a_payment_only_bundle_has_no_target() {
        let payment = nox_pay::Payment {
            payee: nox_pay::Payee {
                chain_id: 1,
                executor: Address::repeat_byte(1),
                relayer: Address::repeat_byte(2),
                pool: Address::repeat_byte(3),
            },
            asset: Address::ZERO,
            fee: 1,
            action: nox_pay::Action::none(),
            outputs: Vec::new(),
            join: false,
            public_out: 0,
            recipient: Address::ZERO,
            deadline: 2,
            avoid: &[],
        };
        let f = BundleFile::of(&payment, &paid(&[], [U256::ZERO, U256::from(1u8)]));
        assert_eq!((f.target, f.data.len()), (Address::ZERO, 0));
    }
}
