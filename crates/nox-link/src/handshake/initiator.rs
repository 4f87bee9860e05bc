//! The dialing side of the hybrid handshake.

use rand_core::CryptoRng;
use snow::HandshakeState;
use zeroize::Zeroizing;

#[cfg(feature = "fuzzing")]
use super::FixedRandomness;
use super::{Finished, Randomness, Remote, Session, Tail, handshake_state, into_session};
use crate::config::{CipherSuite, LinkConfig, LinkKind, RESPONSE_LEN};
use crate::error::LinkError;
#[cfg(feature = "os-rng")]
use crate::kem::os_random;
use crate::kem::{DecapsulationKey, KEM_CT_LEN, KEYGEN_SEED_LEN};
use crate::keys::{LinkKeypair, LinkPublicKey};
use crate::mailbox::{MAILBOX_LEN, Mailbox};
use crate::preamble::{PREAMBLE_LEN, Preamble};
use crate::rng::{SeededResolver, random_from};

/// The dialing side. [`Initiator::node`] or [`Initiator::client`] return the
/// first flight to send; [`Initiator::finish`] takes the responder's answer.
/// A client then sends its mailbox record
/// ([`Session::write_mailbox_record`]) before any record.
pub struct Initiator {
    hs: Box<HandshakeState>,
    pub(super) kem: DecapsulationKey,
    remote: LinkPublicKey,
    /// Client links: the mailbox (all zero: none), held for the mailbox
    /// record sealed after message 2. Never in message 1.
    mailbox: Option<Zeroizing<[u8; MAILBOX_LEN]>>,
    cipher: CipherSuite,
    packet_len: usize,
}

impl Initiator {
    /// A node dialing node `remote` (`Noise_IK` with a hybrid ML-KEM-768
    /// exchange), with the operating system's randomness.
    #[cfg(feature = "os-rng")]
    pub fn node(
        config: &LinkConfig,
        local: &LinkKeypair,
        remote: &LinkPublicKey,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        Self::start(config, LinkKind::Node, Some(local), remote, None, Randomness::Os)
    }

    /// [`Self::node`] with the randomness drawn from `rng` (the X25519
    /// ephemeral through a ChaCha20 stream keyed from it, and the ML-KEM
    /// seed): for hosts with no OS RNG (wasm32). `rng` must be a CSPRNG
    /// seeded from real entropy.
    pub fn node_with_rng(
        config: &LinkConfig,
        local: &LinkKeypair,
        remote: &LinkPublicKey,
        rng: &mut dyn CryptoRng,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        Self::start(config, LinkKind::Node, Some(local), remote, None, Randomness::Injected(rng))
    }

    /// A client dialing node `remote` (`Noise_NK` with a hybrid ML-KEM-768
    /// exchange): no client key. With a `mailbox`, the node delivers SURB
    /// replies addressed to it on this link (the client's reply gateway, a
    /// last-layer node). The mailbox is not in the first flight: it travels
    /// in the mailbox record, under the hybrid keys, after message 2
    /// ([`Session::write_mailbox_record`]).
    ///
    /// Uses the operating system's randomness.
    #[cfg(feature = "os-rng")]
    pub fn client(
        config: &LinkConfig,
        remote: &LinkPublicKey,
        mailbox: Option<&Mailbox>,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        Self::start(config, LinkKind::Client, None, remote, mailbox, Randomness::Os)
    }

    /// [`Self::client`] with the randomness drawn from `rng` (see
    /// [`Self::node_with_rng`]): what a browser client uses, with a
    /// `ChaCha20Rng` seeded from `crypto.getRandomValues`.
    pub fn client_with_rng(
        config: &LinkConfig,
        remote: &LinkPublicKey,
        mailbox: Option<&Mailbox>,
        rng: &mut dyn CryptoRng,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        Self::start(config, LinkKind::Client, None, remote, mailbox, Randomness::Injected(rng))
    }

    /// A node initiator with a fixed X25519 ephemeral and a fixed ML-KEM
    /// key generation seed, so the fuzz target can build a reproducible
    /// valid first flight. Never use outside fuzzing.
    #[cfg(feature = "fuzzing")]
    pub fn node_with_fixed_randomness(
        config: &LinkConfig,
        local: &LinkKeypair,
        remote: &LinkPublicKey,
        ephemeral: &[u8; 32],
        kem_seed: &[u8; KEYGEN_SEED_LEN],
    ) -> Result<(Self, Vec<u8>), LinkError> {
        let fixed = FixedRandomness { x25519: *ephemeral, kem: *kem_seed };
        Self::start(config, LinkKind::Node, Some(local), remote, None, Randomness::Fixed(&fixed))
    }

    /// A client initiator with a fixed X25519 ephemeral and a fixed ML-KEM
    /// key generation seed (see [`Self::node_with_fixed_randomness`]).
    /// Never use outside fuzzing.
    #[cfg(feature = "fuzzing")]
    pub fn client_with_fixed_randomness(
        config: &LinkConfig,
        remote: &LinkPublicKey,
        mailbox: Option<&Mailbox>,
        ephemeral: &[u8; 32],
        kem_seed: &[u8; KEYGEN_SEED_LEN],
    ) -> Result<(Self, Vec<u8>), LinkError> {
        let fixed = FixedRandomness { x25519: *ephemeral, kem: *kem_seed };
        Self::start(config, LinkKind::Client, None, remote, mailbox, Randomness::Fixed(&fixed))
    }

    /// A node's first flight whose message 1 carries `payload` instead of
    /// an encapsulation key: authenticated like a real one, so the fuzz
    /// target reaches the responder's payload checks. Never use outside
    /// fuzzing.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn forged_node_flight(
        config: &LinkConfig,
        local: &LinkKeypair,
        remote: &LinkPublicKey,
        payload: &[u8],
    ) -> Result<Vec<u8>, LinkError> {
        let preamble =
            Preamble { kind: LinkKind::Node, cipher: config.cipher(), geometry_id: config.geometry().identifier() };
        let prologue = preamble.encode();
        let mut hs = handshake_state(&preamble, &prologue, Some(local), Some(remote), None, true, None)?;
        write_first(&mut hs, &prologue, payload)
    }

    pub(super) fn start(
        config: &LinkConfig,
        kind: LinkKind,
        local: Option<&LinkKeypair>,
        remote: &LinkPublicKey,
        mailbox: Option<&Mailbox>,
        randomness: Randomness<'_>,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        let preamble = Preamble { kind, cipher: config.cipher(), geometry_id: config.geometry().identifier() };
        let prologue = preamble.encode();
        let (ephemeral, resolver, seed) = match randomness {
            #[cfg(feature = "os-rng")]
            Randomness::Os => (None, None, os_random::<KEYGEN_SEED_LEN>()?),
            Randomness::Injected(rng) => {
                let resolver = SeededResolver::from_rng(rng);
                (None, Some(resolver), random_from::<KEYGEN_SEED_LEN, _>(rng))
            }
            Randomness::Fixed(f) => (Some(&f.x25519), None, Zeroizing::new(f.kem)),
        };
        let mut hs = handshake_state(&preamble, &prologue, local, Some(remote), ephemeral, true, resolver)?;
        let (kem, ek) = DecapsulationKey::generate(&seed);
        // Message 1's payload is the encapsulation key alone, for both kinds:
        // it is protected by X25519 only, so nothing that identifies a client
        // (its mailbox) may travel in it.
        let out = write_first(&mut hs, &prologue, &ek[..])?;
        let mailbox = (kind == LinkKind::Client).then(|| Zeroizing::new(mailbox.map_or([0u8; MAILBOX_LEN], |m| m.0)));
        let me = Self {
            hs: Box::new(hs),
            kem,
            remote: *remote,
            mailbox,
            cipher: config.cipher(),
            packet_len: config.packet_len(),
        };
        Ok((me, out))
    }

    /// Length of the responder's answer.
    pub fn response_len(&self) -> usize {
        RESPONSE_LEN
    }

    /// Completes the handshake with the responder's answer (exactly
    /// [`Self::response_len`] bytes): decapsulates the ML-KEM ciphertext it
    /// carries and derives the transport keys. A node link is established;
    /// a client link is once its mailbox record is written
    /// ([`Session::write_mailbox_record`], to send before any record).
    pub fn finish(mut self, response: &[u8]) -> Result<Session, LinkError> {
        if response.len() != RESPONSE_LEN {
            return Err(LinkError::HandshakeLength { got: response.len(), expected: RESPONSE_LEN });
        }
        let mut payload = [0u8; RESPONSE_LEN];
        let n = self.hs.read_message(response, &mut payload).map_err(LinkError::from_snow)?;
        let ct: &[u8; KEM_CT_LEN] = payload
            .get(..n)
            .and_then(|p| p.try_into().ok())
            .ok_or(LinkError::HandshakePayload { got: n, expected: KEM_CT_LEN })?;
        let ss = self.kem.decapsulate(ct);
        let tail = self.mailbox.take().map_or(Tail::Done, Tail::Send);
        let done =
            Finished { remote: Remote::Node(self.remote), cipher: self.cipher, packet_len: self.packet_len, tail };
        into_session(*self.hs, true, &ss, done)
    }
}

/// `prologue ‖ noise message 1(payload)`.
fn write_first(hs: &mut HandshakeState, prologue: &[u8; PREAMBLE_LEN], payload: &[u8]) -> Result<Vec<u8>, LinkError> {
    // e(32) ‖ enc(s)(48, IK only) ‖ enc(payload)(len + 16)
    let mut out = vec![0u8; PREAMBLE_LEN + 32 + 48 + payload.len() + 16];
    out[..PREAMBLE_LEN].copy_from_slice(prologue);
    let n = hs.write_message(payload, &mut out[PREAMBLE_LEN..]).map_err(LinkError::from_snow)?;
    out.truncate(PREAMBLE_LEN + n);
    Ok(out)
}
