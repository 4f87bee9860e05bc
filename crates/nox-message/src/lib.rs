#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod assembler;
mod client;
mod error;
mod exit;
mod http;
mod request;
mod response;
mod wire;

pub use assembler::{Assembler, Replies, Requests};
pub use client::{MAX_REPLY_LEN, REPLY_LIMITS, ReplyAssembler, request_fragments, surbs_needed};
pub use error::MessageError;
pub use exit::{MAX_REQUEST_LEN, REQUEST_LIMITS, RequestAssembler, max_reply_len, reply_packets, reply_packets_from};
pub use http::{
    HttpRequestMsg, HttpResponseMsg, MAX_HEADER_NAME_LEN, MAX_HEADER_VALUE_LEN, MAX_HEADERS, MAX_METHOD_LEN,
    MAX_URL_LEN,
};
/// The limits type of [`RequestAssembler::new`] and [`ReplyAssembler::new`].
pub use nox_fec::ReassemblyLimits;
pub use request::{Kind, MAX_SURBS, Request, RequestBody};
pub use response::{MAX_ERROR_MESSAGE_LEN, RESPONSE_HEADER_LEN, Response, Status};

/// The message format version, first byte of every request and response.
pub const VERSION: u8 = 1;
