//! Feeds a sequence of fragments and clock steps, decoded from the fuzz input,
//! into a reassembler with small caps (crates/nox-fec). Must never panic, and
//! the memory, pending-message and completed-id caps must hold after every
//! step.
//!
//! Input: 6 bytes of limits, then operations, each one tag byte:
//! - 0: raw bytes (one length byte, then that many bytes);
//! - 1: a well-formed header with fields from the input and a filled shard;
//! - 2: a genuine fragment of one of three fixed messages;
//! - 3: advance the clock (two bytes, milliseconds).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_fec::{Accepted, HEADER_LEN, Layout, MessageId, Reassembler, ReassemblyLimits, encode};

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
}

/// The three genuine messages' fragments: encoded once per process, not once per input (the
/// Reed-Solomon encode under coverage instrumentation dominated each execution).
fn genuine_messages() -> &'static [Vec<Vec<u8>>] {
    static GENUINE: std::sync::OnceLock<Vec<Vec<Vec<u8>>>> = std::sync::OnceLock::new();
    GENUINE.get_or_init(encode_genuine)
}

fn encode_genuine() -> Vec<Vec<Vec<u8>>> {
    [(40usize, 1usize, 1usize), (300, 4, 2), (900, 6, 3)]
        .iter()
        .enumerate()
        .filter_map(|(n, &(len, d, p))| {
            let layout = Layout::new(len, d, p).ok()?;
            let message: Vec<u8> = (0..len).map(|i| (i * 7 + n) as u8).collect();
            encode(&message, MessageId::from_bytes([0xf0 + n as u8; 16]), &layout).ok()
        })
        .collect()
}

fn shaped(input: &mut Input<'_>) -> Option<Vec<u8>> {
    let id = input.byte()? % 4;
    let (index, data, parity) = (input.byte()?, input.byte()? % 8 + 1, input.byte()? % 5);
    let len = u16::from_be_bytes([input.byte()?, input.byte()?]) % 2500;
    let fill = input.byte()?;
    let layout = Layout::new(usize::from(len), usize::from(data), usize::from(parity)).ok()?;
    let mut bytes = vec![1u8];
    bytes.extend_from_slice(&[id; 16]);
    bytes.extend_from_slice(&[index % (data + parity), data, parity]);
    bytes.extend_from_slice(&u32::from(len).to_be_bytes());
    bytes.resize(HEADER_LEN + layout.shard_len(), fill);
    Some(bytes)
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let setup = input.bytes(6);
    let at = |i: usize| setup.get(i).copied().unwrap_or(0);
    let limits = ReassemblyLimits {
        max_message_len: 64 + usize::from(at(0)) * 8,
        max_buffered_bytes: 256 + usize::from(at(1)) * 16,
        max_pending_messages: 1 + usize::from(at(2) % 8),
        pending_ttl_ms: 1 + u64::from(at(3)) * 4,
        max_remembered_completed: usize::from(at(4) % 8),
        completed_ttl_ms: u64::from(at(5)) * 4,
    };
    let Ok(mut reassembler) = Reassembler::new(limits) else {
        return;
    };
    let genuine = genuine_messages();
    let mut now = 0u64;
    while let Some(tag) = input.byte() {
        let fragment = match tag % 4 {
            0 => {
                let len = usize::from(input.byte().unwrap_or(0));
                input.bytes(len).to_vec()
            }
            1 => match shaped(&mut input) {
                Some(bytes) => bytes,
                None => continue,
            },
            2 => {
                let pick = usize::from(input.byte().unwrap_or(0));
                let Some(message) = genuine.get(pick % genuine.len().max(1)) else {
                    continue;
                };
                let index = usize::from(input.byte().unwrap_or(0)) % message.len().max(1);
                match message.get(index) {
                    Some(bytes) => bytes.clone(),
                    None => continue,
                }
            }
            _ => {
                let step = u16::from_be_bytes([input.byte().unwrap_or(0), input.byte().unwrap_or(0)]);
                now += u64::from(step);
                reassembler.expire(now);
                continue;
            }
        };
        if let Ok(Accepted::Complete { message, .. }) = reassembler.accept(&fragment, now) {
            assert!(message.len() <= limits.max_message_len);
        }
        assert!(reassembler.buffered_bytes() <= limits.max_buffered_bytes);
        assert!(reassembler.pending_messages() <= limits.max_pending_messages);
        assert!(reassembler.remembered_completed() <= limits.max_remembered_completed);
    }
    // Once every deadline has passed, nothing is held.
    reassembler.expire(now + limits.pending_ttl_ms.max(limits.completed_ttl_ms));
    assert_eq!(reassembler.buffered_bytes(), 0);
    assert_eq!(reassembler.pending_messages(), 0);
});
