//! Responses: version, status, body.

use crate::{MessageError, VERSION, wire::Reader};

/// Longest error message, bytes.
pub const MAX_ERROR_MESSAGE_LEN: usize = 1024;
/// Bytes before the response body: version and status.
pub const RESPONSE_HEADER_LEN: usize = 2;

/// The outcome of a request. Values 1..=7 are the exit's `ErrorKind` numbering.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Performed; the body is the kind's answer.
    Ok = 0,
    /// The request was malformed or refused by policy checks.
    BadRequest = 1,
    /// The exit's policy forbids the destination.
    Forbidden = 2,
    /// The upstream did not answer in time.
    Timeout = 3,
    /// The request or the answer exceeds a size limit.
    TooLarge = 4,
    /// The upstream failed.
    Upstream = 5,
    /// The exit is overloaded.
    Busy = 6,
    /// The exit does not offer this kind.
    Unsupported = 7,
    /// The answer needs more SURBs than the request carried.
    NotEnoughSurbs = 8,
}

impl TryFrom<u8> for Status {
    type Error = MessageError;

    fn try_from(value: u8) -> Result<Self, MessageError> {
        Ok(match value {
            0 => Self::Ok,
            1 => Self::BadRequest,
            2 => Self::Forbidden,
            3 => Self::Timeout,
            4 => Self::TooLarge,
            5 => Self::Upstream,
            6 => Self::Busy,
            7 => Self::Unsupported,
            8 => Self::NotEnoughSurbs,
            other => return Err(MessageError::UnknownStatus(other)),
        })
    }
}

/// A response from the exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The outcome.
    pub status: Status,
    /// For `Ok`, the kind's answer (decode an Http one with
    /// [`crate::HttpResponseMsg::decode`]); otherwise a UTF-8 message of at
    /// most 1024 bytes.
    pub body: Vec<u8>,
}

/// The longest prefix of `s` of at most `max` bytes ending on a char boundary.
fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Response {
    /// A successful response carrying `body`.
    pub fn ok(body: impl Into<Vec<u8>>) -> Self {
        Self { status: Status::Ok, body: body.into() }
    }

    /// An error response; `message` is cut to 1024 bytes on a char boundary.
    pub fn error(status: Status, message: &str) -> Self {
        Self { status, body: truncate_str(message, MAX_ERROR_MESSAGE_LEN).as_bytes().to_vec() }
    }

    /// `version ‖ status ‖ body`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RESPONSE_HEADER_LEN + self.body.len());
        out.push(VERSION);
        out.push(self.status as u8);
        out.extend_from_slice(&self.body);
        out
    }

    /// Decodes a response. An error response's body must be UTF-8 of at most
    /// 1024 bytes; an `Ok` body is returned as is (its form depends on the
    /// request's kind).
    pub fn decode(bytes: &[u8]) -> Result<Self, MessageError> {
        let mut r = Reader::new(bytes);
        let version = r.u8("version")?;
        if version != VERSION {
            return Err(MessageError::UnknownVersion(version));
        }
        let status = Status::try_from(r.u8("status")?)?;
        let body = r.rest();
        if status != Status::Ok {
            if body.len() > MAX_ERROR_MESSAGE_LEN {
                return Err(MessageError::FieldTooLong {
                    field: "error message",
                    len: body.len(),
                    max: MAX_ERROR_MESSAGE_LEN,
                });
            }
            if core::str::from_utf8(body).is_err() {
                return Err(MessageError::InvalidField { field: "error message", reason: "not UTF-8" });
            }
        }
        Ok(Self { status, body: body.to_vec() })
    }

    /// The error message of a non-`Ok` response (`None` for `Ok`, or a body
    /// that is not UTF-8).
    pub fn error_message(&self) -> Option<&str> {
        match self.status {
            Status::Ok => None,
            _ => core::str::from_utf8(&self.body).ok(),
        }
    }
}
