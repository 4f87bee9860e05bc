//! Errors.

/// What went wrong with a stream message or a stream.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The bytes are not a valid stream message.
    #[error("malformed stream message: {0}")]
    Malformed(String),
    /// The peer broke the stream protocol (sent beyond the window, moved a
    /// FIN, acknowledged bytes never sent).
    #[error("stream protocol violation: {0}")]
    Protocol(&'static str),
}
