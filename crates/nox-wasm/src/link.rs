//! A client link whose bytes the host carries (a browser's WebSocket): the
//! hybrid Noise handshake, the mailbox record and the sealed records of
//! `nox-link`, driven as a state machine. The host sends what [`ClientLink`]
//! returns and feeds it what arrives, in order and in any chunking.

use nox_link::{FrameOpener, FrameSealer, Initiator, LinkConfig, LinkError, LinkPublicKey, Mailbox, RESPONSE_LEN};
use rand_core::CryptoRng;

enum State {
    /// Message 1 sent; collecting the node's message 2.
    Handshake { initiator: Box<Initiator>, response: Vec<u8> },
    /// Established: records both ways.
    Open { sealer: Box<FrameSealer>, opener: Box<FrameOpener> },
    /// A handshake or record failed: the link is unusable (the host closes it).
    Failed(LinkError),
}

/// What feeding bytes produced.
#[derive(Debug, Default)]
pub struct Fed {
    /// Bytes to send now (the mailbox record, right after message 2).
    pub send: Vec<u8>,
    /// Records opened, in order: `packet_len` bytes each (downstream records
    /// on a gateway link, the difficulty greeting on an entry link).
    pub records: Vec<Vec<u8>>,
    /// The handshake completed in this call.
    pub established: bool,
}

/// One client link (`Noise_NK` + ML-KEM-768, docs/spec/link.md).
pub struct ClientLink {
    state: State,
}

impl ClientLink {
    /// Starts a client link to the node whose link key is `remote`; with a
    /// `mailbox`, the node delivers the client's replies on it (the reply
    /// gateway). Returns the link and its first flight, to send first.
    pub fn start(
        config: &LinkConfig,
        remote: &LinkPublicKey,
        mailbox: Option<&Mailbox>,
        rng: &mut dyn CryptoRng,
    ) -> Result<(Self, Vec<u8>), LinkError> {
        let (initiator, first) = Initiator::client_with_rng(config, remote, mailbox, rng)?;
        let state = State::Handshake { initiator: Box::new(initiator), response: Vec::with_capacity(RESPONSE_LEN) };
        Ok((Self { state }, first))
    }

    /// Whether the handshake has completed and the link carries records.
    pub fn is_open(&self) -> bool {
        matches!(self.state, State::Open { .. })
    }

    /// Consumes bytes received from the node. An error leaves the link
    /// failed: every later call returns it again.
    pub fn feed(&mut self, mut input: &[u8]) -> Result<Fed, LinkError> {
        let mut fed = Fed::default();
        while !input.is_empty() {
            match &mut self.state {
                State::Failed(e) => return Err(e.clone()),
                State::Handshake { response, .. } => {
                    let n = (RESPONSE_LEN - response.len()).min(input.len());
                    response.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if response.len() == RESPONSE_LEN {
                        let done = self.finish(&mut fed.send);
                        self.fail_on(done)?;
                        fed.established = true;
                    }
                }
                State::Open { opener, .. } => {
                    let result = opener.feed(input);
                    let (used, record) = self.fail_on(result)?;
                    input = &input[used..];
                    fed.records.extend(record);
                }
            }
        }
        Ok(fed)
    }

    /// Seals one packet (exactly the geometry's packet length) as a record.
    pub fn seal(&mut self, packet: &[u8]) -> Result<Vec<u8>, LinkError> {
        let result = match &mut self.state {
            State::Open { sealer, .. } => {
                let mut out = Vec::with_capacity(sealer.record_len());
                sealer.seal_into(packet, &mut out).map(|()| out)
            }
            State::Handshake { .. } => Err(LinkError::MailboxRecordMissing),
            State::Failed(e) => Err(e.clone()),
        };
        self.fail_on(result)
    }

    fn finish(&mut self, send: &mut Vec<u8>) -> Result<(), LinkError> {
        let State::Handshake { initiator, response } =
            std::mem::replace(&mut self.state, State::Failed(LinkError::HandshakeSpent))
        else {
            return Err(LinkError::HandshakeSpent);
        };
        let mut session = initiator.finish(&response)?;
        session.write_mailbox_record(send)?;
        let (sealer, opener) = session.into_parts();
        self.state = State::Open { sealer: Box::new(sealer), opener: Box::new(opener) };
        Ok(())
    }

    fn fail_on<T>(&mut self, result: Result<T, LinkError>) -> Result<T, LinkError> {
        if let Err(e) = &result {
            self.state = State::Failed(e.clone());
        }
        result
    }
}

use crate::api::{Module, Object, WasmError, bad};

impl Module {
    fn link(&mut self, handle: u32) -> Result<&mut ClientLink, WasmError> {
        match self.objects.get_mut(&handle) {
            Some(Object::Link(l)) => Ok(l),
            Some(_) => Err(WasmError::WrongHandle { handle, expected: "link" }),
            None => Err(WasmError::UnknownHandle(handle)),
        }
    }

    /// Starts a client link to `node` (32-byte id) of the verified topology
    /// behind `topology`, authenticated by the node's link key from that
    /// topology, in its geometry. `mailbox`: 32 bytes on the link to the
    /// reply gateway (the client core's mailbox), empty elsewhere. Returns the
    /// link's handle and the first flight to send.
    pub fn link_start(&mut self, topology: u32, node: &[u8], mailbox: &[u8]) -> Result<(u32, Vec<u8>), WasmError> {
        let id: [u8; 32] = node.try_into().map_err(|_| bad(format!("node id must be 32 bytes, got {}", node.len())))?;
        let mailbox = match mailbox.len() {
            0 => None,
            32 => {
                let mut m = [0u8; 32];
                m.copy_from_slice(mailbox);
                Some(Mailbox(m))
            }
            n => return Err(bad(format!("mailbox must be 32 bytes or empty, got {n}"))),
        };
        let topology = self.topology(topology)?;
        let config = LinkConfig::new(*topology.geometry())?;
        let remote = topology
            .node(&nox_sphinx::NodeId(id))
            .map(|n| LinkPublicKey(n.descriptor.link_key.to_bytes()))
            .ok_or_else(|| bad(format!("node {} is not in the topology", hex::encode(id))))?;
        let (link, first) = ClientLink::start(&config, &remote, mailbox.as_ref(), self.rng()?)?;
        Ok((self.insert(Object::Link(Box::new(link))), first))
    }

    /// Feeds bytes received on the link behind `handle`.
    pub fn link_feed(&mut self, handle: u32, bytes: &[u8]) -> Result<Fed, WasmError> {
        Ok(self.link(handle)?.feed(bytes)?)
    }

    /// Seals one packet for the link behind `handle`.
    pub fn link_seal(&mut self, handle: u32, packet: &[u8]) -> Result<Vec<u8>, WasmError> {
        Ok(self.link(handle)?.seal(packet)?)
    }
}

/// `nox_link_feed`'s output: flags (bit 0: established in this call) ‖
/// send length (u32 LE) ‖ send ‖ record count (u32 LE) ‖ count × (length
/// (u32 LE) ‖ record).
pub fn fed_bytes(fed: &Fed) -> Vec<u8> {
    let records: usize = fed.records.iter().map(|r| 4 + r.len()).sum();
    let mut out = Vec::with_capacity(9 + fed.send.len() + records);
    out.push(u8::from(fed.established));
    out.extend_from_slice(&len32(fed.send.len()).to_le_bytes());
    out.extend_from_slice(&fed.send);
    out.extend_from_slice(&len32(fed.records.len()).to_le_bytes());
    for record in &fed.records {
        out.extend_from_slice(&len32(record.len()).to_le_bytes());
        out.extend_from_slice(record);
    }
    out
}

/// Lengths here are bounded by one link record (< 64 KiB) and one feed.
fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
