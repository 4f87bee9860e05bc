//! XCTR: counter mode whose counter is XORed into the IV, not added:
//! keystream block `i` (from 1) is `E(S ⊕ le128(i))`.

use aes::{
    Aes128,
    cipher::{Array, BlockCipherEncrypt, consts::U16},
};
use zeroize::Zeroize;

use crate::polyval::BLOCK;

/// Blocks enciphered per call into the AES backend (its VAES path works on
/// several blocks at once; 1 KiB of keystream stays in L1).
const BATCH: usize = 64;

/// XORs the XCTR keystream for IV `s` into `data`.
pub(crate) fn apply(aes: &Aes128, s: &[u8; BLOCK], data: &mut [u8]) {
    let iv = u128::from_le_bytes(*s);
    let mut ks = [Array::<u8, U16>::default(); BATCH];
    let mut counter: u128 = 1;
    for chunk in data.chunks_mut(BATCH * BLOCK) {
        let blocks = chunk.len().div_ceil(BLOCK);
        for block in &mut ks[..blocks] {
            *block = Array::from((iv ^ counter).to_le_bytes());
            counter += 1;
        }
        aes.encrypt_blocks(&mut ks[..blocks]);
        let stream = Array::slice_as_flattened(&ks[..blocks]);
        let whole = chunk.len() - chunk.len() % BLOCK;
        for (d, k) in chunk[..whole].chunks_exact_mut(BLOCK).zip(stream.chunks_exact(BLOCK)) {
            let mut x = [0u8; BLOCK];
            x.copy_from_slice(d);
            let mut y = [0u8; BLOCK];
            y.copy_from_slice(k);
            d.copy_from_slice(&(u128::from_ne_bytes(x) ^ u128::from_ne_bytes(y)).to_ne_bytes());
        }
        for (d, k) in chunk[whole..].iter_mut().zip(&stream[whole..]) {
            *d ^= k;
        }
    }
    for block in &mut ks {
        block.as_mut_slice().zeroize();
    }
}
