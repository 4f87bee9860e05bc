//! `eth_sendRawTransaction` with real signed transactions: built here with an RLP encoder
//! (alloy-rlp) and signed with k256 under a fixed key, checked against the EIP-155 example,
//! then altered one defect at a time.

mod common;

use std::time::Duration;

use alloy_rlp::{Encodable, Header};
use common::{Server, canned, response};
use k256::ecdsa::{SigningKey, VerifyingKey};
use nox_exit::{ErrorKind, ExitConfig, ExitError, ExitServices, JsonRpcConfig, TxError, TxType, decode_transaction};
use sha3::{Digest, Keccak256};

const CAP: usize = 64 * 1024;
const CHAIN: u64 = 31337;

fn keccak(bytes: &[u8]) -> [u8; 32] {
    Keccak256::digest(bytes).into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

/// One RLP item.
fn item<T: Encodable + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    value.encode(&mut out);
    out
}

/// An RLP list of already encoded items.
fn list(items: &[Vec<u8>]) -> Vec<u8> {
    let payload: Vec<u8> = items.concat();
    let mut out = Vec::new();
    Header { list: true, payload_length: payload.len() }.encode(&mut out);
    out.extend_from_slice(&payload);
    out
}

/// A big-endian integer without leading zeros, as an RLP byte string.
fn uint_be(be: &[u8]) -> Vec<u8> {
    let zeros = be.iter().take_while(|b| **b == 0).count();
    item(&be[zeros..])
}

#[derive(Clone)]
struct Tx {
    /// 0 = legacy, 1 = EIP-2930, 2 = EIP-1559.
    ty: u8,
    /// `None`: a pre-EIP-155 legacy transaction.
    chain: Option<u64>,
    nonce: u64,
    max_priority: u128,
    gas_price: u128,
    gas: u64,
    to: Option<[u8; 20]>,
    value: u128,
    data: Vec<u8>,
}

impl Tx {
    fn new(ty: u8) -> Self {
        Self {
            ty,
            chain: Some(CHAIN),
            nonce: 7,
            max_priority: 1_000_000_000,
            gas_price: 30_000_000_000,
            gas: 21_000,
            to: Some([0x35; 20]),
            value: 1_000_000_000_000_000_000,
            data: Vec::new(),
        }
    }

    /// The fields before the signature, each RLP-encoded.
    fn fields(&self) -> Vec<Vec<u8>> {
        let to = self.to.map_or_else(|| item(&[0u8; 0][..]), |a| item(&a[..]));
        let tail = [item(&self.gas), to, item(&self.value), item(&self.data[..])];
        match self.ty {
            0 => [vec![item(&self.nonce), item(&self.gas_price)], tail.to_vec()].concat(),
            1 => [
                vec![item(&self.chain.unwrap()), item(&self.nonce), item(&self.gas_price)],
                tail.to_vec(),
                vec![list(&[])],
            ]
            .concat(),
            _ => [
                vec![item(&self.chain.unwrap()), item(&self.nonce), item(&self.max_priority), item(&self.gas_price)],
                tail.to_vec(),
                vec![list(&[])],
            ]
            .concat(),
        }
    }

    fn typed(&self, rlp: Vec<u8>) -> Vec<u8> {
        if self.ty == 0 { rlp } else { [vec![self.ty], rlp].concat() }
    }

    /// Sign with `key`; `mutate` may alter the signed field list (v/yParity, r, s at the end).
    fn sign_with(&self, key: &SigningKey, mutate: impl FnOnce(&mut Vec<Vec<u8>>)) -> Vec<u8> {
        let mut unsigned = self.fields();
        if let (0, Some(chain)) = (self.ty, self.chain) {
            unsigned.extend([item(&chain), item(&0u8), item(&0u8)]);
        }
        let hash = keccak(&self.typed(list(&unsigned)));
        let (signature, recovery) = key.sign_prehash_recoverable(&hash).unwrap();
        let recovered = VerifyingKey::recover_from_prehash(&hash, &signature, recovery).unwrap();
        assert_eq!(&recovered, key.verifying_key(), "a real signature");
        let parity = u64::from(recovery.is_y_odd());
        let v = match (self.ty, self.chain) {
            (0, Some(chain)) => chain * 2 + 35 + parity,
            (0, None) => 27 + parity,
            _ => parity,
        };
        let mut signed = self.fields();
        signed.extend([item(&v), uint_be(&signature.r().to_bytes()), uint_be(&signature.s().to_bytes())]);
        mutate(&mut signed);
        self.typed(list(&signed))
    }

    fn sign(&self) -> Vec<u8> {
        self.sign_with(&key(), |_| {})
    }
}

fn key() -> SigningKey {
    SigningKey::from_slice(&[0x46; 32]).unwrap()
}

/// The worked example of EIP-155: our encoder and signer reproduce it byte for byte.
#[test]
fn eip155_example_is_reproduced_and_accepted() {
    let tx = Tx {
        ty: 0,
        chain: Some(1),
        nonce: 9,
        max_priority: 0,
        gas_price: 20_000_000_000,
        gas: 21_000,
        to: Some([0x35; 20]),
        value: 1_000_000_000_000_000_000,
        data: Vec::new(),
    };
    let expected = "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
    assert_eq!(hex(&tx.sign()), expected);
    let summary = decode_transaction(&unhex(expected), 1).unwrap();
    assert_eq!((summary.tx_type, summary.chain_id, summary.gas_limit), (TxType::Legacy, 1, 21_000));
    assert_eq!(decode_transaction(&unhex(expected), 5), Err(TxError::WrongChain { got: 1, expected: 5 }));
}

#[test]
fn signed_legacy_2930_and_1559_transactions_are_accepted() {
    for (ty, expected) in [(0, TxType::Legacy), (1, TxType::AccessList), (2, TxType::DynamicFee)] {
        let raw = Tx::new(ty).sign();
        let summary = decode_transaction(&raw, CHAIN).unwrap_or_else(|e| panic!("type {ty}: {e}"));
        assert_eq!((summary.tx_type, summary.chain_id), (expected, CHAIN));
        // A contract creation with data.
        let create = Tx { to: None, data: vec![0x60; 100], gas: 100_000, ..Tx::new(ty) };
        decode_transaction(&create.sign(), CHAIN).unwrap();
    }
}

#[test]
fn chain_id_must_match_and_be_present() {
    for ty in [0, 1, 2] {
        let other = Tx { chain: Some(1), ..Tx::new(ty) }.sign();
        assert_eq!(
            decode_transaction(&other, CHAIN),
            Err(TxError::WrongChain { got: 1, expected: CHAIN }),
            "type {ty}"
        );
    }
    let pre155 = Tx { chain: None, ..Tx::new(0) }.sign();
    assert!(matches!(decode_transaction(&pre155, CHAIN), Err(TxError::NoChainId(27 | 28))));
}

#[test]
fn blob_set_code_and_unknown_types_are_refused() {
    let body = &Tx::new(2).sign()[1..];
    for ty in [3u8, 4] {
        let raw = [vec![ty], body.to_vec()].concat();
        assert!(matches!(decode_transaction(&raw, CHAIN), Err(TxError::Type(t, _)) if t == ty), "type {ty}");
    }
    assert!(matches!(decode_transaction(&[vec![0x05], body.to_vec()].concat(), CHAIN), Err(TxError::Type(5, _))));
    assert!(matches!(decode_transaction(&[0x80], CHAIN), Err(TxError::Malformed(_))));
    assert!(matches!(decode_transaction(&[], CHAIN), Err(TxError::Malformed(_))));
}

fn malformed(raw: &[u8]) -> String {
    match decode_transaction(raw, CHAIN) {
        Err(TxError::Malformed(why)) => why,
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn non_canonical_rlp_and_stray_bytes_are_refused() {
    for ty in [0, 2] {
        let tx = Tx::new(ty);
        let good = tx.sign();
        // Trailing byte after the list.
        assert!(malformed(&[good.clone(), vec![0x00]].concat()).contains("trailing"), "type {ty}");
        // Truncated.
        malformed(&good[..good.len() - 1]);
        let nonce_at = if ty == 0 { 0 } else { 1 };
        // Nonce 7 written as two bytes with a leading zero.
        let raw = tx.sign_with(&key(), |f| f[nonce_at] = vec![0x82, 0x00, 0x07]);
        assert!(malformed(&raw).contains("nonce"), "type {ty}");
        // Nonce 7 written as a one-byte string (0x81 0x07) instead of the byte itself.
        let raw = tx.sign_with(&key(), |f| f[nonce_at] = vec![0x81, 0x07]);
        assert!(malformed(&raw).contains("nonce"), "type {ty}");
        // The value with a leading zero byte.
        let value_at = if ty == 0 { 4 } else { 6 };
        let raw = tx.sign_with(&key(), |f| {
            let mut v = vec![0x00];
            v.extend(1_000_000_000_000_000_000u128.to_be_bytes().iter().skip_while(|b| **b == 0));
            f[value_at] = item(&v[..]);
        });
        assert!(malformed(&raw).contains("leading zero"), "type {ty}");
        // An extra field after the signature; a missing one.
        assert!(malformed(&tx.sign_with(&key(), |f| f.push(item(&1u8)))).contains("extra fields"));
        assert!(
            malformed(&tx.sign_with(&key(), |f| {
                f.pop();
            }))
            .contains("missing field s")
        );
        // A list where a byte string belongs.
        malformed(&tx.sign_with(&key(), |f| f[value_at] = list(&[])));
        // A long-form list length for a short list.
        let mut long = good.clone();
        let start = usize::from(ty != 0);
        let header_len = if long[start] >= 0xf8 { 1 + usize::from(long[start] - 0xf7) } else { 1 };
        let payload = long.split_off(start + header_len);
        long.truncate(start);
        long.extend([0xf9, 0x00, payload.len() as u8]);
        long.extend(payload);
        malformed(&long);
    }
}

#[test]
fn values_the_upstream_would_refuse_are_refused() {
    let invalid = |raw: Vec<u8>| match decode_transaction(&raw, CHAIN) {
        Err(TxError::Invalid(why)) => why,
        other => panic!("expected Invalid, got {other:?}"),
    };
    for ty in [0, 1, 2] {
        assert!(invalid(Tx { gas: 0, ..Tx::new(ty) }.sign()).contains("below the intrinsic"));
        assert!(invalid(Tx { gas: 20_999, ..Tx::new(ty) }.sign()).contains("below the intrinsic"));
        let big_init = Tx { to: None, data: vec![0; 49_153], gas: 10_000_000, ..Tx::new(ty) };
        assert!(invalid(big_init.sign()).contains("EIP-3860"));
    }
    let tip_above_cap = Tx { max_priority: 31_000_000_000, ..Tx::new(2) };
    assert!(invalid(tip_above_cap.sign()).contains("maxPriorityFeePerGas"));
    // s in the upper half: replace s with n - s (the same signature, malleated).
    let n = unhex("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
    let high_s = Tx::new(2).sign_with(&key(), |f| {
        let s = f.last().unwrap().clone();
        let mut s_be = [0u8; 32];
        let payload = &s[1..];
        s_be[32 - payload.len()..].copy_from_slice(payload);
        let mut out = [0u8; 32];
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let d = i16::from(n[i]) - i16::from(s_be[i]) - borrow;
            borrow = i16::from(d < 0);
            out[i] = (d + 256 * borrow) as u8;
        }
        *f.last_mut().unwrap() = uint_be(&out);
    });
    assert!(invalid(high_s).contains("EIP-2"));
    let zero_r = Tx::new(2).sign_with(&key(), |f| {
        let at = f.len() - 2;
        f[at] = item(&[0u8; 0][..]);
    });
    assert!(invalid(zero_r).contains("zero"));
    let r_at_n = Tx::new(1).sign_with(&key(), |f| {
        let at = f.len() - 2;
        f[at] = item(&n[..]);
    });
    assert!(invalid(r_at_n).contains("curve order"));
    let parity = Tx::new(2).sign_with(&key(), |f| {
        let at = f.len() - 3;
        f[at] = item(&2u8);
    });
    assert!(invalid(parity).contains("yParity"));
    let bad_v = Tx::new(0).sign_with(&key(), |f| {
        let at = f.len() - 3;
        f[at] = item(&30u8);
    });
    assert!(invalid(bad_v).contains("v = 30"));
}

async fn exit(upstream: &Server, chain: Option<u64>) -> ExitServices {
    let rpc = JsonRpcConfig {
        upstream: upstream.url("/"),
        chain_id: chain,
        timeout: Duration::from_secs(5),
        ..Default::default()
    };
    ExitServices::new(ExitConfig { json_rpc: Some(rpc), ..Default::default() }).unwrap()
}

fn send(raw: &[u8]) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x{}"]}}"#, hex(raw))
}

#[tokio::test]
async fn the_exit_forwards_only_valid_transactions_for_its_chain() {
    let upstream = canned(response("200 OK", &[], br#"{"jsonrpc":"2.0","id":1,"result":"0x00"}"#)).await;
    let exit = exit(&upstream, Some(CHAIN)).await;
    let good = send(&Tx::new(2).sign());
    exit.json_rpc(good.as_bytes(), CAP).await.unwrap();
    assert!(upstream.request(0).ends_with(&good), "forwarded canonically");
    let wrong_chain = exit.json_rpc(send(&Tx { chain: Some(1), ..Tx::new(2) }.sign()).as_bytes(), CAP).await;
    assert_eq!(
        wrong_chain.unwrap_err(),
        ExitError::Forbidden("eth_sendRawTransaction: transaction is for chain 1, this exit relays chain 31337".into())
    );
    for raw in [
        [vec![3u8], Tx::new(2).sign()[1..].to_vec()].concat(),
        Tx { gas: 0, ..Tx::new(2) }.sign(),
        [Tx::new(0).sign(), vec![0]].concat(),
        Tx { chain: None, ..Tx::new(0) }.sign(),
    ] {
        let err = exit.json_rpc(send(&raw).as_bytes(), CAP).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{err}");
    }
    let mut small = JsonRpcConfig { upstream: upstream.url("/"), chain_id: Some(CHAIN), ..Default::default() };
    small.max_raw_tx_bytes = 100;
    let small = ExitServices::new(ExitConfig { json_rpc: Some(small), ..Default::default() }).unwrap();
    let big = Tx { data: vec![1; 200], gas: 100_000, ..Tx::new(2) }.sign();
    assert_eq!(small.json_rpc(send(&big).as_bytes(), CAP).await.unwrap_err().kind(), ErrorKind::TooLarge);
    assert_eq!(upstream.accepted(), 1, "only the valid transaction reached the upstream");
}
