#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod error;
pub mod phase1;
pub mod phase2;
pub mod pok;

pub use error::SetupError;
pub use phase1::Phase1;
pub use phase2::Phase2;

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};

/// Writes `magic` and `value` (compressed points).
pub(crate) fn encode<T: CanonicalSerialize>(magic: &[u8; 8], value: &T) -> Result<Vec<u8>, SetupError> {
    let mut out = magic.to_vec();
    value.serialize_compressed(&mut out).map_err(|e| SetupError::Encoding(e.to_string()))?;
    Ok(out)
}

/// Reads what [`encode`] wrote: the magic, then the value with every point checked (on the
/// curve, in the prime-order subgroup), nothing after it, and only in its one canonical
/// encoding (arkworks reads a point flagged as infinity whatever its coordinate bytes say; such
/// a file is refused, so every transcript has exactly one byte string).
pub(crate) fn decode<T: CanonicalDeserialize + CanonicalSerialize>(
    magic: &[u8; 8],
    bytes: &[u8],
) -> Result<T, SetupError> {
    let body = bytes
        .strip_prefix(magic.as_slice())
        .ok_or(SetupError::Format("wrong magic: not this kind of ceremony file, or another version"))?;
    let mut reader = body;
    let value = T::deserialize_compressed(&mut reader).map_err(|e| SetupError::Encoding(e.to_string()))?;
    if !reader.is_empty() {
        return Err(SetupError::Format("trailing bytes after the transcript"));
    }
    let mut again = Vec::with_capacity(body.len());
    value.serialize_compressed(&mut again).map_err(|e| SetupError::Encoding(e.to_string()))?;
    if again != body {
        return Err(SetupError::Format("not the canonical encoding of its points"));
    }
    Ok(value)
}

/// BLAKE3 of a transcript's encoding: how contributions name what they extend.
pub fn transcript_hash(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}
