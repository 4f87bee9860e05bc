//! The transport phase: one Noise CipherState per direction, driven from the
//! raw Noise split so that the keys live in zeroizing AEAD objects and
//! records are sealed and opened in place.
//!
//! Noise §5.1 with §12: `ENCRYPT(k, n, ad = ε, p)`; the 96-bit nonce is 32
//! zero bits followed by the 64-bit counter, big-endian for AES-GCM and
//! little-endian for ChaCha20-Poly1305. The counter is implicit: it is never
//! sent. Nonce 2^64 − 1 is reserved (Noise §5.1) and never used.

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{AeadInOut, KeyInit};
use chacha20poly1305::ChaCha20Poly1305;
use chacha20poly1305::aead::{AeadInPlace as _, KeyInit as _};
use zeroize::Zeroizing;

use crate::TAG_LEN;
use crate::config::CipherSuite;
use crate::error::LinkError;
use crate::frame::FrameDecoder;

enum Aead {
    // Boxed: the AES-GCM key schedule is large and the value moves between
    // the handshake and the link tasks.
    Aes(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
}

impl Aead {
    fn new(suite: CipherSuite, key: &[u8; 32]) -> Self {
        match suite {
            CipherSuite::AesGcm => Aead::Aes(Box::new(Aes256Gcm::new(key.into()))),
            CipherSuite::ChaChaPoly => Aead::ChaCha(Box::new(ChaCha20Poly1305::new(key.into()))),
        }
    }

    fn seal(&self, nonce: u64, buf: &mut [u8]) -> Result<[u8; TAG_LEN], LinkError> {
        // Only fails for inputs longer than the AEAD's limit (≫ 64 KiB).
        let too_long = LinkError::WrongLength { got: buf.len(), expected: crate::MAX_PACKET_LEN };
        match self {
            Aead::Aes(c) => {
                c.encrypt_inout_detached(&nonce_be(nonce).into(), &[], buf.into()).map(Into::into).map_err(|_| too_long)
            }
            Aead::ChaCha(c) => {
                c.encrypt_in_place_detached(&nonce_le(nonce).into(), &[], buf).map(Into::into).map_err(|_| too_long)
            }
        }
    }

    fn open(&self, nonce: u64, buf: &mut [u8], tag: &[u8]) -> Result<(), LinkError> {
        let tag: [u8; TAG_LEN] = tag.try_into().map_err(|_| LinkError::Decrypt)?;
        let ok = match self {
            Aead::Aes(c) => c.decrypt_inout_detached(&nonce_be(nonce).into(), &[], buf.into(), &tag.into()).is_ok(),
            Aead::ChaCha(c) => c.decrypt_in_place_detached(&nonce_le(nonce).into(), &[], buf, &tag.into()).is_ok(),
        };
        if ok { Ok(()) } else { Err(LinkError::Decrypt) }
    }
}

fn nonce_be(n: u64) -> [u8; 12] {
    let mut out = [0u8; 12];
    out[4..].copy_from_slice(&n.to_be_bytes());
    out
}

fn nonce_le(n: u64) -> [u8; 12] {
    let mut out = [0u8; 12];
    out[4..].copy_from_slice(&n.to_le_bytes());
    out
}

fn next_nonce(n: &mut u64) -> Result<u64, LinkError> {
    if *n == u64::MAX {
        return Err(LinkError::NonceExhausted);
    }
    let current = *n;
    *n += 1;
    Ok(current)
}

/// The sending half of a link: seals packets into records.
pub struct FrameSealer {
    aead: Aead,
    nonce: u64,
    packet_len: usize,
    /// Set on the half of a link that is not established (a client link
    /// whose mailbox record did not go through): every seal refuses.
    failed: Option<LinkError>,
}

impl FrameSealer {
    pub(crate) fn new(suite: CipherSuite, key: Zeroizing<[u8; 32]>, packet_len: usize) -> Self {
        Self { aead: Aead::new(suite, &key), nonce: 0, packet_len, failed: None }
    }

    /// This sealer, refusing every packet with `e`.
    pub(crate) fn refusing(mut self, e: LinkError) -> Self {
        self.failed = Some(e);
        self
    }

    /// A sealer from a raw key, without a handshake: for the fuzz target only.
    #[cfg(feature = "fuzzing")]
    pub fn from_raw_key(suite: CipherSuite, key: [u8; 32], packet_len: usize) -> Self {
        Self::new(suite, Zeroizing::new(key), packet_len)
    }

    /// Plaintext length of every record: the geometry's packet length.
    pub fn packet_len(&self) -> usize {
        self.packet_len
    }

    /// Wire length of every record.
    pub fn record_len(&self) -> usize {
        self.packet_len + TAG_LEN
    }

    /// Appends the record for `packet` (exactly [`Self::packet_len`] bytes)
    /// to `out`. Appending lets a writer batch several records into one
    /// system call.
    pub fn seal_into(&mut self, packet: &[u8], out: &mut Vec<u8>) -> Result<(), LinkError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if packet.len() != self.packet_len {
            return Err(LinkError::WrongLength { got: packet.len(), expected: self.packet_len });
        }
        self.seal_message(packet, out)
    }

    /// Appends `ENCRYPT(k, n, ε, plaintext)` with the next nonce, whatever
    /// the plaintext's length: the client's mailbox record (nonce 0) and,
    /// through [`Self::seal_into`], every packet record after it. One
    /// counter for both, so no nonce is ever used twice.
    pub(crate) fn seal_message(&mut self, plaintext: &[u8], out: &mut Vec<u8>) -> Result<(), LinkError> {
        let nonce = next_nonce(&mut self.nonce)?;
        let start = out.len();
        out.extend_from_slice(plaintext);
        match self.aead.seal(nonce, &mut out[start..]) {
            Ok(tag) => {
                out.extend_from_slice(&tag);
                Ok(())
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }
}

/// The receiving half of a link: reassembles records from a byte stream of
/// arbitrary chunks and opens them. After any error it stays failed: the
/// link must be closed (a Noise stream cannot resynchronise).
pub struct FrameOpener {
    aead: Aead,
    nonce: u64,
    decoder: FrameDecoder,
    failed: Option<LinkError>,
}

impl FrameOpener {
    pub(crate) fn new(suite: CipherSuite, key: Zeroizing<[u8; 32]>, packet_len: usize) -> Self {
        Self { aead: Aead::new(suite, &key), nonce: 0, decoder: FrameDecoder::new(packet_len + TAG_LEN), failed: None }
    }

    /// An opener from a raw key, without a handshake: for the fuzz target only.
    #[cfg(feature = "fuzzing")]
    pub fn from_raw_key(suite: CipherSuite, key: [u8; 32], packet_len: usize) -> Self {
        Self::new(suite, Zeroizing::new(key), packet_len)
    }

    /// Wire length of every record.
    pub fn record_len(&self) -> usize {
        self.decoder.record_len()
    }

    /// Bytes of a partial record held.
    pub fn buffered(&self) -> usize {
        self.decoder.buffered()
    }

    /// Consumes bytes from `input` up to the end of one record. Returns how
    /// many bytes were consumed and, when a record completed, its packet
    /// (exactly `packet_len` bytes). Call again with the rest of the input.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Vec<u8>>), LinkError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let (used, record) = self.decoder.feed(input);
        match record {
            None => Ok((used, None)),
            Some(record) => match self.open(record) {
                Ok(packet) => Ok((used, Some(packet))),
                Err(e) => {
                    self.failed = Some(e.clone());
                    Err(e)
                }
            },
        }
    }

    /// The part of the current record still to be read: a reader may read
    /// from its socket straight into it and then call [`Self::advance`],
    /// saving one copy.
    pub fn unfilled(&mut self) -> &mut [u8] {
        self.decoder.unfilled()
    }

    /// Marks `n` bytes of [`Self::unfilled`] as read; returns the packet if
    /// the record completed.
    pub fn advance(&mut self, n: usize) -> Result<Option<Vec<u8>>, LinkError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.decoder.advance(n) {
            None => Ok(None),
            Some(record) => self.open(record).map(Some).inspect_err(|e| self.failed = Some(e.clone())),
        }
    }

    /// This opener, failed with `e`: it never yields a packet.
    pub(crate) fn refusing(mut self, e: LinkError) -> Self {
        self.failed = Some(e);
        self
    }

    /// Opens one whole message `ENCRYPT(k, n, ε, p) = ciphertext ‖ tag` in
    /// place with the next nonce and returns the plaintext's length (`p` is
    /// `message[..len]`): the client's mailbox record, at nonce 0, before
    /// any packet record. A failure fails the opener.
    pub(crate) fn open_message(&mut self, message: &mut [u8]) -> Result<usize, LinkError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let split = message.len().checked_sub(TAG_LEN).ok_or(LinkError::Decrypt)?;
        let result = next_nonce(&mut self.nonce).and_then(|nonce| {
            let (body, tag) = message.split_at_mut(split);
            self.aead.open(nonce, body, tag)
        });
        match result {
            Ok(()) => Ok(split),
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Call at end of stream: `Err(Truncated)` if a partial record is held.
    pub fn finish(&self) -> Result<(), LinkError> {
        match self.decoder.buffered() {
            0 => Ok(()),
            buffered => Err(LinkError::Truncated { buffered, record_len: self.decoder.record_len() }),
        }
    }

    fn open(&mut self, mut record: Vec<u8>) -> Result<Vec<u8>, LinkError> {
        let nonce = next_nonce(&mut self.nonce)?;
        let split = record.len().saturating_sub(TAG_LEN);
        let (body, tag) = record.split_at_mut(split);
        self.aead.open(nonce, body, tag)?;
        record.truncate(split);
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our CipherState must produce byte-identical records to snow's own
    /// transport mode (which follows the Noise spec): checked through a real
    /// handshake for both ciphers, several nonces.
    #[test]
    fn matches_snow_transport_mode() {
        for suite in [CipherSuite::AesGcm, CipherSuite::ChaChaPoly] {
            let name = format!("Noise_NN_25519_{}_BLAKE2s", suite.noise_name());
            let params: snow::params::NoiseParams = name.parse().unwrap();
            let mut i = snow::Builder::new(params.clone()).build_initiator().unwrap();
            let mut r = snow::Builder::new(params).build_responder().unwrap();
            let mut m = [0u8; 128];
            let mut p = [0u8; 128];
            let n = i.write_message(&[], &mut m).unwrap();
            r.read_message(&m[..n], &mut p).unwrap();
            let n = r.write_message(&[], &mut m).unwrap();
            i.read_message(&m[..n], &mut p).unwrap();
            let (k1, k2) = i.dangerously_get_raw_split();
            let mut snow_i = i.into_transport_mode().unwrap();
            let mut snow_r = r.into_transport_mode().unwrap();
            let mut ours_i = FrameSealer::new(suite, Zeroizing::new(k1), 100);
            let mut ours_r = FrameSealer::new(suite, Zeroizing::new(k2), 100);
            for round in 0u8..3 {
                let packet = [round; 100];
                let mut expect = [0u8; 116];
                let mut got = Vec::new();
                snow_i.write_message(&packet, &mut expect).unwrap();
                ours_i.seal_into(&packet, &mut got).unwrap();
                assert_eq!(got, expect, "{suite:?} initiator record {round}");
                snow_r.write_message(&packet, &mut expect).unwrap();
                got.clear();
                ours_r.seal_into(&packet, &mut got).unwrap();
                assert_eq!(got, expect, "{suite:?} responder record {round}");
            }
        }
    }

    #[test]
    fn nonce_exhaustion_is_an_error() {
        let mut s = FrameSealer::new(CipherSuite::AesGcm, Zeroizing::new([1; 32]), 8);
        s.nonce = u64::MAX;
        assert_eq!(s.seal_into(&[0; 8], &mut Vec::new()), Err(LinkError::NonceExhausted));
    }
}
