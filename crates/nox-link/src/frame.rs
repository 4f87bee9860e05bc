//! Record assembly from a byte stream. Records have a fixed length per
//! geometry, so there is no length field to trust: the decoder never holds
//! more than one record and cannot be made to allocate more.

/// Cuts a byte stream, delivered in chunks of any size, into records of
/// exactly `record_len` bytes.
#[derive(Debug)]
pub struct FrameDecoder {
    record_len: usize,
    buf: Vec<u8>,
    filled: usize,
}

impl FrameDecoder {
    /// A decoder for records of `record_len` bytes (at least 1).
    pub fn new(record_len: usize) -> Self {
        let record_len = record_len.max(1);
        Self { record_len, buf: Vec::new(), filled: 0 }
    }

    /// Record length.
    pub fn record_len(&self) -> usize {
        self.record_len
    }

    /// Bytes of the current partial record.
    pub fn buffered(&self) -> usize {
        self.filled
    }

    /// Consumes bytes from `input` up to the end of the current record.
    /// Returns the number consumed and the record if it completed.
    pub fn feed(&mut self, input: &[u8]) -> (usize, Option<Vec<u8>>) {
        let dst = self.unfilled();
        let n = dst.len().min(input.len());
        dst[..n].copy_from_slice(&input[..n]);
        (n, self.advance(n))
    }

    /// The rest of the current record, to be filled by the caller (e.g. a
    /// socket read) before [`Self::advance`].
    pub fn unfilled(&mut self) -> &mut [u8] {
        if self.buf.len() != self.record_len {
            self.buf.resize(self.record_len, 0);
        }
        &mut self.buf[self.filled..]
    }

    /// Marks `n` more bytes as filled (clamped to the record); returns the
    /// record when complete.
    pub fn advance(&mut self, n: usize) -> Option<Vec<u8>> {
        if self.buf.len() != self.record_len {
            self.buf.resize(self.record_len, 0);
        }
        self.filled = (self.filled + n).min(self.record_len);
        if self.filled < self.record_len {
            return None;
        }
        self.filled = 0;
        Some(std::mem::take(&mut self.buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_records_across_chunks() {
        let mut d = FrameDecoder::new(4);
        let stream: Vec<u8> = (0..10).collect();
        let mut out = Vec::new();
        for chunk in stream.chunks(3) {
            let mut rest = chunk;
            while !rest.is_empty() {
                let (n, rec) = d.feed(rest);
                rest = &rest[n..];
                out.extend(rec);
            }
        }
        assert_eq!(out, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(d.buffered(), 2);
    }

    #[test]
    fn empty_input_consumes_nothing() {
        let mut d = FrameDecoder::new(4);
        assert_eq!(d.feed(&[]), (0, None));
        assert_eq!(d.buffered(), 0);
    }
}
