//! The crate's error type.

/// Why an analysis could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnonymityError {
    /// The observation's events are not in non-decreasing time order.
    #[error("observation events are not sorted by time (event {index})")]
    UnsortedEvents {
        /// The first event whose time is earlier than its predecessor's.
        index: usize,
    },
    /// An event names a node that the topology does not contain.
    #[error("event {index} names node {node}, which is not in the topology")]
    UnknownNode {
        /// The offending event.
        index: usize,
        /// The node it names.
        node: u16,
    },
    /// A parameter is out of its domain (the message says which and why).
    #[error("invalid parameter: {0}")]
    InvalidParameter(&'static str),
    /// Two inputs that must have the same length do not.
    #[error("length mismatch: {left} vs {right}")]
    LengthMismatch {
        /// Length of the first input.
        left: usize,
        /// Length of the second input.
        right: usize,
    },
    /// There is nothing to score (no deliveries, no samples…).
    #[error("nothing to score: {0}")]
    Empty(&'static str),
}
