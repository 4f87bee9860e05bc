//! The registry's active list at one block, and its fingerprint recomputed from the list
//! (docs/spec/registry.md §3). Pure: no I/O.

use std::net::SocketAddr;

use std::sync::Arc;

use alloy::primitives::{Address, B256, U256, keccak256};

use crate::error::ChainError;
use nox_topology::{Member, Membership, SignedDescriptor, Unvouched};

/// Role bit: the node relays (entry and mix layers).
pub const ROLE_RELAY: u8 = 1;
/// Role bit: the node performs exit services.
pub const ROLE_EXIT: u8 = 2;

/// One active node as `nodesPage` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredNode {
    /// The staking account that registered it (and signs its epoch-key statements).
    pub operator: Address,
    /// Ed25519 identity public key.
    pub identity_key: [u8; 32],
    /// X25519 link public key.
    pub link_key: [u8; 32],
    /// `ip:port` of its link endpoint, as registered.
    pub link_address: String,
    /// [`ROLE_RELAY`] | [`ROLE_EXIT`].
    pub role: u8,
    /// Stake held by the registry.
    pub stake: U256,
}

impl RegisteredNode {
    /// `keccak256(abi.encode(operator, identityKey, linkKey, keccak256(linkAddress), role, stake,
    /// unstakeAvailableAt))`, with `unstakeAvailableAt = 0` (an active node is not unstaking).
    pub fn record_hash(&self) -> B256 {
        let mut buf = Vec::with_capacity(7 * 32);
        buf.extend_from_slice(&[0u8; 12]);
        buf.extend_from_slice(self.operator.as_slice());
        buf.extend_from_slice(&self.identity_key);
        buf.extend_from_slice(&self.link_key);
        buf.extend_from_slice(keccak256(self.link_address.as_bytes()).as_slice());
        buf.extend_from_slice(&U256::from(self.role).to_be_bytes::<32>());
        buf.extend_from_slice(&self.stake.to_be_bytes::<32>());
        buf.extend_from_slice(&[0u8; 32]);
        keccak256(&buf)
    }

    /// The link address as a socket address, if it parses.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        self.link_address.parse().ok()
    }
}

/// `keccak256(uint256(chainId) ‖ uint256(registry) ‖ recordHash_0 ‖ … ‖ recordHash_{n−1})` over the
/// active list in list order: what `NodeRegistry.fingerprint()` returns.
pub fn fingerprint(chain_id: u64, registry: Address, nodes: &[RegisteredNode]) -> B256 {
    let mut buf = Vec::with_capacity(64 + 32 * nodes.len());
    buf.extend_from_slice(&U256::from(chain_id).to_be_bytes::<32>());
    buf.extend_from_slice(&[0u8; 12]);
    buf.extend_from_slice(registry.as_slice());
    for node in nodes {
        buf.extend_from_slice(node.record_hash().as_slice());
    }
    keccak256(&buf)
}

/// The registry's active list at one block, its fingerprint checked. (`Default`: the empty
/// list, which vouches for nobody.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegistrySnapshot {
    /// Chain id the registry lives on.
    pub chain_id: u64,
    /// The registry contract.
    pub registry: Address,
    /// Block number read.
    pub block: u64,
    /// Registry change counter at that block.
    pub version: u64,
    /// The fingerprint (checked against the node list).
    pub fingerprint: B256,
    /// The active nodes, in list order.
    pub nodes: Vec<RegisteredNode>,
}

impl RegistrySnapshot {
    /// The membership the topology is verified against. Nodes whose registered address does not
    /// parse as `ip:port` cannot be dialled and are left out (returned beside it).
    pub fn membership(&self) -> (Membership, Vec<&RegisteredNode>) {
        let mut unusable = Vec::new();
        let members: Vec<Member> = self
            .nodes
            .iter()
            .filter_map(|n| match n.socket_addr() {
                Some(address) => Some(Member {
                    identity_key: n.identity_key,
                    link_key: n.link_key,
                    address,
                    operator: n.operator.into_array(),
                }),
                None => {
                    unusable.push(n);
                    None
                }
            })
            .collect();
        let (chain_id, registry) = (self.chain_id, self.registry);
        let check: nox_topology::StatementCheck =
            Arc::new(move |member, signed| check_statements(chain_id, registry, member, signed));
        (Membership::new(members).with_statement_check(check), unusable)
    }

    /// The active node with this identity key.
    pub fn by_identity(&self, identity_key: &[u8; 32]) -> Option<&RegisteredNode> {
        self.nodes.iter().find(|n| &n.identity_key == identity_key)
    }

    /// The snapshot as JSON, for a node to keep its last verified membership across a restart
    /// (read back with [`RegistrySnapshot::from_json`]). Byte strings in hex; the stake as a
    /// decimal string.
    pub fn to_json(&self) -> String {
        let nodes: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .map(|n| {
                serde_json::json!({
                    "operator": n.operator.to_string(), "identity_key": hex::encode(n.identity_key),
                    "link_key": hex::encode(n.link_key), "link_address": n.link_address, "role": n.role,
                    "stake": n.stake.to_string(),
                })
            })
            .collect();
        serde_json::json!({
            "chain_id": self.chain_id, "registry": self.registry.to_string(), "block": self.block,
            "version": self.version, "fingerprint": self.fingerprint.to_string(), "nodes": nodes,
        })
        .to_string()
    }

    /// Reads [`RegistrySnapshot::to_json`] back, for the registry `registry` on `chain_id`. The
    /// fingerprint is recomputed from the node list and must match, so a damaged or edited
    /// file is refused rather than trusted.
    pub fn from_json(bytes: &[u8], chain_id: u64, registry: Address) -> Result<Self, ChainError> {
        let bad = |what: &str| ChainError::Config(format!("kept registry snapshot: {what}"));
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| bad(&e.to_string()))?;
        let text = |v: &serde_json::Value, key: &str| v[key].as_str().map(str::to_owned).ok_or_else(|| bad(key));
        let key32 = |v: &serde_json::Value, key: &str| -> Result<[u8; 32], ChainError> {
            hex::decode(text(v, key)?).ok().and_then(|b| b.try_into().ok()).ok_or_else(|| bad(key))
        };
        let nodes = v["nodes"]
            .as_array()
            .ok_or_else(|| bad("nodes"))?
            .iter()
            .map(|n| {
                Ok(RegisteredNode {
                    operator: text(n, "operator")?.parse().map_err(|_| bad("operator"))?,
                    identity_key: key32(n, "identity_key")?,
                    link_key: key32(n, "link_key")?,
                    link_address: text(n, "link_address")?,
                    role: n["role"].as_u64().and_then(|r| u8::try_from(r).ok()).ok_or_else(|| bad("role"))?,
                    stake: text(n, "stake")?.parse().map_err(|_| bad("stake"))?,
                })
            })
            .collect::<Result<Vec<_>, ChainError>>()?;
        let snapshot = Self {
            chain_id: v["chain_id"].as_u64().ok_or_else(|| bad("chain_id"))?,
            registry: text(&v, "registry")?.parse().map_err(|_| bad("registry"))?,
            block: v["block"].as_u64().ok_or_else(|| bad("block"))?,
            version: v["version"].as_u64().ok_or_else(|| bad("version"))?,
            fingerprint: text(&v, "fingerprint")?.parse().map_err(|_| bad("fingerprint"))?,
            nodes,
        };
        if (snapshot.chain_id, snapshot.registry) != (chain_id, registry) {
            return Err(bad("it is of another chain or registry"));
        }
        if fingerprint(chain_id, registry, &snapshot.nodes) != snapshot.fingerprint {
            return Err(bad("the node list does not match its fingerprint"));
        }
        Ok(snapshot)
    }
}

/// Every Sphinx key the descriptor lists must carry the registered operator's EIP-712
/// statement for its epoch (docs/spec/registry.md §5).
pub fn check_statements(
    chain_id: u64,
    registry: Address,
    member: &Member,
    signed: &SignedDescriptor,
) -> Result<(), Unvouched> {
    let operator = Address::from(member.operator);
    for key in &signed.descriptor.sphinx_keys {
        let statement = signed.operator_statement(key.epoch).ok_or(Unvouched::OperatorStatement(key.epoch))?;
        let digest = crate::slash::epoch_keys_digest(
            chain_id,
            registry,
            operator,
            key.epoch,
            crate::slash::keys_hash(&[key.key.as_bytes()]),
        );
        let signer = alloy::primitives::Signature::try_from(&statement.signature[..])
            .ok()
            .and_then(|sig| sig.recover_address_from_prehash(&digest).ok());
        if signer != Some(operator) {
            return Err(Unvouched::OperatorStatement(key.epoch));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(i: u8) -> RegisteredNode {
        RegisteredNode {
            operator: Address::repeat_byte(i),
            identity_key: [i; 32],
            link_key: [i.wrapping_add(100); 32],
            link_address: format!("127.0.0.1:{}", 9000 + u16::from(i)),
            role: ROLE_RELAY,
            stake: U256::from(1000u64 + u64::from(i)),
        }
    }

    /// A kept snapshot reads back exactly; a damaged, edited or foreign one is refused.
    #[test]
    fn a_kept_snapshot_round_trips_and_tampering_is_refused() {
        let registry = Address::repeat_byte(0xee);
        let nodes = vec![node(1), node(2)];
        let snapshot = RegistrySnapshot {
            chain_id: 31337,
            registry,
            block: 42,
            version: 7,
            fingerprint: fingerprint(31337, registry, &nodes),
            nodes,
        };
        let json = snapshot.to_json();
        assert_eq!(RegistrySnapshot::from_json(json.as_bytes(), 31337, registry).unwrap(), snapshot);
        // Another node's stake: the fingerprint no longer matches.
        let edited = json.replace("\"1002\"", "\"999999\"");
        assert_ne!(edited, json);
        assert!(RegistrySnapshot::from_json(edited.as_bytes(), 31337, registry).is_err());
        assert!(RegistrySnapshot::from_json(json.as_bytes(), 1, registry).is_err());
        assert!(RegistrySnapshot::from_json(json.as_bytes(), 31337, Address::repeat_byte(1)).is_err());
        assert!(RegistrySnapshot::from_json(&json.as_bytes()[..json.len() / 2], 31337, registry).is_err());
        assert!(RegistrySnapshot::from_json(b"{}", 31337, registry).is_err());
    }

    #[test]
    fn every_field_changes_the_fingerprint_and_duplicates_do_not_cancel() {
        let registry = Address::repeat_byte(0xee);
        let nodes = vec![node(1), node(2)];
        let base = fingerprint(1, registry, &nodes);
        let edits: [fn(&mut RegisteredNode); 6] = [
            |n| n.operator = Address::repeat_byte(9),
            |n| n.identity_key[31] ^= 1,
            |n| n.link_key[0] ^= 1,
            |n| n.link_address.push('0'),
            |n| n.role = ROLE_EXIT,
            |n| n.stake += U256::from(1),
        ];
        for edit in edits {
            let mut changed = nodes.clone();
            edit(&mut changed[1]);
            assert_ne!(fingerprint(1, registry, &changed), base);
        }
        assert_ne!(fingerprint(2, registry, &nodes), base, "chain id");
        assert_ne!(fingerprint(1, Address::repeat_byte(0xef), &nodes), base, "registry address");
        // A duplicated record adds a hash instead of cancelling (an XOR would give the empty set).
        let twice = vec![node(1), node(1)];
        assert_ne!(fingerprint(1, registry, &twice), fingerprint(1, registry, &[]));
    }

    #[test]
    fn membership_leaves_out_undiallable_addresses() {
        let mut bad = node(3);
        bad.link_address = "not an address".into();
        let snapshot = RegistrySnapshot {
            chain_id: 1,
            registry: Address::ZERO,
            block: 1,
            version: 1,
            fingerprint: B256::ZERO,
            nodes: vec![node(1), bad.clone()],
        };
        let (membership, unusable) = snapshot.membership();
        assert_eq!(membership.len(), 1);
        assert_eq!(unusable, vec![&bad]);
        assert!(membership.get(&[1; 32]).is_some());
    }
}
