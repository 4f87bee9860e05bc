#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod endpoint;
mod error;
mod recv;
mod send;
mod wire;

pub use endpoint::{Endpoint, EndpointConfig, INITIAL_WINDOW, Outbound};
pub use error::StreamError;
pub use recv::RecvHalf;
pub use send::SendHalf;
pub use wire::{
    Ack, Data, MAX_DATA_LEN, MAX_HOST_LEN, MESSAGE_OVERHEAD, Pool, ResetCode, STREAM_VERSION, StreamId, StreamMessage,
    SurbBatch, Target,
};
