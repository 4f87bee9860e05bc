//! Client errors: `Clone` so one failure can be handed to every waiter.

use nox_message::MessageError;

/// Why a request failed or could not be sent.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The topology has no usable node for a position (no key for the
    /// client epoch, or every candidate is avoided).
    #[error("no route: {0}")]
    NoRoute(String),
    /// Building a packet or SURB failed.
    #[error("sphinx: {0}")]
    Sphinx(String),
    /// Encoding the request or decoding the reply failed.
    #[error("message: {0}")]
    Message(#[from] MessageError),
    /// No complete reply within the configured timeout. Never retried.
    #[error("no reply within the timeout (requests are not retransmitted)")]
    Timeout,
    /// The send queue (or the table of requests in flight) is full.
    #[error("client is busy: {0}")]
    Busy(&'static str),
    /// The client was stopped.
    #[error("client stopped")]
    Closed,
    /// Loading the topology or setting up links failed.
    #[error("setup: {0}")]
    Setup(String),
    /// A new topology is for another Sphinx geometry than the client's.
    #[error("the new topology is for another Sphinx geometry ({found}) than the client's ({expected})")]
    WrongGeometry {
        /// The client's geometry (scheme, packet length, hops).
        expected: String,
        /// The new topology's.
        found: String,
    },
}

impl ClientError {
    pub(crate) fn wrong_geometry(expected: &nox_sphinx::Geometry, found: &nox_sphinx::Geometry) -> Self {
        let describe = |g: &nox_sphinx::Geometry| {
            let tag: String = g.tag().iter().map(|b| format!("{b:02x}")).collect();
            format!("{}, {} bytes, {} hops, tag {tag}", g.scheme(), g.packet_len(), g.hops())
        };
        ClientError::WrongGeometry { expected: describe(expected), found: describe(found) }
    }
}

impl From<nox_sphinx::SphinxError> for ClientError {
    fn from(e: nox_sphinx::SphinxError) -> Self {
        ClientError::Sphinx(e.to_string())
    }
}
