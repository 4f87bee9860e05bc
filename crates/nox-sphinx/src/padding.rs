//! Body plaintext encoding: `0^16 ‖ payload ‖ 0x80 ‖ 0x00*` (ISO/IEC 7816-4),
//! with the integrity prefix and padding checked in constant time.

use subtle::ConstantTimeEq;

use crate::{error::SphinxError, geometry::INTEGRITY_LEN};

/// Writes `0^16 ‖ payload ‖ 0x80 ‖ 0^k` into `body`, which must be longer
/// than `payload` by at least `INTEGRITY_LEN + 1`.
pub(crate) fn encode_body(payload: &[u8], body: &mut [u8]) -> Result<(), SphinxError> {
    let capacity = body.len().saturating_sub(INTEGRITY_LEN + 1);
    if payload.len() > capacity {
        return Err(SphinxError::PayloadTooLarge { capacity, actual: payload.len() });
    }
    body.fill(0);
    let end = INTEGRITY_LEN + payload.len();
    body[INTEGRITY_LEN..end].copy_from_slice(payload);
    body[end] = 0x80;
    Ok(())
}

/// Checks the integrity prefix and removes the padding, returning the
/// payload's length. The running time depends only on `body.len()`: no
/// branch and no memory address depends on the contents.
pub(crate) fn decode_body(body: &[u8]) -> Result<usize, SphinxError> {
    if body.len() <= INTEGRITY_LEN {
        return Err(SphinxError::PayloadIntegrity);
    }
    let prefix_ok = body[..INTEGRITY_LEN].ct_eq(&[0u8; INTEGRITY_LEN]);
    let padded = &body[INTEGRITY_LEN..];
    // The marker is the last nonzero byte. Track its index and value over
    // whole words with masks (lzcnt is constant-time on the targets).
    let mut last_index = 0u64;
    let mut last_value = 0u64;
    let mut any = 0u64;
    let chunks = padded.chunks_exact(8);
    let tail = chunks.remainder();
    for (word_index, chunk) in chunks.enumerate() {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        scan_word(u64::from_le_bytes(bytes), (word_index * 8) as u64, &mut last_index, &mut last_value, &mut any);
    }
    let tail_start = (padded.len() - tail.len()) as u64;
    for (offset, byte) in tail.iter().enumerate() {
        scan_word(u64::from(*byte), tail_start + offset as u64, &mut last_index, &mut last_value, &mut any);
    }
    let marker_ok = any.ct_eq(&1) & last_value.ct_eq(&0x80);
    if !bool::from(prefix_ok) {
        return Err(SphinxError::PayloadIntegrity);
    }
    if !bool::from(marker_ok) {
        return Err(SphinxError::BadPadding);
    }
    Ok(last_index as usize)
}

/// Folds one little-endian word (bytes at `base..base+8`) into the running
/// "last nonzero byte" state, without branches on the data.
fn scan_word(word: u64, base: u64, last_index: &mut u64, last_value: &mut u64, any: &mut u64) {
    let nonzero = ((word | word.wrapping_neg()) >> 63) & 1; // 1 iff word != 0
    let mask = nonzero.wrapping_neg();
    // Highest nonzero byte of the word = the last one in memory order.
    let top_byte = 7 - u64::from(word.leading_zeros() & 63) / 8;
    let value = (word >> ((top_byte * 8) & 63)) & 0xff;
    *last_index = (*last_index & !mask) | ((base + top_byte) & mask);
    *last_value = (*last_value & !mask) | (value & mask);
    *any |= nonzero;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_all_lengths() {
        let mut body = [0u8; 64];
        for len in 0..=64 - INTEGRITY_LEN - 1 {
            let payload: Vec<u8> = (0..len as u8).map(|b| b | 0x80).collect();
            encode_body(&payload, &mut body).unwrap();
            let n = decode_body(&body).unwrap();
            assert_eq!(&body[INTEGRITY_LEN..INTEGRITY_LEN + n], &payload[..]);
        }
        assert!(encode_body(&[0u8; 48], &mut body).is_err());
    }

    #[test]
    fn rejects_bad_prefix_and_padding() {
        let mut body = [0u8; 64];
        encode_body(b"hi", &mut body).unwrap();
        let mut bad = body;
        bad[3] = 1;
        assert_eq!(decode_body(&bad), Err(SphinxError::PayloadIntegrity));
        let mut bad = body;
        bad[63] = 1;
        assert_eq!(decode_body(&bad), Err(SphinxError::BadPadding));
        let mut bad = body;
        bad[INTEGRITY_LEN + 2] = 0;
        assert_eq!(decode_body(&bad), Err(SphinxError::BadPadding));
    }
}
