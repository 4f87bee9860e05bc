//! The shielded pool's events (contracts/src/zk/ShieldedPool.sol), declared once for every
//! reader of them:
//!
//! - the Solidity declarations ([`Deposited`], [`Transacted`], [`BatchInserted`] and the
//!   pre-issue-30 [`Spent`]), checked against the committed artifact's ABI by this crate's tests;
//! - [`decode`]: one log (its topics and data) to a typed [`PoolLog`], `None` for the pool's
//!   other events;
//! - the words of an event as the wallet and the inserter read them ([`scalar`], [`index`],
//!   [`value`], [`asset_word`]);
//! - with the `wallet` feature, [`wallet_event`]: a log to the `nox_wallet::PoolEvent` a
//!   wallet's view applies (`None` for events a wallet does not need).
//!
//! Pure (no I/O) and wasm-clean: `nox-chain`'s pool sync, the relayer's inserter and the browser
//! wallet (`nox-wasm`) decode the same bytes the same way.

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::{SolEvent, sol};
use ark_bn254::Fr;
use nox_zk::field;

sol! {
    #![sol(all_derives)]

    /// `ShieldedPool.Deposited`: one commitment queued.
    event Deposited(uint256 indexed queueIndex, uint256 commitment, address indexed asset, uint256 amount, bytes memo);
    /// `ShieldedPool.Spent` (the one-output gas payment, before issue 30): the change queued.
    event Spent(
        uint256 indexed nullifier,
        uint256 indexed queueIndex,
        uint256 changeCommitment,
        address asset,
        uint256 fee,
        address recipient,
        bytes32 actionHash
    );
    /// `ShieldedPool.Transacted` (issue 30): one private transaction; both outputs queued, at
    /// `firstQueueIndex` and the next.
    event Transacted(
        uint256 firstQueueIndex,
        uint256[2] nullifiers,
        uint256[2] commitments,
        bytes[2] notes,
        address indexed asset,
        uint256 publicIn,
        uint256 publicOut,
        uint256 fee,
        address recipient,
        address indexed relayer,
        bytes32 actionHash
    );
    /// `ShieldedPool.BatchInserted`: `count` queued commitments moved into the tree.
    event BatchInserted(uint256 indexed startLeafIndex, uint256 firstQueueIndex, uint256 count, uint256 newRoot);
}

/// Why a pool log or one of its words was refused.
#[derive(Debug, thiserror::Error)]
pub enum PoolEventError {
    /// An event with a known signature does not decode.
    #[error("undecodable pool event: {0}")]
    Decode(#[from] alloy_sol_types::Error),
    /// A word of an event is not a field element.
    #[error("the pool emitted a word ≥ r")]
    NotAScalar,
    /// An index or count of an event does not fit 64 bits (names the field).
    #[error("{0} out of range")]
    Index(&'static str),
    /// An amount of an event does not fit 128 bits (names the field).
    #[error("{0} ≥ 2^128")]
    Value(&'static str),
}

/// One of the pool's events a reader of the queue or a wallet needs.
#[derive(Clone, Debug)]
pub enum PoolLog {
    /// A deposit: one commitment queued.
    Deposited(Deposited),
    /// A pre-issue-30 gas payment: its change queued.
    Spent(Spent),
    /// A private transaction: two commitments queued (boxed: the largest event by far).
    Transacted(Box<Transacted>),
    /// A batch of queued commitments inserted into the tree.
    BatchInserted(BatchInserted),
}

/// Decodes one log of the pool from its topics and data: `None` for an event not declared here
/// (or a log without topics), an error for a declared event whose bytes do not decode.
pub fn decode(topics: &[B256], data: &[u8]) -> Result<Option<PoolLog>, PoolEventError> {
    let Some(topic) = topics.first() else { return Ok(None) };
    let topics = topics.iter().copied();
    Ok(Some(if *topic == Deposited::SIGNATURE_HASH {
        PoolLog::Deposited(Deposited::decode_raw_log(topics, data)?)
    } else if *topic == Spent::SIGNATURE_HASH {
        PoolLog::Spent(Spent::decode_raw_log(topics, data)?)
    } else if *topic == Transacted::SIGNATURE_HASH {
        PoolLog::Transacted(Box::new(Transacted::decode_raw_log(topics, data)?))
    } else if *topic == BatchInserted::SIGNATURE_HASH {
        PoolLog::BatchInserted(BatchInserted::decode_raw_log(topics, data)?)
    } else {
        return Ok(None);
    }))
}

/// A word of an event as a field element (refused, not reduced, when ≥ r).
pub fn scalar(x: U256) -> Result<Fr, PoolEventError> {
    field::from_be32(&x.to_be_bytes::<32>()).map_err(|_| PoolEventError::NotAScalar)
}

/// An index or count of an event (`what` names it in the error).
pub fn index(x: U256, what: &'static str) -> Result<u64, PoolEventError> {
    u64::try_from(x).map_err(|_| PoolEventError::Index(what))
}

/// An amount of an event (`what` names it in the error).
pub fn value(x: U256, what: &'static str) -> Result<u128, PoolEventError> {
    u128::try_from(x).map_err(|_| PoolEventError::Value(what))
}

/// An asset address as the circuits' field element, `uint160(asset)` (0 for ETH).
pub fn asset_word(a: Address) -> Fr {
    field::address(&a.0.0)
}

/// Decodes one pool log into the event a wallet's view applies (`None` for the pool's other
/// events, `Spent` included: the pool no longer emits it and a wallet never needed it).
#[cfg(feature = "wallet")]
pub fn wallet_event(topics: &[B256], data: &[u8]) -> Result<Option<nox_wallet::PoolEvent>, PoolEventError> {
    use nox_wallet::PoolEvent;
    Ok(Some(match decode(topics, data)? {
        Some(PoolLog::Deposited(e)) => PoolEvent::Deposited {
            queue_index: index(e.queueIndex, "queue index")?,
            commitment: scalar(e.commitment)?,
            asset: asset_word(e.asset),
            amount: value(e.amount, "deposit amount")?,
            memo: e.memo.to_vec(),
        },
        Some(PoolLog::Transacted(e)) => PoolEvent::Transacted {
            first_queue_index: index(e.firstQueueIndex, "queue index")?,
            nullifiers: [scalar(e.nullifiers[0])?, scalar(e.nullifiers[1])?],
            commitments: [scalar(e.commitments[0])?, scalar(e.commitments[1])?],
            notes: [e.notes[0].to_vec(), e.notes[1].to_vec()],
            asset: asset_word(e.asset),
            public_in: value(e.publicIn, "publicIn")?,
            public_out: value(e.publicOut, "publicOut")?,
            fee: value(e.fee, "fee")?,
        },
        Some(PoolLog::BatchInserted(e)) => PoolEvent::BatchInserted {
            start_leaf: index(e.startLeafIndex, "leaf index")?,
            first_queue: index(e.firstQueueIndex, "queue index")?,
            count: index(e.count, "batch size")?,
            new_root: scalar(e.newRoot)?,
        },
        Some(PoolLog::Spent(_)) | None => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Bytes, LogData};

    use super::*;

    fn word(x: u64) -> U256 {
        U256::from(x)
    }

    fn parts(log: &LogData) -> (Vec<B256>, Vec<u8>) {
        (log.topics().to_vec(), log.data.to_vec())
    }

    fn deposit() -> Deposited {
        Deposited {
            queueIndex: word(7),
            commitment: word(11),
            asset: Address::repeat_byte(5),
            amount: word(1),
            memo: Bytes::from(vec![1, 2, 3]),
        }
    }

    #[test]
    fn each_declared_event_decodes_to_itself_and_others_are_skipped() {
        let (t, d) = parts(&deposit().encode_log_data());
        match decode(&t, &d).unwrap() {
            Some(PoolLog::Deposited(e)) => {
                assert_eq!((e.queueIndex, e.asset, e.memo), (word(7), deposit().asset, deposit().memo))
            }
            other => panic!("{other:?}"),
        }
        let b = BatchInserted { startLeafIndex: word(32), firstQueueIndex: word(3), count: word(2), newRoot: word(9) };
        let (t, d) = parts(&b.encode_log_data());
        assert!(matches!(decode(&t, &d).unwrap(), Some(PoolLog::BatchInserted(e)) if e.count == word(2)));
        // An event not declared here, and a log without topics.
        assert!(decode(&[B256::repeat_byte(1)], &[]).unwrap().is_none());
        assert!(decode(&[], &[]).unwrap().is_none());
        // A declared event whose data is cut short is an error, not skipped.
        let (t, d) = parts(&deposit().encode_log_data());
        assert!(matches!(decode(&t, &d[..32]), Err(PoolEventError::Decode(_))));
    }

    #[test]
    fn words_out_of_range_are_refused_not_reduced() {
        assert!(matches!(scalar(U256::MAX), Err(PoolEventError::NotAScalar)));
        assert!(matches!(
            index(U256::from(u64::MAX) + word(1), "queue index"),
            Err(PoolEventError::Index("queue index"))
        ));
        assert!(matches!(value(U256::from(u128::MAX) + word(1), "fee"), Err(PoolEventError::Value("fee"))));
        assert_eq!(index(word(42), "count").unwrap(), 42);
        assert_eq!(value(U256::from(u128::MAX), "fee").unwrap(), u128::MAX);
    }

    #[cfg(feature = "wallet")]
    #[test]
    fn wallet_events_carry_the_logs_fields() {
        use nox_wallet::PoolEvent;
        let (t, d) = parts(&deposit().encode_log_data());
        match wallet_event(&t, &d).unwrap() {
            Some(PoolEvent::Deposited { queue_index, commitment, asset, amount, memo }) => {
                assert_eq!((queue_index, commitment, amount, memo), (7, Fr::from(11u64), 1, vec![1, 2, 3]));
                assert_eq!(asset, field::address(&[5u8; 20]));
            }
            other => panic!("{other:?}"),
        }
        let tx = Transacted {
            firstQueueIndex: word(8),
            nullifiers: [word(1), word(2)],
            commitments: [word(21), word(22)],
            notes: [Bytes::from(vec![9]), Bytes::new()],
            asset: Address::ZERO,
            publicIn: word(4),
            publicOut: word(5),
            fee: word(3),
            recipient: Address::ZERO,
            relayer: Address::ZERO,
            actionHash: Default::default(),
        };
        let (t, d) = parts(&tx.encode_log_data());
        match wallet_event(&t, &d).unwrap() {
            Some(PoolEvent::Transacted {
                first_queue_index, commitments, notes, public_in, public_out, fee, ..
            }) => {
                assert_eq!((first_queue_index, public_in, public_out, fee), (8, 4, 5, 3));
                assert_eq!(commitments, [Fr::from(21u64), Fr::from(22u64)]);
                assert_eq!(notes, [vec![9], vec![]]);
            }
            other => panic!("{other:?}"),
        }
        // A wallet never needed `Spent`.
        let spent = Spent {
            nullifier: word(1),
            queueIndex: word(2),
            changeCommitment: word(3),
            asset: Address::ZERO,
            fee: word(0),
            recipient: Address::ZERO,
            actionHash: Default::default(),
        };
        let (t, d) = parts(&spent.encode_log_data());
        assert!(wallet_event(&t, &d).unwrap().is_none());
        // A deposit of 2^128 wei is refused with the field's name.
        let big = Deposited { amount: U256::from(u128::MAX) + word(1), ..deposit() };
        let (t, d) = parts(&big.encode_log_data());
        assert_eq!(wallet_event(&t, &d).unwrap_err().to_string(), "deposit amount ≥ 2^128");
    }

    /// The events declared here are the pool's: the committed artifact's ABI has `Deposited`,
    /// `BatchInserted` and `Transacted` with these signatures, indexed arguments included
    /// (decoding depends on them too).
    #[test]
    fn the_declared_events_are_the_pools() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contracts/artifacts/ShieldedPool.json");
        let artifact: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let abi = artifact.get("abi").and_then(|a| a.as_array()).expect("an ABI");
        let events: std::collections::HashMap<String, String> = abi
            .iter()
            .filter(|e| e["type"] == "event")
            .map(|e| {
                let name = e["name"].as_str().unwrap().to_owned();
                let types: Vec<String> = e["inputs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| {
                        let indexed = if i["indexed"] == true { " indexed" } else { "" };
                        format!("{}{indexed}", i["type"].as_str().unwrap())
                    })
                    .collect();
                (name.clone(), format!("{name}({})", types.join(",")))
            })
            .collect();
        let declared = [
            (Deposited::SIGNATURE, "Deposited(uint256 indexed,uint256,address indexed,uint256,bytes)"),
            (BatchInserted::SIGNATURE, "BatchInserted(uint256 indexed,uint256,uint256,uint256)"),
            (
                Transacted::SIGNATURE,
                "Transacted(uint256,uint256[2],uint256[2],bytes[2],address indexed,uint256,uint256,uint256,address,address indexed,bytes32)",
            ),
        ];
        for (signature, with_indexed) in declared {
            assert_eq!(signature, with_indexed.replace(" indexed", ""), "the test's list follows the declarations");
            let name = signature.split('(').next().unwrap();
            assert_eq!(events[name], with_indexed, "{name} as the pool emits it");
        }
    }
}
