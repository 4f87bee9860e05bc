//! How a message is cut into shards: the number of data and parity shards and
//! the shard length, all derived from the message length and the per-packet
//! fragment size.

use crate::error::LayoutError;
use crate::wire::HEADER_LEN;

/// Largest d + p. The shard index is one byte on the wire, and the NOX paper
/// bounds the shard count at 255 (its GF(2⁸) field size). The backend
/// (`reed-solomon-simd`, GF(2¹⁶)) would accept more; 255 keeps the header at
/// one byte per count and bounds the work of one decode.
pub const MAX_TOTAL_SHARDS: usize = 255;

/// Smallest usable `max_fragment_len`: the header and a two-byte shard.
pub const MIN_FRAGMENT_LEN: usize = HEADER_LEN + 2;

/// Shard lengths are even: the backend codes 16-bit symbols.
const SHARD_ALIGN: usize = 2;

/// The shape of one encoded message: data shards d, parity shards p, the
/// original length, and the derived shard length.
///
/// The shard length is not chosen freely: it is
/// `max(2, round_up_to_even(ceil(message_len / d)))`, so every fragment of a
/// message has the same length and a receiver can check it from the header
/// alone. A layout is valid when `1 <= d`, `d + p <= 255`, the length fits in
/// 32 bits, and no data shard is pure padding (`d == 1` or
/// `(d - 1) * shard_len < message_len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    message_len: u32,
    data_shards: u8,
    parity_shards: u8,
    shard_len: u32,
}

/// How many parity shards to add to d data shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parity {
    /// No parity: every data shard must arrive.
    None,
    /// Exactly this many parity shards.
    Fixed(usize),
    /// p = ceil(d · r) for a ratio r.
    Ratio(ParityRatio),
}

/// A parity ratio r in parity shards per thousand data shards, so that
/// p = ceil(d · r) is computed exactly in integers (r = 0.3 is
/// `ParityRatio::per_mille(300)`; with d = 11 it gives p = 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ParityRatio {
    per_mille: u32,
}

/// Largest ratio accepted: 100 parity shards per data shard.
const MAX_RATIO_PER_MILLE: u32 = 100_000;

impl ParityRatio {
    /// A ratio of `per_mille` parity shards per thousand data shards.
    pub fn per_mille(per_mille: u32) -> Result<Self, LayoutError> {
        if per_mille > MAX_RATIO_PER_MILLE {
            return Err(LayoutError::RatioTooLarge { per_mille });
        }
        Ok(Self { per_mille })
    }

    /// A ratio of `percent` parity shards per hundred data shards.
    pub fn percent(percent: u32) -> Result<Self, LayoutError> {
        Self::per_mille(percent.saturating_mul(10))
    }

    /// The ratio in parity shards per thousand data shards.
    pub fn as_per_mille(self) -> u32 {
        self.per_mille
    }

    /// The ratio as a fraction (0.3 for 300 per mille).
    pub fn as_f64(self) -> f64 {
        f64::from(self.per_mille) / 1000.0
    }

    /// p = ceil(d · r).
    pub fn parity_for(self, data_shards: usize) -> usize {
        (data_shards.saturating_mul(self.per_mille as usize)).div_ceil(1000)
    }
}

impl Parity {
    /// The number of parity shards for `data_shards` data shards.
    pub fn parity_for(self, data_shards: usize) -> usize {
        match self {
            Self::None => 0,
            Self::Fixed(parity) => parity,
            Self::Ratio(ratio) => ratio.parity_for(data_shards),
        }
    }
}

/// Shard bytes available in a fragment of at most `max_fragment_len` bytes:
/// the length after the header, rounded down to an even number.
pub fn shard_capacity(max_fragment_len: usize) -> Result<usize, LayoutError> {
    if max_fragment_len < MIN_FRAGMENT_LEN {
        return Err(LayoutError::FragmentTooSmall { max_fragment_len, min: MIN_FRAGMENT_LEN });
    }
    let room = max_fragment_len - HEADER_LEN;
    Ok(room - room % SHARD_ALIGN)
}

/// The fewest data shards that carry `message_len` bytes in fragments of at
/// most `max_fragment_len` bytes (at least one).
pub fn data_shards_for(message_len: usize, max_fragment_len: usize) -> Result<usize, LayoutError> {
    let capacity = shard_capacity(max_fragment_len)?;
    let data_shards = message_len.div_ceil(capacity).max(1);
    if data_shards > MAX_TOTAL_SHARDS {
        return Err(LayoutError::MessageTooLarge { message_len, max: MAX_TOTAL_SHARDS * capacity });
    }
    Ok(data_shards)
}

/// `max(2, round_up_to_even(ceil(L / d)))`, or `None` if it overflows `usize`
/// (L = 2³² − 1 with d = 1 on a 32-bit target, where an unchecked rounding
/// would wrap to 0 and accept the layout).
fn shard_len_for(message_len: usize, data_shards: usize) -> Option<usize> {
    let per_shard = message_len.div_ceil(data_shards);
    Some(per_shard.checked_next_multiple_of(SHARD_ALIGN)?.max(SHARD_ALIGN))
}

impl Layout {
    /// The layout of a `message_len`-byte message in exactly `data_shards`
    /// data shards and `parity_shards` parity shards.
    pub fn new(message_len: usize, data_shards: usize, parity_shards: usize) -> Result<Self, LayoutError> {
        if data_shards == 0 {
            return Err(LayoutError::NoDataShards);
        }
        if data_shards.saturating_add(parity_shards) > MAX_TOTAL_SHARDS {
            return Err(LayoutError::TooManyShards { data: data_shards, parity: parity_shards });
        }
        let Ok(length_field) = u32::try_from(message_len) else {
            return Err(LayoutError::MessageTooLarge { message_len, max: u32::MAX as usize });
        };
        let Some(shard_len) = shard_len_for(message_len, data_shards) else {
            // Only d = 1 can overflow, so no PaddingOnlyShard check is skipped.
            return Err(LayoutError::MessageTooLarge { message_len, max: u32::MAX as usize - 1 });
        };
        if data_shards > 1 && (data_shards - 1) * shard_len >= message_len {
            return Err(LayoutError::PaddingOnlyShard { message_len, data_shards });
        }
        // Rounding up to even overflows 32 bits when d = 1 and the length is
        // u32::MAX.
        let Ok(shard_field) = u32::try_from(shard_len) else {
            return Err(LayoutError::MessageTooLarge { message_len, max: u32::MAX as usize - 1 });
        };
        // Both counts are at most 255 after the check above.
        let (Ok(data), Ok(parity)) = (u8::try_from(data_shards), u8::try_from(parity_shards)) else {
            return Err(LayoutError::TooManyShards { data: data_shards, parity: parity_shards });
        };
        Ok(Self { message_len: length_field, data_shards: data, parity_shards: parity, shard_len: shard_field })
    }

    /// The layout with the fewest data shards for fragments of at most
    /// `max_fragment_len` bytes, and parity chosen by `parity`.
    pub fn for_message(message_len: usize, max_fragment_len: usize, parity: Parity) -> Result<Self, LayoutError> {
        let data_shards = data_shards_for(message_len, max_fragment_len)?;
        Self::new(message_len, data_shards, parity.parity_for(data_shards))
    }

    /// Length of the original message in bytes.
    pub fn message_len(&self) -> usize {
        self.message_len as usize
    }

    /// Data shards d: any d distinct shards rebuild the message.
    pub fn data_shards(&self) -> usize {
        usize::from(self.data_shards)
    }

    /// Parity shards p: up to p shards may be lost.
    pub fn parity_shards(&self) -> usize {
        usize::from(self.parity_shards)
    }

    /// d + p: the number of fragments (and SURBs) the message uses.
    pub fn total_shards(&self) -> usize {
        self.data_shards() + self.parity_shards()
    }

    /// Length of every shard in bytes (even, at least 2).
    pub fn shard_len(&self) -> usize {
        self.shard_len as usize
    }

    /// Length of every encoded fragment: header plus shard.
    pub fn fragment_len(&self) -> usize {
        HEADER_LEN + self.shard_len()
    }

    pub(crate) fn message_len_field(&self) -> u32 {
        self.message_len
    }

    pub(crate) fn count_fields(&self) -> (u8, u8) {
        (self.data_shards, self.parity_shards)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_length_rounding_overflow_is_refused_not_wrapped() {
        // On 64-bit targets usize::MAX stands in for u32::MAX on 32-bit
        // ones: rounding it up to even must fail, not wrap to 0.
        assert_eq!(shard_len_for(usize::MAX, 1), None);
        assert_eq!(shard_len_for(usize::MAX, 2), Some(usize::MAX / 2 + 1));
        assert_eq!(shard_len_for(0, 1), Some(2));
        assert_eq!(shard_len_for(7, 2), Some(4));
    }
}
