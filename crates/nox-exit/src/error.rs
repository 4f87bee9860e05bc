//! Errors returned to the anonymous client. Every message is safe to send back: it names only
//! what the client itself supplied (URL, method, an IP literal it wrote) and the exit's limits.
//! It never names an address the exit learnt by resolving a name, and it never says whether a
//! refused name resolved at all (see [`ExitError::Refused`]).

/// The status byte class of an error, sent in the reply message. Keep the numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ErrorKind {
    /// The request is malformed.
    BadRequest = 1,
    /// The request is well-formed but refused by policy.
    Forbidden = 2,
    /// The destination did not answer in time.
    Timeout = 3,
    /// A request or response exceeds a size limit.
    TooLarge = 4,
    /// The destination or upstream failed.
    Upstream = 5,
    /// The exit is at its concurrency limit.
    Busy = 6,
    /// The exit does not offer this service or feature.
    Unsupported = 7,
}

/// A failed exit request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExitError {
    /// Malformed request (URL, header, JSON, parameters).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The client's own IP literal is an address the exit refuses.
    #[error("destination {addr} is not a global address ({class} {network})")]
    NonGlobal {
        /// The refused address, as the client wrote it in the URL.
        addr: std::net::IpAddr,
        /// Its special-purpose class.
        class: &'static str,
        /// The refused range.
        network: &'static str,
    },
    /// A host name that does not lead to an address the exit may connect to: it does not
    /// resolve, resolves to nothing, or resolves (even in part) to a refused address. One
    /// message for all three, so that refusals map neither the exit's private names nor their
    /// addresses.
    #[error("destination {host} refused: it does not resolve to an address this exit may connect to")]
    Refused {
        /// The host name, as the client wrote it (lower-cased).
        host: String,
    },
    /// Refused by another policy (port, Host header, JSON-RPC method).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The total time limit expired.
    #[error("no complete answer within {0} ms")]
    Timeout(u128),
    /// The response exceeds the cap.
    #[error("response exceeds the limit of {0} bytes")]
    ResponseTooLarge(usize),
    /// The request exceeds a size limit.
    #[error("request too large: {0}")]
    RequestTooLarge(String),
    /// The destination or upstream failed.
    #[error("upstream error: {0}")]
    Upstream(String),
    /// Too many requests in flight.
    #[error("exit busy: {0} requests in flight")]
    Busy(usize),
    /// Service or feature not offered.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl ExitError {
    /// The status class sent to the client.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::BadRequest(_) => ErrorKind::BadRequest,
            Self::NonGlobal { .. } | Self::Refused { .. } | Self::Forbidden(_) => ErrorKind::Forbidden,
            Self::Timeout(_) => ErrorKind::Timeout,
            Self::ResponseTooLarge(_) | Self::RequestTooLarge(_) => ErrorKind::TooLarge,
            Self::Upstream(_) => ErrorKind::Upstream,
            Self::Busy(_) => ErrorKind::Busy,
            Self::Unsupported(_) => ErrorKind::Unsupported,
        }
    }
}
