use alloy_primitives::Address;

/// Why a paid transaction could not be built or sent. A relayer's refusal is not an error: it is
/// an [`nox_relayer::Outcome::Refused`] answer.
#[derive(Debug, thiserror::Error)]
pub enum PayError {
    /// The relayer's quote has no price for the fee's asset.
    #[error("the relayer does not price {0}")]
    Unpriced(Address),
    /// The quote or the fee is refused by the client's own bounds (nothing is proved).
    #[error(transparent)]
    Refused(#[from] crate::bounds::QuoteRefusal),
    /// The fee does not fit the pool's amounts (below 2^128).
    #[error("the fee is not below 2^128")]
    FeeTooLarge,
    /// The relayer serves another chain or pool than the wallet's.
    #[error("the relayer serves pool {relayer_pool} on chain {relayer_chain}, the wallet's is {pool} on {chain}")]
    OtherPool {
        /// The relayer's pool.
        relayer_pool: Address,
        /// The relayer's chain.
        relayer_chain: u64,
        /// The wallet's pool.
        pool: Address,
        /// The wallet's chain.
        chain: u64,
    },
    /// The wallet cannot make the spend (no note large enough, …).
    #[error(transparent)]
    Wallet(#[from] nox_wallet::WalletError),
    /// Proving failed, or the new proof does not verify (never sent).
    #[error("proving: {0}")]
    Proving(nox_zk::ZkError),
    /// The request or its answer did not make it through the mixnet.
    #[error("through the mixnet: {0}")]
    Mixnet(String),
    /// The exit answered with a status other than `Ok` (no relayer, overloaded, …).
    #[error("the exit answered {status}: {body}")]
    Exit {
        /// The response status.
        status: String,
        /// The response body, lossily decoded.
        body: String,
    },
    /// The relayer's answer is not the JSON of docs/spec/relay.md §3.
    #[error("the relayer's answer does not parse: {0}")]
    Answer(String),
}
