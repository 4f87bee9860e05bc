//! The client's own figure of the L1 data fee, read on a real Anvil through a real provider, and
//! the quote bound it drives (issue 33: on an L2 an honest quote's `l1_data_gas` must pass, an
//! inflated one be refused before anything is proved).
//!
//! Anvil charges no data fee and has no `GasPriceOracle`: the predeploy is stood in for
//! ([`oracle_stand_in`]) with the prices of a recorded Base Sepolia receipt.
//! Everything the client does is real: the chain id, the code probe, the five `eth_call`s, the
//! fee reading, nox-chain's arithmetic and nox-pay's bound.

use std::net::TcpListener;

use alloy::consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy::eips::eip2718::Encodable2718;
use alloy::network::TxSignerSync;
use alloy::primitives::{Address, TxKind, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;
use nox_chain::anvil::{Anvil, AnvilOptions};
use nox_chain::l2fee::{FeeModel, OpFeeParams};
use nox_pay::bounds::{Figure, QuoteRefusal};
use nox_pay::{check_quote, check_quote_with_data_fee, data_fee_sample};
use nox_relayer::Quote;
use nox_relayer::price::{FeePlan, l1_fee_gas, reference_bundle_calldata, required_wei};
use nox_relayer::wire::AssetPrice;
use nox_wallet_io::l2fee::{fee_model, own_data_fee_wei};
use oracle_stand_in::{install_oracle, recorded};

mod oracle_stand_in;

const POOL: Address = Address::repeat_byte(0x5f);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn anvil(chain_id: u64) -> (Anvil, DynProvider) {
    let anvil = Anvil::spawn(&AnvilOptions { chain_id, ..AnvilOptions::on_port(free_port()) }).expect("anvil starts");
    let provider = ProviderBuilder::new().connect_http(anvil.url().parse().expect("url")).erased();
    (anvil, provider)
}

/// The signed EIP-1559 transaction a relayer on chain `chain_id` sends with `calldata`.
fn signed(chain_id: u64, calldata: Vec<u8>) -> Vec<u8> {
    let signer = PrivateKeySigner::from_slice(&[0x42; 32]).expect("key");
    let mut tx = TxEip1559 {
        chain_id,
        nonce: 1_234,
        gas_limit: 700_000,
        max_fee_per_gas: 20_000_000,
        max_priority_fee_per_gas: 1_000_000,
        to: TxKind::Call(Address::repeat_byte(0xe7)),
        value: U256::ZERO,
        access_list: Default::default(),
        input: calldata.into(),
    };
    let sig = signer.sign_transaction_sync(&mut tx).expect("sign");
    TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
}

/// The quote an honest relayer on this chain gives: its fee plan from the chain's base fee and
/// the data fee of its signed reference bundle (132 bytes of action, the shipped policy) as gas.
fn relayers_quote(chain_id: u64, base_fee: u128, block: u64, pricing: &OpFeeParams) -> Quote {
    let plan = FeePlan::new(base_fee.max(1), 1_000_000_000, 2_500);
    let fee = pricing.fee(&signed(chain_id, reference_bundle_calldata(POOL, 132)));
    Quote {
        chain_id,
        executor: Address::repeat_byte(1),
        relayer: Address::repeat_byte(2),
        pool: POOL,
        block,
        base_fee: U256::from(plan.base_fee),
        priority_fee: U256::from(plan.priority_fee),
        max_fee_per_gas: U256::from(plan.max_fee_per_gas),
        margin_bps: 1_000,
        gas_extra_bps: 2_000,
        prices: vec![AssetPrice {
            asset: Address::ZERO,
            per_million_gas: required_wei(1_000_000, plan.max_fee_per_gas, 1_000),
        }],
        payment_gas: 420_000,
        insertion_gas: 0,
        l1_data_gas: l1_fee_gas(fee, plan.max_fee_per_gas),
    }
}

fn ratio(a: U256, b: U256) -> f64 {
    let a: f64 = a.to_string().parse().expect("number");
    let b: f64 = b.to_string().parse().expect("number");
    a / b
}

fn refused_for_data_fee(result: Result<(), QuoteRefusal>) -> bool {
    matches!(result, Err(QuoteRefusal::Exceeds { figure: Figure::L1DataGas, .. }))
}

#[test]
fn the_sample_is_as_long_as_the_signed_transaction() {
    for action in [0usize, 4, 132, 1_000] {
        let calldata = reference_bundle_calldata(POOL, action);
        let real = signed(8_453, calldata).len();
        let sample = data_fee_sample(POOL, action).len();
        assert!(real.abs_diff(sample) <= 4, "action {action}: signed {real} bytes, sample {sample}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn on_an_op_stack_chain_an_honest_data_fee_passes_and_an_inflated_one_is_refused() {
    let (_anvil, provider) = anvil(8_453);
    let p = recorded();
    install_oracle(&provider, &p).await;
    assert_eq!(fee_model(&provider, 8_453).await.expect("model"), FeeModel::OpStack);

    // The client's own figure, read through its provider, is nox-chain's arithmetic on the sample.
    let own = own_data_fee_wei(&provider, 8_453, POOL, 132).await.expect("own figure");
    assert_eq!(own, p.fee(&data_fee_sample(POOL, 132)));
    // ... and within 5 % of what the chain charges the relayer's signed transaction.
    let charged = p.fee(&signed(8_453, reference_bundle_calldata(POOL, 132)));
    let r = ratio(own, charged);
    assert!((0.95..=1.05).contains(&r), "own {own} wei vs charged {charged} wei ({r:.4})");

    let latest = provider.get_block_number().await.expect("block");
    let reading = nox_wallet_io::fees::fee_reading(&provider, latest).await.expect("reading");
    let mut quote = relayers_quote(8_453, reading.base_fee, latest, &p);
    assert!(quote.l1_data_gas > 0);
    // Without its own figure a client bounds the data fee by 0: the honest quote is refused.
    assert!(refused_for_data_fee(check_quote(&quote, &reading, Address::ZERO, None)));
    // With its own figure the client accepts the honest quote, for every action size it sends
    // (a payment-only bundle's figure is the smallest).
    for action in [0usize, 132, 1_000] {
        let own = own_data_fee_wei(&provider, 8_453, POOL, action).await.expect("own figure");
        check_quote_with_data_fee(&quote, &reading, Address::ZERO, None, own)
            .unwrap_or_else(|e| panic!("action {action}: honest quote refused: {e}"));
    }
    // The attack: the exit inflates the data fee past twice the client's figure.
    let own = own_data_fee_wei(&provider, 8_453, POOL, 0).await.expect("own figure");
    let bound = (own * U256::from(2u64)).div_ceil(quote.max_fee_per_gas);
    quote.l1_data_gas = u64::try_from(bound).expect("fits");
    check_quote_with_data_fee(&quote, &reading, Address::ZERO, None, own).expect("at the bound: accepted");
    quote.l1_data_gas += 1;
    assert!(refused_for_data_fee(check_quote_with_data_fee(&quote, &reading, Address::ZERO, None, own)));
}

#[tokio::test(flavor = "current_thread")]
async fn an_unknown_chain_is_an_op_stack_chain_only_if_the_oracle_is_there() {
    let (_anvil, provider) = anvil(424_242);
    assert_eq!(fee_model(&provider, 424_242).await.expect("model"), FeeModel::L1);
    // An L1: the client's figure is 0, so any claimed data fee is refused.
    assert_eq!(own_data_fee_wei(&provider, 424_242, POOL, 132).await.expect("own"), U256::ZERO);
    install_oracle(&provider, &recorded()).await;
    assert_eq!(fee_model(&provider, 424_242).await.expect("model"), FeeModel::OpStack);
    assert!(own_data_fee_wei(&provider, 424_242, POOL, 132).await.expect("own") > U256::ZERO);
}

#[tokio::test(flavor = "current_thread")]
async fn on_a_known_l1_no_data_fee_is_accepted() {
    let (_anvil, provider) = anvil(31_337);
    // Even with an oracle's code present, a known L1 is priced as an L1 (the table decides).
    install_oracle(&provider, &recorded()).await;
    let own = own_data_fee_wei(&provider, 31_337, POOL, 132).await.expect("own");
    assert_eq!(own, U256::ZERO);
    let latest = provider.get_block_number().await.expect("block");
    let reading = nox_wallet_io::fees::fee_reading(&provider, latest).await.expect("reading");
    let mut quote = relayers_quote(31_337, reading.base_fee, latest, &recorded());
    quote.l1_data_gas = 1;
    assert!(refused_for_data_fee(check_quote_with_data_fee(&quote, &reading, Address::ZERO, None, own)));
    quote.l1_data_gas = 0;
    check_quote_with_data_fee(&quote, &reading, Address::ZERO, None, own).expect("no data fee: accepted");
}
