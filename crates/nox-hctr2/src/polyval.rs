//! POLYVAL (RFC 8452 §3) over whole 16-byte blocks.
//!
//! Three implementations behind one type, picked at run time:
//! - **AVX-512** (x86_64 with AVX-512F/BW and VPCLMULQDQ): thirty-two blocks
//!   per step, eight 512-bit rows of four blocks multiplied against the key
//!   powers `H^32 … H^1` (Karatsuba: three carry-less multiplications per
//!   block), the products summed unreduced, one reduction per step
//!   (aggregated reduction);
//! - **AVX2** (x86_64 with AVX2 and VPCLMULQDQ, e.g. Zen 3): sixteen blocks
//!   per step with 256-bit vectors, two blocks each;
//! - **portable**: RustCrypto's `polyval` (PCLMULQDQ four blocks at a time,
//!   or constant-time software, e.g. on wasm32).
//!
//! The single-block steps of the two wide ones (key powers, the last < 16
//! blocks) use 128-bit PCLMULQDQ. The `wide` module is the crate's only
//! `unsafe`. All compute the same function: `tests/properties.rs` and the
//! `hctr2` fuzz target check each wide one against the crate.

use polyval::universal_hash::UniversalHash;
#[cfg(target_arch = "x86_64")]
use zeroize::Zeroize;

/// Block length in bytes.
pub(crate) const BLOCK: usize = 16;

/// A POLYVAL implementation (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// 512-bit VPCLMULQDQ, thirty-two blocks per reduction.
    Avx512,
    /// 256-bit VPCLMULQDQ, sixteen blocks per reduction.
    Avx2,
    /// RustCrypto's `polyval`.
    Portable,
}

impl Backend {
    /// The fastest implementation this CPU runs (detected once per process).
    pub fn detect() -> Self {
        static DETECTED: std::sync::OnceLock<Backend> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| Self::all().into_iter().find(|b| b.available()).unwrap_or(Backend::Portable))
    }

    /// Every implementation, fastest first.
    pub fn all() -> [Backend; 3] {
        [Backend::Avx512, Backend::Avx2, Backend::Portable]
    }

    /// Whether this CPU runs it.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512 => wide::avx512_available(),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2 => wide::avx2_available(),
            #[cfg(not(target_arch = "x86_64"))]
            Backend::Avx512 | Backend::Avx2 => false,
            Backend::Portable => true,
        }
    }
}

/// A POLYVAL instance for one key `H`: absorb whole blocks with
/// [`Polyval::update`], read the accumulator with [`Polyval::finish`].
// The wide state (1 KiB of key powers) is much larger than the portable one;
// boxing it would put a heap allocation in every hop's key setup instead.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Polyval {
    #[cfg(target_arch = "x86_64")]
    Wide(wide::State),
    Portable(polyval::Polyval),
}

impl Polyval {
    /// A fresh accumulator for key `h` on `backend`, which the caller has
    /// checked is [`Backend::available`] (an unavailable one falls back to
    /// the portable implementation rather than fault).
    pub(crate) fn new(h: &[u8; BLOCK], backend: Backend) -> Self {
        #[cfg(target_arch = "x86_64")]
        if backend != Backend::Portable && backend.available() {
            // SAFETY: `available` checked the CPU features of this backend.
            return Polyval::Wide(unsafe { wide::State::new(h, backend == Backend::Avx512) });
        }
        let _ = backend;
        Polyval::Portable(polyval::Polyval::new(h.into()))
    }

    /// Absorbs `data`, whose length must be a multiple of 16 (callers pad).
    pub(crate) fn update(&mut self, data: &[u8]) {
        debug_assert!(data.len().is_multiple_of(BLOCK));
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Wide` state exists only where its backend's features were detected.
            Polyval::Wide(state) => unsafe { state.update(data) },
            Polyval::Portable(p) => p.update_padded(data),
        }
    }

    /// The current accumulator, leaving the state as it was, so that a
    /// common prefix (length block and tweak) is hashed once and cloned.
    pub(crate) fn finish(&self) -> [u8; BLOCK] {
        match self {
            #[cfg(target_arch = "x86_64")]
            Polyval::Wide(state) => state.accumulator(),
            Polyval::Portable(p) => {
                let mut out = [0u8; BLOCK];
                out.copy_from_slice(&p.clone().finalize());
                out
            }
        }
    }

    /// A copy of this state (same key, same accumulator).
    pub(crate) fn duplicate(&self) -> Self {
        match self {
            #[cfg(target_arch = "x86_64")]
            Polyval::Wide(state) => Polyval::Wide(state.clone()),
            Polyval::Portable(p) => Polyval::Portable(p.clone()),
        }
    }
}

impl Drop for Polyval {
    fn drop(&mut self) {
        // `polyval::Polyval` wipes itself on drop (its `zeroize` feature).
        #[cfg(target_arch = "x86_64")]
        if let Polyval::Wide(state) = self {
            state.zeroize();
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use core::arch::x86_64::*;

    use zeroize::Zeroize;

    use super::BLOCK;

    /// Blocks per aggregated step of the 512-bit code: eight rows of four.
    const STEP512: usize = 32;
    /// Blocks per aggregated step of the 256-bit code: eight rows of two.
    /// (Measured on AMD EPYC over a 32,512-byte body: 32-block steps are the
    /// fastest with 512-bit vectors, 16-block ones with 256-bit vectors, and
    /// 64-block steps are slower than 32 in both.)
    const STEP256: usize = 16;

    /// Whether this CPU runs the 512-bit step.
    pub(super) fn avx512_available() -> bool {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") && avx2_available()
    }

    /// Whether this CPU runs the 256-bit step (and the 128-bit single blocks).
    pub(super) fn avx2_available() -> bool {
        std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("vpclmulqdq")
            && std::is_x86_feature_detected!("pclmulqdq")
            && std::is_x86_feature_detected!("sse4.1")
    }

    /// Key powers and accumulator, as little-endian 128-bit field elements.
    ///
    /// The products are Karatsuba's: per block `lo = d₀k₀`, `hi = d₁k₁` and
    /// `(d₀⊕d₁)(k₀⊕k₁)`, three carry-less multiplications instead of four;
    /// `k₀⊕k₁` of each power is precomputed in `folded`. The middle term
    /// `(d₀⊕d₁)(k₀⊕k₁) ⊕ lo ⊕ hi` is formed once per step, on the sums.
    #[derive(Clone)]
    pub(crate) struct State {
        /// `powers[i]` = `H^(32 - i)`: lane `j` of the `r`-th 512-bit row is
        /// the power for block `4r + j` of a 32-block step; the 256-bit step
        /// reads the last sixteen, `H^16 … H^1`.
        powers: [[u8; BLOCK]; STEP512],
        /// `folded[i]`: both 64-bit halves of `powers[i]` XORed, in both halves.
        folded: [[u8; BLOCK]; STEP512],
        acc: [u8; BLOCK],
        /// 512-bit steps (else 256-bit).
        avx512: bool,
    }

    impl Zeroize for State {
        fn zeroize(&mut self) {
            self.powers.zeroize();
            self.folded.zeroize();
            self.acc.zeroize();
        }
    }

    impl State {
        /// # Safety
        /// The CPU must have the features [`avx2_available`] checks and, if
        /// `avx512`, those [`avx512_available`] checks.
        #[target_feature(enable = "pclmulqdq,sse4.1")]
        pub(super) unsafe fn new(h: &[u8; BLOCK], avx512: bool) -> Self {
            let mut state =
                Self { powers: [[0; BLOCK]; STEP512], folded: [[0; BLOCK]; STEP512], acc: [0; BLOCK], avx512 };
            // The 256-bit step needs H^16 … H^1 only. Two independent chains
            // (odd and even powers, each times H²) halve the latency.
            let count = if avx512 { STEP512 } else { STEP256 };
            let h1 = load128(h);
            let h2 = mul(h1, h1);
            let (mut odd, mut even) = (h1, h2);
            for k in (1..=count).step_by(2) {
                state.set_power(k, odd);
                state.set_power(k + 1, even);
                odd = mul(odd, h2);
                even = mul(even, h2);
            }
            state
        }

        /// Stores `H^k` and its folded halves.
        #[target_feature(enable = "sse4.1")]
        fn set_power(&mut self, k: usize, p: __m128i) {
            store128(&mut self.powers[STEP512 - k], p);
            store128(&mut self.folded[STEP512 - k], _mm_xor_si128(p, _mm_shuffle_epi32::<0x4e>(p)));
        }

        pub(super) fn accumulator(&self) -> [u8; BLOCK] {
            self.acc
        }

        /// # Safety
        /// As for [`State::new`]; `data.len()` is a multiple of 16.
        pub(super) unsafe fn update(&mut self, data: &[u8]) {
            // SAFETY: the features each step needs were detected for this state.
            unsafe { if self.avx512 { self.update512(data) } else { self.update256(data) } }
        }

        /// # Safety
        /// As for [`State::new`] with `avx512`.
        #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,sse4.1")]
        unsafe fn update512(&mut self, data: &[u8]) {
            let mut acc = load128(&self.acc);
            let mut steps = data.chunks_exact(STEP512 * BLOCK);
            if steps.len() > 0 {
                let k = load512x8(self.powers.as_flattened());
                let kf = load512x8(self.folded.as_flattened());
                for step in &mut steps {
                    let d = load512x8(step);
                    let d0 = _mm512_xor_si512(d[0], _mm512_zextsi128_si512(acc));
                    let (mut lo, mut hi, mut mid) = products(d0, k[0], kf[0]);
                    for r in 1..8 {
                        let (l, h, m) = products(d[r], k[r], kf[r]);
                        lo = _mm512_xor_si512(lo, l);
                        hi = _mm512_xor_si512(hi, h);
                        mid = _mm512_xor_si512(mid, m);
                    }
                    acc = karatsuba_reduce(fold(lo), fold(hi), fold(mid));
                }
            }
            self.finish_blocks(acc, steps.remainder());
        }

        /// # Safety
        /// As for [`State::new`].
        #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.1")]
        unsafe fn update256(&mut self, data: &[u8]) {
            let mut acc = load128(&self.acc);
            let mut steps = data.chunks_exact(STEP256 * BLOCK);
            if steps.len() > 0 {
                let first = STEP512 - STEP256;
                let k = load256x8(self.powers[first..].as_flattened());
                let kf = load256x8(self.folded[first..].as_flattened());
                for step in &mut steps {
                    let d = load256x8(step);
                    let d0 = _mm256_xor_si256(d[0], _mm256_zextsi128_si256(acc));
                    let (mut lo, mut hi, mut mid) = products256(d0, k[0], kf[0]);
                    for r in 1..8 {
                        let (l, h, m) = products256(d[r], k[r], kf[r]);
                        lo = _mm256_xor_si256(lo, l);
                        hi = _mm256_xor_si256(hi, h);
                        mid = _mm256_xor_si256(mid, m);
                    }
                    acc = karatsuba_reduce(fold256(lo), fold256(hi), fold256(mid));
                }
            }
            self.finish_blocks(acc, steps.remainder());
        }

        /// The blocks after the last whole step, one at a time, and the store.
        #[target_feature(enable = "pclmulqdq,sse4.1")]
        fn finish_blocks(&mut self, mut acc: __m128i, rest: &[u8]) {
            let h1 = load128(&self.powers[STEP512 - 1]);
            for block in rest.chunks_exact(BLOCK) {
                acc = mul(_mm_xor_si128(acc, load128(block)), h1);
            }
            store128(&mut self.acc, acc);
        }
    }

    /// Eight 512-bit rows from 512 bytes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load512x8(bytes: &[u8]) -> [__m512i; 8] {
        assert!(bytes.len() >= 8 * 64);
        let p = bytes.as_ptr();
        // SAFETY: 512 readable bytes (asserted); unaligned loads.
        core::array::from_fn(|r| unsafe { _mm512_loadu_si512(p.add(64 * r).cast()) })
    }

    /// Eight 256-bit rows from 256 bytes.
    #[inline]
    #[target_feature(enable = "avx")]
    fn load256x8(bytes: &[u8]) -> [__m256i; 8] {
        assert!(bytes.len() >= 8 * 32);
        let p = bytes.as_ptr();
        // SAFETY: 256 readable bytes (asserted); unaligned loads.
        core::array::from_fn(|r| unsafe { _mm256_loadu_si256(p.add(32 * r).cast()) })
    }

    /// [`products`] on 256-bit vectors.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn products256(d: __m256i, k: __m256i, k_folded: __m256i) -> (__m256i, __m256i, __m256i) {
        let d_folded = _mm256_xor_si256(d, _mm256_shuffle_epi32::<0x4e>(d));
        let lo = _mm256_clmulepi64_epi128::<0x00>(d, k);
        let hi = _mm256_clmulepi64_epi128::<0x11>(d, k);
        let mid = _mm256_clmulepi64_epi128::<0x00>(d_folded, k_folded);
        (lo, hi, mid)
    }

    /// XOR of the two 128-bit lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn fold256(x: __m256i) -> __m128i {
        _mm_xor_si128(_mm256_castsi256_si128(x), _mm256_extracti128_si256::<1>(x))
    }

    /// Lane-wise Karatsuba products of data `d` and key powers `k` (with
    /// `k_folded` = `k₀⊕k₁`), unreduced: `d₀k₀`, `d₁k₁`, `(d₀⊕d₁)(k₀⊕k₁)`.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn products(d: __m512i, k: __m512i, k_folded: __m512i) -> (__m512i, __m512i, __m512i) {
        let d_folded = _mm512_xor_si512(d, _mm512_shuffle_epi32::<0x4e>(d));
        let lo = _mm512_clmulepi64_epi128::<0x00>(d, k);
        let hi = _mm512_clmulepi64_epi128::<0x11>(d, k);
        let mid = _mm512_clmulepi64_epi128::<0x00>(d_folded, k_folded);
        (lo, hi, mid)
    }

    /// XOR of the four 128-bit lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn fold(x: __m512i) -> __m128i {
        let y = _mm256_xor_si256(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64::<1>(x));
        _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256::<1>(y))
    }

    /// The reduced sum of a step's Karatsuba products (each already summed
    /// over the step's blocks): the middle term is `mid ⊕ lo ⊕ hi`.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse4.1")]
    fn karatsuba_reduce(lo: __m128i, hi: __m128i, mid: __m128i) -> __m128i {
        let mid = _mm_xor_si128(mid, _mm_xor_si128(lo, hi));
        reduce(_mm_xor_si128(lo, _mm_slli_si128::<8>(mid)), _mm_xor_si128(hi, _mm_srli_si128::<8>(mid)))
    }

    /// `a • b = a·b·x^-128` in POLYVAL's field.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse4.1")]
    fn mul(a: __m128i, b: __m128i) -> __m128i {
        let lo = _mm_clmulepi64_si128::<0x00>(a, b);
        let hi = _mm_clmulepi64_si128::<0x11>(a, b);
        let mid = _mm_xor_si128(_mm_clmulepi64_si128::<0x01>(a, b), _mm_clmulepi64_si128::<0x10>(a, b));
        reduce(_mm_xor_si128(lo, _mm_slli_si128::<8>(mid)), _mm_xor_si128(hi, _mm_srli_si128::<8>(mid)))
    }

    /// Montgomery-style reduction of the 256-bit product `hi·x^128 + lo`:
    /// returns `(hi·x^128 + lo)·x^-128 mod P`, P = x^128 + x^127 + x^126 +
    /// x^121 + 1, in two folds of 64 bits by the constant
    /// `0xc200000000000000` (x^-64 mod P's low terms, RFC 8452's field).
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse4.1")]
    fn reduce(lo: __m128i, hi: __m128i) -> __m128i {
        let poly = _mm_set_epi64x(0xc200_0000_0000_0000_u64 as i64, 1);
        let t = _mm_clmulepi64_si128::<0x10>(lo, poly);
        let lo = _mm_xor_si128(_mm_shuffle_epi32::<0x4e>(lo), t);
        let t = _mm_clmulepi64_si128::<0x10>(lo, poly);
        let lo = _mm_xor_si128(_mm_shuffle_epi32::<0x4e>(lo), t);
        _mm_xor_si128(hi, lo)
    }

    #[inline]
    fn load128(bytes: &[u8]) -> __m128i {
        assert!(bytes.len() >= BLOCK);
        // SAFETY: at least 16 readable bytes (asserted); unaligned load.
        unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
    }

    #[inline]
    fn store128(out: &mut [u8; BLOCK], x: __m128i) {
        // SAFETY: 16 writable bytes; unaligned store.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), x) }
    }
}
