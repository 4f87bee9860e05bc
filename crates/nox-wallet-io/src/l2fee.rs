//! The client's own figure of a bundle's L1 data fee (issue 33; docs/design/l2-fees.md "The
//! client"), which bounds the `l1_data_gas` an exit's relayer quotes
//! ([`nox_pay::check_quote_with_data_fee`]).
//!
//! The chain's fee model is found as the relayer finds it ([`nox_chain::l2fee::FeeModel::for_chain`]);
//! a chain id the table does not know is an OP-stack chain if the `GasPriceOracle` predeploy has
//! code, else priced as an L1 (no data fee: a quote charging one is then refused, which is safe).
//! The prices are read through the caller's provider (the mixnet) with
//! [`nox_chain::l2fee::read_pricing`] and applied, by nox-chain's own arithmetic, to
//! [`nox_pay::data_fee_sample`]: the bundle the client is about to send, before it is proved.

use alloy::{
    primitives::{Address, U256},
    providers::{DynProvider, Provider},
    transports::TransportError,
};
use nox_chain::l2fee::{FeeModel, GAS_PRICE_ORACLE, read_pricing};

/// A failed reading of the chain's data pricing.
#[derive(Debug, thiserror::Error)]
pub enum DataFeeError {
    /// Probing for the OP-stack oracle on a chain the table does not know failed.
    #[error("probing chain {chain_id} for the OP-stack GasPriceOracle: {source}")]
    Probe {
        /// The chain.
        chain_id: u64,
        /// The read's error.
        source: TransportError,
    },
    /// Reading the oracle's prices failed.
    #[error("reading the L1 data fee's prices ({model:?}) on chain {chain_id}: {source}")]
    Pricing {
        /// The chain.
        chain_id: u64,
        /// The fee model read.
        model: FeeModel,
        /// The read's error.
        source: nox_chain::ChainError,
    },
}

/// The fee model of chain `chain_id`: the known table, else an OP-stack chain if the
/// `GasPriceOracle` predeploy has code there, else an L1.
pub async fn fee_model(provider: &DynProvider, chain_id: u64) -> Result<FeeModel, DataFeeError> {
    if let Some(model) = FeeModel::for_chain(chain_id) {
        return Ok(model);
    }
    let code =
        provider.get_code_at(GAS_PRICE_ORACLE).await.map_err(|source| DataFeeError::Probe { chain_id, source })?;
    Ok(if code.is_empty() { FeeModel::L1 } else { FeeModel::OpStack })
}

/// The client's own figure (wei) of the L1 data fee of a paid bundle through `pool` whose action
/// carries `action_data_len` bytes of calldata, at the prices chain `chain_id` posts now; 0 on
/// an L1.
pub async fn own_data_fee_wei(
    provider: &DynProvider,
    chain_id: u64,
    pool: Address,
    action_data_len: usize,
) -> Result<U256, DataFeeError> {
    let model = fee_model(provider, chain_id).await?;
    if model == FeeModel::L1 {
        return Ok(U256::ZERO);
    }
    let pricing =
        read_pricing(provider, model).await.map_err(|source| DataFeeError::Pricing { chain_id, model, source })?;
    Ok(pricing.fee(&nox_pay::data_fee_sample(pool, action_data_len)))
}
