//! Bloom filter sizing: bits `m` and hash count `k` from a capacity and a false-positive rate.

use crate::error::ParameterError;

/// Largest supported filter, 2³⁴ bits (2 GiB): far above any sane configuration, and a bound on
/// what a corrupt snapshot header can make us allocate.
pub const MAX_FILTER_BITS: u64 = 1 << 34;

/// Largest supported number of hash functions (a 10⁻⁹ FP target needs 30).
pub const MAX_HASHES: u32 = 32;

/// The shape of a Bloom filter and the load it was designed for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BloomParameters {
    bits: u64,
    hashes: u32,
    design_capacity: u64,
    design_false_positive_rate: f64,
}

impl BloomParameters {
    /// Optimal parameters for `capacity` distinct tags at `false_positive_rate`:
    /// `m = ⌈−n·ln p / (ln 2)²⌉` rounded up to a multiple of 64, `k = round((m/n)·ln 2)`.
    ///
    /// For the paper's 10⁷ tags at 0.1 %: m = 143,775,936 bits (17,971,992 bytes ≈ 18.0 MB =
    /// 17.1 MiB), k = 10.
    pub fn for_capacity(capacity: u64, false_positive_rate: f64) -> Result<Self, ParameterError> {
        if capacity == 0 {
            return Err(ParameterError::ZeroCapacity);
        }
        if !(false_positive_rate > 0.0 && false_positive_rate < 1.0) {
            return Err(ParameterError::FalsePositiveRate(false_positive_rate));
        }
        let ln2 = std::f64::consts::LN_2;
        let exact_bits = -(capacity as f64) * false_positive_rate.ln() / (ln2 * ln2);
        if exact_bits >= MAX_FILTER_BITS as f64 {
            return Err(ParameterError::TooLarge(exact_bits as u64));
        }
        let bits = (exact_bits.ceil() as u64).max(64).div_ceil(64) * 64;
        let hashes = ((bits as f64 / capacity as f64) * ln2).round().clamp(1.0, MAX_HASHES as f64);
        Self::from_parts(bits, hashes as u32, capacity, false_positive_rate)
    }

    /// Explicit parameters (as read from a snapshot), validated.
    pub fn from_parts(
        bits: u64,
        hashes: u32,
        design_capacity: u64,
        design_false_positive_rate: f64,
    ) -> Result<Self, ParameterError> {
        if bits > MAX_FILTER_BITS {
            return Err(ParameterError::TooLarge(bits));
        }
        if bits == 0 || !bits.is_multiple_of(64) || hashes == 0 || hashes > MAX_HASHES {
            return Err(ParameterError::Shape { bits, hashes });
        }
        if design_capacity == 0 {
            return Err(ParameterError::ZeroCapacity);
        }
        if !(design_false_positive_rate > 0.0 && design_false_positive_rate < 1.0) {
            return Err(ParameterError::FalsePositiveRate(design_false_positive_rate));
        }
        Ok(Self { bits, hashes, design_capacity, design_false_positive_rate })
    }

    /// `m`, the number of bits (a multiple of 64).
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// `k`, the number of bit positions per tag.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Number of 64-bit words of the bit array.
    pub fn words(&self) -> usize {
        // bits <= 2^34, so this fits in usize on every 64-bit target; on 32-bit targets the
        // allocation would fail anyway.
        (self.bits / 64) as usize
    }

    /// Bytes of the bit array.
    pub fn memory_bytes(&self) -> u64 {
        self.bits / 8
    }

    /// The tag count the filter was sized for.
    pub fn design_capacity(&self) -> u64 {
        self.design_capacity
    }

    /// The false-positive rate targeted at `design_capacity`.
    pub fn design_false_positive_rate(&self) -> f64 {
        self.design_false_positive_rate
    }

    /// Expected false-positive rate after `items` distinct insertions:
    /// `(1 − e^{−k·n/m})^k`.
    pub fn expected_false_positive_rate(&self, items: u64) -> f64 {
        let k = f64::from(self.hashes);
        (1.0 - (-k * items as f64 / self.bits as f64).exp()).powf(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_parameters() {
        let params = BloomParameters::for_capacity(10_000_000, 0.001).unwrap();
        assert_eq!(params.bits(), 143_775_936);
        assert_eq!(params.hashes(), 10);
        assert_eq!(params.memory_bytes(), 17_971_992);
        let at_capacity = params.expected_false_positive_rate(10_000_000);
        assert!((at_capacity - 0.001).abs() < 0.0001, "{at_capacity}");
    }

    #[test]
    fn rejects_bad_inputs() {
        assert_eq!(BloomParameters::for_capacity(0, 0.01), Err(ParameterError::ZeroCapacity));
        assert!(BloomParameters::for_capacity(10, 0.0).is_err());
        assert!(BloomParameters::for_capacity(10, 1.0).is_err());
        assert!(BloomParameters::for_capacity(10, f64::NAN).is_err());
        assert!(matches!(BloomParameters::for_capacity(u64::MAX, 1e-9), Err(ParameterError::TooLarge(_))));
        assert!(BloomParameters::from_parts(100, 3, 10, 0.01).is_err());
        assert!(BloomParameters::from_parts(128, 0, 10, 0.01).is_err());
        assert!(BloomParameters::from_parts(128, 33, 10, 0.01).is_err());
        assert!(BloomParameters::from_parts(MAX_FILTER_BITS + 64, 3, 10, 0.01).is_err());
    }

    #[test]
    fn tiny_capacity_still_has_a_word() {
        let params = BloomParameters::for_capacity(1, 0.5).unwrap();
        assert_eq!(params.bits(), 64);
        assert!(params.hashes() >= 1);
    }
}
