//! The Noise handshakes as byte-in/byte-out state machines (no I/O).
//!
//! Initiator → responder: `preamble ‖ noise message 1` (39 + 96 bytes for
//! nodes, 39 + 48 for clients). Responder → initiator: `noise message 2`
//! (48 bytes). The client's first payload is its 32-byte reply mailbox (all
//! zero: none); every other payload is empty. Then records flow both ways.

use snow::HandshakeState;
use snow::params::NoiseParams;
use zeroize::Zeroizing;

use crate::cipher::{FrameOpener, FrameSealer};
use crate::config::{Accept, CipherSuite, LinkConfig, LinkKind, RESPONSE_LEN};
use crate::error::LinkError;
use crate::keys::{LinkKeypair, LinkPublicKey};
use crate::mailbox::{MAILBOX_LEN, Mailbox};
use crate::preamble::{PREAMBLE_LEN, Preamble};

/// Who is at the other end of an established link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Remote {
    /// A node, authenticated by this static key (check it against the topology).
    Node(LinkPublicKey),
    /// An anonymous client (responder side of a `Noise_NK` link).
    Client,
}

/// An established link: the remote and the two directions.
pub struct Session {
    remote: Remote,
    mailbox: Option<Mailbox>,
    cipher: CipherSuite,
    sealer: FrameSealer,
    opener: FrameOpener,
}

impl Session {
    /// The authenticated remote.
    pub fn remote(&self) -> &Remote {
        &self.remote
    }
    /// The reply mailbox a client registered (responder side of a client
    /// link that named one).
    pub fn mailbox(&self) -> Option<Mailbox> {
        self.mailbox
    }
    /// The cipher in use.
    pub fn cipher(&self) -> CipherSuite {
        self.cipher
    }
    /// The sending and receiving halves, to be driven independently.
    pub fn into_parts(self) -> (FrameSealer, FrameOpener) {
        (self.sealer, self.opener)
    }
}

fn handshake_state(
    preamble: &Preamble,
    prologue: &[u8],
    local: Option<&LinkKeypair>,
    remote: Option<&LinkPublicKey>,
    ephemeral: Option<&[u8; 32]>,
    initiator: bool,
) -> Result<HandshakeState, LinkError> {
    let params: NoiseParams = preamble.kind.protocol_name(preamble.cipher).parse().map_err(LinkError::from_snow)?;
    let mut b = snow::Builder::new(params).prologue(prologue).map_err(LinkError::from_snow)?;
    if let Some(local) = local {
        b = b.local_private_key(local.secret_bytes()).map_err(LinkError::from_snow)?;
    }
    if let Some(remote) = remote {
        b = b.remote_public_key(remote.as_bytes()).map_err(LinkError::from_snow)?;
    }
    if let Some(e) = ephemeral {
        b = b.fixed_ephemeral_key_for_testing_only(e);
    }
    if initiator { b.build_initiator() } else { b.build_responder() }.map_err(LinkError::from_snow)
}

fn into_session(
    mut hs: HandshakeState,
    initiator: bool,
    remote: Remote,
    mailbox: Option<Mailbox>,
    cipher: CipherSuite,
    packet_len: usize,
) -> Result<Session, LinkError> {
    if !hs.is_handshake_finished() {
        return Err(LinkError::Noise("handshake not finished".into()));
    }
    let (k1, k2) = hs.dangerously_get_raw_split();
    let (k1, k2) = (Zeroizing::new(k1), Zeroizing::new(k2));
    let (send, recv) = if initiator { (k1, k2) } else { (k2, k1) };
    Ok(Session {
        remote,
        mailbox,
        cipher,
        sealer: FrameSealer::new(cipher, send, packet_len),
        opener: FrameOpener::new(cipher, recv, packet_len),
    })
}

/// The dialing side. [`Initiator::node`] or [`Initiator::client`] return the
/// first flight to send; [`Initiator::finish`] takes the responder's answer.
pub struct Initiator {
    hs: Box<HandshakeState>,
    remote: LinkPublicKey,
    cipher: CipherSuite,
    packet_len: usize,
}

impl Initiator {
    /// A node dialing node `remote` (`Noise_IK`).
    pub fn node(
        config: &LinkConfig,
        local: &LinkKeypair,
        remote: &LinkPublicKey,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        Self::start(config, LinkKind::Node, Some(local), remote)
    }

    /// A client dialing node `remote` (`Noise_NK`): no client key. With a
    /// `mailbox`, the node delivers SURB replies addressed to it on this
    /// link (the client's reply gateway, a last-layer node).
    pub fn client(
        config: &LinkConfig,
        remote: &LinkPublicKey,
        mailbox: Option<&Mailbox>,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        let payload = mailbox.map_or([0u8; MAILBOX_LEN], |m| m.0);
        Self::start_with(config, LinkKind::Client, None, remote, None, &payload)
    }

    /// A node initiator with a fixed ephemeral key, so the fuzz target can
    /// build a reproducible valid first flight. Never use outside fuzzing.
    #[cfg(feature = "fuzzing")]
    pub fn node_with_fixed_ephemeral(
        config: &LinkConfig,
        local: &LinkKeypair,
        remote: &LinkPublicKey,
        ephemeral: &[u8; 32],
    ) -> Result<(Self, Vec<u8>), LinkError> {
        Self::start_with(config, LinkKind::Node, Some(local), remote, Some(ephemeral), &[])
    }

    fn start(
        config: &LinkConfig,
        kind: LinkKind,
        local: Option<&LinkKeypair>,
        remote: &LinkPublicKey,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        Self::start_with(config, kind, local, remote, None, &[])
    }

    fn start_with(
        config: &LinkConfig,
        kind: LinkKind,
        local: Option<&LinkKeypair>,
        remote: &LinkPublicKey,
        ephemeral: Option<&[u8; 32]>,
        payload: &[u8],
    ) -> Result<(Self, Vec<u8>), LinkError> {
        let preamble = Preamble { kind, cipher: config.cipher(), geometry_id: config.geometry().identifier() };
        let prologue = preamble.encode();
        let mut hs = handshake_state(&preamble, &prologue, local, Some(remote), ephemeral, true)?;
        let mut out = vec![0u8; PREAMBLE_LEN + kind.first_message_len()];
        out[..PREAMBLE_LEN].copy_from_slice(&prologue);
        let n = hs.write_message(payload, &mut out[PREAMBLE_LEN..]).map_err(LinkError::from_snow)?;
        out.truncate(PREAMBLE_LEN + n);
        let me = Self { hs: Box::new(hs), remote: *remote, cipher: config.cipher(), packet_len: config.packet_len() };
        Ok((me, out))
    }

    /// Length of the responder's answer.
    pub fn response_len(&self) -> usize {
        RESPONSE_LEN
    }

    /// Completes the handshake with the responder's answer (exactly
    /// [`Self::response_len`] bytes).
    pub fn finish(mut self, response: &[u8]) -> Result<Session, LinkError> {
        if response.len() != RESPONSE_LEN {
            return Err(LinkError::Noise(format!("response has {} bytes, expected {RESPONSE_LEN}", response.len())));
        }
        let mut payload = [0u8; RESPONSE_LEN];
        let n = self.hs.read_message(response, &mut payload).map_err(LinkError::from_snow)?;
        if n != 0 {
            return Err(LinkError::Noise("unexpected handshake payload".into()));
        }
        into_session(*self.hs, true, Remote::Node(self.remote), None, self.cipher, self.packet_len)
    }
}

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
}

impl Responder {
    /// A responder for links of `config`'s geometry, answering as `local`.
    pub fn new(config: &LinkConfig, local: &LinkKeypair, accept: Accept) -> Self {
        Self {
            local: local.clone(),
            config: *config,
            accept,
            state: State::Preamble { buf: [0; PREAMBLE_LEN], filled: 0 },
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

    fn start(&self, bytes: &[u8; PREAMBLE_LEN]) -> Result<(Preamble, HandshakeState), LinkError> {
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
        let hs = handshake_state(&preamble, bytes, Some(&self.local), None, None, false)?;
        Ok((preamble, hs))
    }

    fn read_first(&self, preamble: Preamble, mut hs: HandshakeState, msg: &[u8]) -> Result<Hello, LinkError> {
        let mut payload = [0u8; 128];
        let n = hs.read_message(msg, &mut payload).map_err(LinkError::from_snow)?;
        if n != preamble.kind.first_payload_len() {
            return Err(LinkError::Noise("unexpected handshake payload".into()));
        }
        let mut mailbox = None;
        let remote = match preamble.kind {
            LinkKind::Client => {
                let mut id = [0u8; MAILBOX_LEN];
                id.copy_from_slice(&payload[..MAILBOX_LEN]);
                mailbox = Some(Mailbox(id)).filter(|m| !m.is_none());
                Remote::Client
            }
            LinkKind::Node => {
                let rs = hs.get_remote_static().ok_or_else(|| LinkError::Noise("no initiator static key".into()))?;
                let key: [u8; 32] = rs.try_into().map_err(|_| LinkError::Noise("bad static key length".into()))?;
                Remote::Node(LinkPublicKey(key))
            }
        };
        Ok(Hello { hs: Box::new(hs), remote, mailbox, cipher: preamble.cipher, packet_len: self.config.packet_len() })
    }
}

/// The initiator's first message, authenticated. Check [`Hello::remote`]
/// against the topology, then [`Hello::accept`]; to refuse, drop it and
/// close the connection without an answer.
pub struct Hello {
    hs: Box<HandshakeState>,
    remote: Remote,
    mailbox: Option<Mailbox>,
    cipher: CipherSuite,
    packet_len: usize,
}

impl Hello {
    /// Who is dialing: a node's static key (proven: the message was
    /// authenticated with it) or an anonymous client.
    pub fn remote(&self) -> &Remote {
        &self.remote
    }
    /// The cipher the initiator chose.
    pub fn cipher(&self) -> CipherSuite {
        self.cipher
    }
    /// The reply mailbox a client named, if any.
    pub fn mailbox(&self) -> Option<Mailbox> {
        self.mailbox
    }
    /// Completes the handshake: the answer to send, and the session.
    pub fn accept(mut self) -> Result<(Vec<u8>, Session), LinkError> {
        let mut out = vec![0u8; RESPONSE_LEN];
        let n = self.hs.write_message(&[], &mut out).map_err(LinkError::from_snow)?;
        out.truncate(n);
        let session = into_session(*self.hs, false, self.remote, self.mailbox, self.cipher, self.packet_len)?;
        Ok((out, session))
    }
}
