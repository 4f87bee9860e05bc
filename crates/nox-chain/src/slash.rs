//! Equivocation evidence: a node's operator key signs, for each key epoch, an EIP-712
//! statement `EpochKeys(operator, epoch, keysHash)` naming the Sphinx key it uses. Two
//! statements for one epoch with different keys are proof of equivocation, and anyone can
//! submit them to `NodeRegistry.slashEquivocation` (docs/spec/registry.md §5).

use alloy::primitives::{Address, B256, Bytes, keccak256};
use alloy::signers::SignerSync;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolStruct, eip712_domain};

use crate::bindings::NodeRegistry;
use crate::deploy::{Deployment, confirm, wallet_provider};
use crate::error::ChainError;

alloy::sol! {
    /// The statement an operator signs for each key epoch.
    struct EpochKeys {
        address operator;
        uint32 epoch;
        bytes32 keysHash;
    }
}

/// `keccak256` of the Sphinx public key(s) a node uses in an epoch (opaque to the chain).
pub fn keys_hash<K: AsRef<[u8]>>(sphinx_public_keys: &[K]) -> B256 {
    keccak256(sphinx_public_keys.iter().flat_map(|key| key.as_ref().iter().copied()).collect::<Vec<u8>>())
}

/// The EIP-712 digest of `EpochKeys(operator, epoch, keysHash)` under the registry's domain
/// (name "NOX NodeRegistry", version "1", the chain id and the registry address).
pub fn epoch_keys_digest(chain_id: u64, registry: Address, operator: Address, epoch: u32, keys_hash: B256) -> B256 {
    let domain = eip712_domain! {
        name: "NOX NodeRegistry",
        version: "1",
        chain_id: chain_id,
        verifying_contract: registry,
    };
    EpochKeys { operator, epoch, keysHash: keys_hash }.eip712_signing_hash(&domain)
}

/// The operator's 65-byte signature (`r ‖ s ‖ v`) over an epoch-keys statement.
pub fn sign_epoch_keys(
    operator: &PrivateKeySigner,
    chain_id: u64,
    registry: Address,
    epoch: u32,
    keys_hash: B256,
) -> Result<Bytes, ChainError> {
    let digest = epoch_keys_digest(chain_id, registry, operator.address(), epoch, keys_hash);
    let signature = operator.sign_hash_sync(&digest).map_err(|e| ChainError::Config(format!("signing: {e}")))?;
    Ok(Bytes::from(signature.as_bytes().to_vec()))
}

/// The operator's statements for every Sphinx key of `descriptor`, attached to it.
pub fn attach_statements(
    operator: &PrivateKeySigner,
    chain_id: u64,
    registry: Address,
    mut descriptor: nox_topology::SignedDescriptor,
) -> Result<nox_topology::SignedDescriptor, ChainError> {
    let mut statements = Vec::with_capacity(descriptor.descriptor.sphinx_keys.len());
    for key in &descriptor.descriptor.sphinx_keys {
        let signature = sign_epoch_keys(operator, chain_id, registry, key.epoch, keys_hash(&[key.key.as_bytes()]))?;
        let signature: [u8; 65] =
            signature.as_ref().try_into().map_err(|_| ChainError::Config("signature is not 65 bytes".into()))?;
        statements.push(nox_topology::OperatorStatement { epoch: key.epoch, signature });
    }
    descriptor.operator_statements = statements;
    Ok(descriptor)
}

/// Slashing evidence from two descriptors of one operator that name different Sphinx keys for
/// the same epoch, each with its statement (e.g. served to different clients).
pub fn evidence_from(
    operator: Address,
    a: &nox_topology::SignedDescriptor,
    b: &nox_topology::SignedDescriptor,
) -> Option<Equivocation> {
    a.descriptor.sphinx_keys.iter().find_map(|ka| {
        let kb = b.descriptor.sphinx_keys.iter().find(|kb| kb.epoch == ka.epoch && kb.key != ka.key)?;
        let (sa, sb) = (a.operator_statement(ka.epoch)?, b.operator_statement(kb.epoch)?);
        Some(Equivocation {
            operator,
            epoch: ka.epoch,
            a: (keys_hash(&[ka.key.as_bytes()]), Bytes::from(sa.signature.to_vec())),
            b: (keys_hash(&[kb.key.as_bytes()]), Bytes::from(sb.signature.to_vec())),
        })
    })
}

/// Whether `signature` (65 bytes, `r ‖ s ‖ v`) is `operator`'s statement that it used the keys
/// hashing to `keys_hash` in `epoch`, under the registry's EIP-712 domain.
pub fn statement_is_valid(
    chain_id: u64,
    registry: Address,
    operator: Address,
    epoch: u32,
    keys_hash: B256,
    signature: &[u8],
) -> bool {
    let digest = epoch_keys_digest(chain_id, registry, operator, epoch, keys_hash);
    alloy::primitives::Signature::try_from(signature)
        .ok()
        .and_then(|sig| sig.recover_address_from_prehash(&digest).ok())
        .is_some_and(|signer| signer == operator)
}

/// Two conflicting statements of one operator for one epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Equivocation {
    /// The equivocating operator.
    pub operator: Address,
    /// The epoch.
    pub epoch: u32,
    /// First statement's keys hash and signature.
    pub a: (B256, Bytes),
    /// Second statement's keys hash and signature.
    pub b: (B256, Bytes),
}

impl Equivocation {
    /// Whether this is proof the registry accepts: two different keys hashes for one epoch,
    /// each signed by the operator under the registry's domain (what `slashEquivocation`
    /// checks). Evidence that fails this is never submitted: it would only burn gas.
    pub fn verifies(&self, chain_id: u64, registry: Address) -> bool {
        let valid = |(hash, signature): &(B256, Bytes)| {
            statement_is_valid(chain_id, registry, self.operator, self.epoch, *hash, signature)
        };
        self.a.0 != self.b.0 && valid(&self.a) && valid(&self.b)
    }
}

/// Submits the evidence from `reporter`'s account (which receives the reporter's share).
pub async fn submit(
    rpc_url: &str,
    deployment: &Deployment,
    reporter: &PrivateKeySigner,
    evidence: &Equivocation,
) -> Result<(), ChainError> {
    submit_to(rpc_url, deployment.registry, reporter, evidence).await
}

/// [`submit`] to the registry at `registry` (what a watcher knows from its `[chain]` section).
pub async fn submit_to(
    rpc_url: &str,
    registry: Address,
    reporter: &PrivateKeySigner,
    evidence: &Equivocation,
) -> Result<(), ChainError> {
    let provider = wallet_provider(rpc_url, reporter)?;
    let registry = NodeRegistry::new(registry, &provider);
    confirm(
        registry
            .slashEquivocation(
                evidence.operator,
                evidence.epoch,
                evidence.a.0,
                evidence.a.1.clone(),
                evidence.b.0,
                evidence.b.1.clone(),
            )
            .send()
            .await,
        "slashEquivocation",
    )
    .await
}
