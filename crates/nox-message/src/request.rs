//! Requests: version, kind, the SURBs for the reply, and the body.

use nox_sphinx::{Geometry, Surb};

use crate::{HttpRequestMsg, MessageError, VERSION, wire::Reader};

/// Most SURBs one request carries (the count is one byte).
pub const MAX_SURBS: usize = 255;

/// What a request asks the exit to do.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Send the body back.
    Echo = 1,
    /// Perform an HTTP request.
    Http = 2,
    /// Forward a JSON-RPC request.
    JsonRpc = 3,
    /// A relay request: a bundle for the exit's relayer, or a price quote (docs/spec/relay.md).
    Relay = 4,
    /// A stream message (`nox-stream`, docs/spec/streams.md): the SURBs join the stream's pool.
    Stream = 5,
}

impl TryFrom<u8> for Kind {
    type Error = MessageError;

    fn try_from(value: u8) -> Result<Self, MessageError> {
        match value {
            1 => Ok(Self::Echo),
            2 => Ok(Self::Http),
            3 => Ok(Self::JsonRpc),
            4 => Ok(Self::Relay),
            5 => Ok(Self::Stream),
            other => Err(MessageError::UnknownKind(other)),
        }
    }
}

/// The body of a request, by kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestBody {
    /// Bytes to echo (any length, possibly empty).
    Echo(Vec<u8>),
    /// An HTTP request.
    Http(HttpRequestMsg),
    /// JSON-RPC request bytes (non-empty; the exit parses them).
    JsonRpc(Vec<u8>),
    /// Relay request bytes (non-empty; the exit's relayer parses them, docs/spec/relay.md).
    Relay(Vec<u8>),
    /// An encoded stream message (non-empty; the exit's stream service parses it).
    Stream(Vec<u8>),
}

impl RequestBody {
    /// The kind byte this body is sent with.
    pub fn kind(&self) -> Kind {
        match self {
            Self::Echo(_) => Kind::Echo,
            Self::Http(_) => Kind::Http,
            Self::JsonRpc(_) => Kind::JsonRpc,
            Self::Relay(_) => Kind::Relay,
            Self::Stream(_) => Kind::Stream,
        }
    }

    /// Checks the body against the format's rules.
    pub fn validate(&self) -> Result<(), MessageError> {
        match self {
            Self::Echo(_) => Ok(()),
            Self::Http(http) => http.validate(),
            Self::JsonRpc(json) if json.is_empty() => {
                Err(MessageError::InvalidField { field: "json-rpc body", reason: "empty" })
            }
            Self::JsonRpc(_) => Ok(()),
            Self::Relay(body) if body.is_empty() => {
                Err(MessageError::InvalidField { field: "relay body", reason: "empty" })
            }
            Self::Relay(_) => Ok(()),
            Self::Stream(body) if body.is_empty() => {
                Err(MessageError::InvalidField { field: "stream body", reason: "empty" })
            }
            Self::Stream(_) => Ok(()),
        }
    }
}

/// A request from a client to an exit, with the SURBs for its reply.
#[derive(Clone, Debug)]
pub struct Request {
    /// Single-use reply blocks, at most 255, all of the network's geometry.
    pub surbs: Vec<Surb>,
    /// What to do.
    pub body: RequestBody,
}

impl Request {
    /// Checks the SURB count and the body. [`Request::decode`] accepts
    /// [`Request::encode`]'s output exactly when this succeeds (and the
    /// SURBs are of the decoder's geometry).
    pub fn validate(&self) -> Result<(), MessageError> {
        if self.surbs.len() > MAX_SURBS {
            return Err(MessageError::FieldTooLong { field: "surb count", len: self.surbs.len(), max: MAX_SURBS });
        }
        self.body.validate()
    }

    /// `version ‖ kind ‖ n_surbs ‖ SURBs ‖ body`. Does not validate: an
    /// invalid request encodes to bytes that [`Request::decode`] refuses.
    pub fn encode(&self) -> Vec<u8> {
        let surb_bytes: Vec<Vec<u8>> = self.surbs.iter().map(Surb::to_bytes).collect();
        let surbs_len: usize = surb_bytes.iter().map(Vec::len).sum();
        let mut out = Vec::with_capacity(3 + surbs_len + 64);
        out.push(VERSION);
        out.push(self.body.kind() as u8);
        out.push(u8::try_from(self.surbs.len()).unwrap_or(u8::MAX));
        for surb in &surb_bytes {
            out.extend_from_slice(surb);
        }
        match &self.body {
            RequestBody::Echo(bytes)
            | RequestBody::JsonRpc(bytes)
            | RequestBody::Relay(bytes)
            | RequestBody::Stream(bytes) => out.extend_from_slice(bytes),
            RequestBody::Http(http) => http.encode_into(&mut out),
        }
        out
    }

    /// Decodes a request whose SURBs are of `geometry`.
    pub fn decode(geometry: &Geometry, bytes: &[u8]) -> Result<Self, MessageError> {
        let (kind, surbs, rest) = split(geometry, bytes)?;
        let body = match Kind::try_from(kind)? {
            Kind::Echo => RequestBody::Echo(rest.to_vec()),
            Kind::Http => RequestBody::Http(HttpRequestMsg::decode(rest)?),
            Kind::JsonRpc => {
                let body = RequestBody::JsonRpc(rest.to_vec());
                body.validate()?;
                body
            }
            Kind::Relay => {
                let body = RequestBody::Relay(rest.to_vec());
                body.validate()?;
                body
            }
            Kind::Stream => {
                let body = RequestBody::Stream(rest.to_vec());
                body.validate()?;
                body
            }
        };
        Ok(Self { surbs, body })
    }

    /// Only the SURBs of a request, whatever its kind or body: lets an exit
    /// answer `BadRequest` or `Unsupported` to a request that
    /// [`Request::decode`] refuses for its kind or body.
    pub fn decode_surbs(geometry: &Geometry, bytes: &[u8]) -> Result<Vec<Surb>, MessageError> {
        split(geometry, bytes).map(|(_, surbs, _)| surbs)
    }
}

/// Version check, then the kind byte (unchecked), the SURBs and the body bytes.
fn split<'a>(geometry: &Geometry, bytes: &'a [u8]) -> Result<(u8, Vec<Surb>, &'a [u8]), MessageError> {
    let mut r = Reader::new(bytes);
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(MessageError::UnknownVersion(version));
    }
    let kind = r.u8("kind")?;
    let n_surbs = usize::from(r.u8("surb count")?);
    let surb_len = Surb::encoded_len(geometry);
    // Bounds-check all SURBs before parsing (and allocating) any.
    let surb_area = r.take("surbs", n_surbs.saturating_mul(surb_len))?;
    let surbs = surb_area
        .chunks_exact(surb_len.max(1))
        .map(|chunk| Surb::from_bytes(geometry, chunk))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((kind, surbs, r.rest()))
}
