//! One reassembler for both directions: request fragments at the exit,
//! reply fragments at the client. The direction is a type parameter so each
//! side gets its own `accept` (decoded requests at the exit, encoded
//! responses at the client) over the same bounded `nox-fec` reassembler.

use core::marker::PhantomData;

use nox_fec::{Accepted, Reassembler, ReassemblyLimits};

use crate::MessageError;

/// Marker: request fragments (forward payloads), reassembled by an exit.
#[derive(Debug)]
pub enum Requests {}

/// Marker: reply fragments (opened SURB replies), reassembled by a client.
#[derive(Debug)]
pub enum Replies {}

/// A bounded reassembler of message fragments; see [`crate::RequestAssembler`]
/// and [`crate::ReplyAssembler`].
#[derive(Debug)]
pub struct Assembler<Direction> {
    inner: Reassembler,
    direction: PhantomData<Direction>,
}

impl<Direction> Assembler<Direction> {
    /// An assembler with `limits` (usually [`crate::REQUEST_LIMITS`] or
    /// [`crate::REPLY_LIMITS`]).
    pub fn new(limits: ReassemblyLimits) -> Result<Self, MessageError> {
        Ok(Self { inner: Reassembler::new(limits)?, direction: PhantomData })
    }

    /// Feeds one fragment; returns the encoded message once any d distinct
    /// fragments of it are in.
    pub fn accept_raw(&mut self, fragment: &[u8], now_ms: u64) -> Result<Option<Vec<u8>>, MessageError> {
        match self.inner.accept(fragment, now_ms)? {
            Accepted::Complete { message, .. } => Ok(Some(message)),
            Accepted::Pending { .. } | Accepted::Duplicate { .. } | Accepted::AlreadyComplete { .. } => Ok(None),
        }
    }

    /// Drops incomplete messages past their deadline; returns how many.
    pub fn expire(&mut self, now_ms: u64) -> usize {
        self.inner.expire(now_ms)
    }

    /// When [`Self::expire`] next has work, if ever.
    pub fn next_deadline(&self) -> Option<u64> {
        self.inner.next_deadline()
    }

    /// Incomplete messages held.
    pub fn pending(&self) -> usize {
        self.inner.pending_messages()
    }
}
