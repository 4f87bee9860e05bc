//! Byte reader and writer helpers shared by the encoders and decoders.

use crate::MessageError;

/// A cursor over untrusted bytes; every read is bounds-checked.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    pub(crate) fn take(&mut self, field: &'static str, needed: usize) -> Result<&'a [u8], MessageError> {
        if needed > self.bytes.len() {
            return Err(MessageError::Truncated { field, needed, remaining: self.bytes.len() });
        }
        let (head, tail) = self.bytes.split_at(needed);
        self.bytes = tail;
        Ok(head)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, MessageError> {
        Ok(self.take(field, 1)?[0])
    }

    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, MessageError> {
        let b = self.take(field, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, MessageError> {
        let b = self.take(field, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// All remaining bytes.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.bytes)
    }

    pub(crate) fn finish(self) -> Result<(), MessageError> {
        match self.bytes.len() {
            0 => Ok(()),
            extra => Err(MessageError::TrailingBytes { extra }),
        }
    }
}

/// Writes a length as LE16. Callers validate first; an out-of-range length
/// is written saturated so that the decoder refuses the result.
pub(crate) fn put_u16_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_le_bytes());
}

/// Writes a length as LE32, saturated like [`put_u16_len`].
pub(crate) fn put_u32_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
}

/// Checks `len` against `1..=max` (or `0..=max` when `min` is 0).
pub(crate) fn check_len(field: &'static str, len: usize, min: usize, max: usize) -> Result<(), MessageError> {
    if len > max {
        return Err(MessageError::FieldTooLong { field, len, max });
    }
    if len < min {
        return Err(MessageError::InvalidField { field, reason: "empty" });
    }
    Ok(())
}
