//! Serde for BN254 scalars in the view file: 64 hex digits (a big-endian word).

use crate::error::WalletError;
use ark_bn254::Fr;
use nox_zk::field;
use serde::Deserialize;

/// Serde for scalars as 64 hex digits (a big-endian word).
pub(super) mod word {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn parse(s: &str) -> Result<Fr, WalletError> {
        let bytes = hex::decode(s).map_err(|_| WalletError::State("a word is not hexadecimal".into()))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| WalletError::State("a word is not 32 bytes".into()))?;
        field::from_be32(&bytes).map_err(|_| WalletError::State("a word is not a BN254 scalar".into()))
    }

    pub fn serialize<S: Serializer>(x: &Fr, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(field::to_be32(x)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Fr, D::Error> {
        let s = String::deserialize(d)?;
        parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Serde for optional scalars.
pub(super) mod opt_word {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &Option<Fr>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => s.serialize_some(&hex::encode(field::to_be32(x))),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Fr>, D::Error> {
        Option::<String>::deserialize(d)?.map(|s| word::parse(&s).map_err(serde::de::Error::custom)).transpose()
    }
}
