//! The bit array and the derivation of a tag's bit positions.
//!
//! Tags are BLAKE3 outputs, already uniform, so no further hashing is needed: the first two
//! little-endian 64-bit words `h1`, `h2` of the tag drive double hashing with a quadratic
//! term, all mod 2⁶⁴: `g_0 = h1`, `s_0 = h2`, `g_{i+1} = g_i + s_i`, `s_{i+1} = s_i + φ`, so
//! `g_i = h1 + i·h2 + φ·i(i−1)/2` with φ = 0x9E37_79B9_7F4A_7C15 (2⁶⁴ divided by the golden
//! ratio). Each `g_i` is mapped to `[0, m)` by Lemire's multiply-shift `⌊g_i · m / 2⁶⁴⌋` (no
//! division; bias at most m/2⁶⁴). Multiply-shift uses the *high* bits of `g_i`, so the
//! quadratic term must be large: with the textbook "enhanced" increment `i + 1`, a tag with a
//! small `h2` would put all k positions on one bit (a unit test pins this down).

use crate::params::BloomParameters;

/// 2⁶⁴/golden ratio, odd: consecutive multiples are spread over the whole 64-bit range.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Bits per page of the snapshot page map: one 4 KiB memory page.
pub(crate) const WORDS_PER_PAGE: usize = 512;

/// The k bit positions of `tag` in a filter of `bits` bits.
pub(crate) fn bit_positions(tag: &[u8; 32], bits: u64, hashes: u32) -> impl Iterator<Item = u64> {
    let mut first = [0u8; 8];
    let mut second = [0u8; 8];
    first.copy_from_slice(&tag[0..8]);
    second.copy_from_slice(&tag[8..16]);
    let mut position_hash = u64::from_le_bytes(first);
    let mut step = u64::from_le_bytes(second);
    (0..hashes).map(move |_| {
        let position = ((u128::from(position_hash) * u128::from(bits)) >> 64) as u64;
        position_hash = position_hash.wrapping_add(step);
        step = step.wrapping_add(GOLDEN_GAMMA);
        position
    })
}

/// A fixed-size bit array with a running count of set bits.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct BitArray {
    /// `vec![0; n]` allocates with `calloc`/`alloc_zeroed`: the kernel hands out zero pages
    /// lazily, so untouched parts of a large filter are not resident (do not "initialise" it).
    words: Vec<u64>,
    set_bits: u64,
}

impl BitArray {
    pub(crate) fn zeroed(params: &BloomParameters) -> Self {
        Self { words: vec![0u64; params.words()], set_bits: 0 }
    }

    pub(crate) fn contains(&self, tag: &[u8; 32], params: &BloomParameters) -> bool {
        bit_positions(tag, params.bits(), params.hashes()).all(|position| {
            let (word, mask) = locate(position);
            self.words.get(word).is_some_and(|value| value & mask != 0)
        })
    }

    /// Sets the tag's bits; returns how many were newly set (0 means "already present").
    pub(crate) fn insert(&mut self, tag: &[u8; 32], params: &BloomParameters) -> u32 {
        let mut newly_set = 0;
        for position in bit_positions(tag, params.bits(), params.hashes()) {
            let (word, mask) = locate(position);
            if let Some(value) = self.words.get_mut(word)
                && *value & mask == 0
            {
                *value |= mask;
                newly_set += 1;
            }
        }
        self.set_bits += u64::from(newly_set);
        newly_set
    }

    pub(crate) fn set_bits(&self) -> u64 {
        self.set_bits
    }

    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    pub(crate) fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    pub(crate) fn recount(&mut self) {
        self.set_bits = self.words.iter().map(|word| u64::from(word.count_ones())).sum();
    }
}

fn locate(position: u64) -> (usize, u64) {
    ((position / 64) as usize, 1u64 << (position % 64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_in_range_and_deterministic() {
        let tag = [0xA5u8; 32];
        let first: Vec<u64> = bit_positions(&tag, 1000 * 64, 10).collect();
        let second: Vec<u64> = bit_positions(&tag, 1000 * 64, 10).collect();
        assert_eq!(first, second);
        assert_eq!(first.len(), 10);
        assert!(first.iter().all(|p| *p < 64_000));
        let all_ones = [0xFFu8; 32];
        assert!(bit_positions(&all_ones, 64, 32).all(|p| p < 64));
    }

    #[test]
    fn positions_spread_even_for_a_zero_step() {
        // A small h2 must not collapse the k positions onto one bit (with h2 = 0 only g_0 and
        // g_1 coincide).
        for step in [0u8, 1] {
            let mut tag = [0u8; 32];
            tag[0] = 1;
            tag[8] = step;
            let positions: std::collections::BTreeSet<u64> = bit_positions(&tag, 1 << 20, 10).collect();
            assert!(positions.len() >= 9, "h2 = {step}: {positions:?}");
        }
    }
}
