//! The answering side of the hybrid handshake.

use rand_core::CryptoRng;
use snow::HandshakeState;
use zeroize::Zeroizing;

use super::{Finished, Remote, Session, Tail, handshake_state, into_session};
use crate::config::{Accept, CipherSuite, LinkConfig, LinkKind, RESPONSE_LEN};
use crate::error::LinkError;
#[cfg(feature = "os-rng")]
use crate::kem::os_random;
use crate::kem::{ENCAPS_SEED_LEN, EncapsulationKey};
use crate::keys::{LinkKeypair, LinkPublicKey};
use crate::mailbox::MAILBOX_RECORD_LEN;
use crate::preamble::{PREAMBLE_LEN, Preamble};
use crate::rng::{SeededResolver, random_from};

enum State {
    Preamble { buf: [u8; PREAMBLE_LEN], filled: usize },
    Message { preamble: Preamble, hs: Box<HandshakeState>, buf: Vec<u8>, filled: usize },
    Spent,
}

/// The answering side: fed the initiator's bytes in chunks of any size;
/// yields a [`Hello`] once the first Noise message has authenticated.
pub struct Responder {
    local: LinkKeypair,
    config: LinkConfig,
    accept: Accept,
    state: State,
    /// The injected RNG for the ephemeral X25519 key ([`Self::with_rng`]);
    /// `None`: the operating system's.
    resolver: Option<SeededResolver>,
}

impl Responder {
    /// A responder for links of `config`'s geometry, answering as `local`,
    /// with the operating system's randomness.
    #[cfg(feature = "os-rng")]
    pub fn new(config: &LinkConfig, local: &LinkKeypair, accept: Accept) -> Self {
        Self::start_with(config, local, accept, None)
    }

    /// [`Self::new`] with the X25519 ephemeral drawn from a ChaCha20 stream
    /// keyed from `rng` (answer with [`Hello::accept_with_rng`]): for hosts
    /// with no OS RNG.
    pub fn with_rng(config: &LinkConfig, local: &LinkKeypair, accept: Accept, rng: &mut dyn CryptoRng) -> Self {
        Self::start_with(config, local, accept, Some(SeededResolver::from_rng(rng)))
    }

    fn start_with(config: &LinkConfig, local: &LinkKeypair, accept: Accept, resolver: Option<SeededResolver>) -> Self {
        Self {
            local: local.clone(),
            config: *config,
            accept,
            state: State::Preamble { buf: [0; PREAMBLE_LEN], filled: 0 },
            resolver,
        }
    }

    /// Bytes still needed before the next step (0 once finished or failed).
    /// Reading at most this many bytes from a socket never reads past the
    /// handshake.
    pub fn wanted(&self) -> usize {
        match &self.state {
            State::Preamble { filled, .. } => PREAMBLE_LEN - filled,
            State::Message { buf, filled, .. } => buf.len() - filled,
            State::Spent => 0,
        }
    }

    /// Consumes bytes from `input`, never past the first Noise message.
    /// Returns the number consumed and, when the first message has been read
    /// and authenticated, the [`Hello`]. After `Some` or an error, the
    /// responder is spent.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Hello>), LinkError> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match &mut self.state {
                State::Spent => return Err(LinkError::HandshakeSpent),
                State::Preamble { buf, filled } => {
                    let n = (PREAMBLE_LEN - *filled).min(rest.len());
                    buf[*filled..*filled + n].copy_from_slice(&rest[..n]);
                    *filled += n;
                    used += n;
                    if *filled < PREAMBLE_LEN {
                        return Ok((used, None));
                    }
                    let bytes = *buf;
                    self.state = State::Spent;
                    let (preamble, hs) = self.start(&bytes)?;
                    let buf = vec![0u8; preamble.kind.first_message_len()];
                    self.state = State::Message { preamble, hs: Box::new(hs), buf, filled: 0 };
                }
                State::Message { buf, filled, .. } => {
                    let n = (buf.len() - *filled).min(rest.len());
                    buf[*filled..*filled + n].copy_from_slice(&rest[..n]);
                    *filled += n;
                    used += n;
                    if *filled < buf.len() {
                        return Ok((used, None));
                    }
                    let State::Message { preamble, hs, buf, .. } = std::mem::replace(&mut self.state, State::Spent)
                    else {
                        return Err(LinkError::HandshakeSpent);
                    };
                    return Ok((used, Some(self.read_first(preamble, *hs, &buf)?)));
                }
            }
        }
    }

    fn start(&mut self, bytes: &[u8; PREAMBLE_LEN]) -> Result<(Preamble, HandshakeState), LinkError> {
        let preamble = Preamble::decode(bytes)?;
        if preamble.geometry_id != self.config.geometry().identifier() {
            return Err(LinkError::WrongGeometry);
        }
        if preamble.kind == LinkKind::Client && !self.accept.clients {
            return Err(LinkError::KindNotAccepted(LinkKind::Client));
        }
        if !self.accept.cipher(preamble.cipher) {
            return Err(LinkError::CipherNotAccepted(preamble.cipher));
        }
        let hs = handshake_state(&preamble, bytes, Some(&self.local), None, None, false, self.resolver.take())?;
        Ok((preamble, hs))
    }

    fn read_first(&self, preamble: Preamble, mut hs: HandshakeState, msg: &[u8]) -> Result<Hello, LinkError> {
        let mut payload = Zeroizing::new(vec![0u8; msg.len()]);
        let n = hs.read_message(msg, &mut payload).map_err(LinkError::from_snow)?;
        let expected = preamble.kind.first_payload_len();
        // The payload is the encapsulation key alone (`crate::KEM_EK_LEN` bytes),
        // for both kinds.
        let ek = payload.get(..n).filter(|_| n == expected).ok_or(LinkError::HandshakePayload { got: n, expected })?;
        let ek = EncapsulationKey::parse(ek)?;
        let (remote, tail) = match preamble.kind {
            // The client's mailbox comes after message 2, in its mailbox
            // record under the hybrid keys: the session waits for it.
            LinkKind::Client => {
                (Remote::Client, Tail::Receive { buf: Zeroizing::new([0; MAILBOX_RECORD_LEN]), filled: 0 })
            }
            LinkKind::Node => {
                let rs = hs.get_remote_static().ok_or_else(|| LinkError::Noise("no initiator static key".into()))?;
                let key: [u8; 32] = rs.try_into().map_err(|_| LinkError::Noise("bad static key length".into()))?;
                (Remote::Node(LinkPublicKey(key)), Tail::Done)
            }
        };
        let done = Finished { remote, cipher: preamble.cipher, packet_len: self.config.packet_len(), tail };
        Ok(Hello { hs: Box::new(hs), ek, done })
    }
}

/// The initiator's first message, authenticated, with a valid ML-KEM-768
/// encapsulation key. Check [`Hello::remote`] against the topology, then
/// [`Hello::accept`]; to refuse, drop it and close the connection without an
/// answer (no encapsulation is done for a refused peer).
pub struct Hello {
    hs: Box<HandshakeState>,
    ek: EncapsulationKey,
    done: Finished,
}

impl core::fmt::Debug for Hello {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hello").field("remote", &self.done.remote).field("cipher", &self.done.cipher).finish()
    }
}

impl Hello {
    /// Who is dialing: a node's static key (proven: the message was
    /// authenticated with it) or an anonymous client.
    pub fn remote(&self) -> &Remote {
        &self.done.remote
    }
    /// The cipher the initiator chose.
    pub fn cipher(&self) -> CipherSuite {
        self.done.cipher
    }
    /// Completes the handshake: encapsulates to the initiator's ML-KEM key,
    /// returns the answer to send (message 2, carrying the ciphertext) and
    /// the session. A node link's session is established; a client link's
    /// waits for the client's mailbox record
    /// ([`Session::feed_mailbox_record`]) before it carries anything.
    ///
    /// The encapsulation seed is the operating system's.
    #[cfg(feature = "os-rng")]
    pub fn accept(self) -> Result<(Vec<u8>, Session), LinkError> {
        let seed = os_random::<ENCAPS_SEED_LEN>()?;
        self.accept_with(&seed)
    }

    /// [`Self::accept`] with the encapsulation seed drawn from `rng`.
    pub fn accept_with_rng(self, rng: &mut dyn CryptoRng) -> Result<(Vec<u8>, Session), LinkError> {
        let seed = random_from::<ENCAPS_SEED_LEN, _>(rng);
        self.accept_with(&seed)
    }

    pub(super) fn accept_with(mut self, seed: &[u8; ENCAPS_SEED_LEN]) -> Result<(Vec<u8>, Session), LinkError> {
        let (ct, ss) = self.ek.encapsulate(seed);
        let mut out = vec![0u8; RESPONSE_LEN];
        let n = self.hs.write_message(&ct[..], &mut out).map_err(LinkError::from_snow)?;
        out.truncate(n);
        let session = into_session(*self.hs, false, &ss, self.done)?;
        Ok((out, session))
    }
}
