//! Decodes arbitrary bytes as NOX stream messages (crates/nox-stream) and
//! drives an endpoint with whatever decodes. Must never panic; whatever
//! decodes must re-encode to the same bytes; a peer's bytes never make the
//! receiver hold more than its window.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_stream::{Endpoint, EndpointConfig, StreamMessage};

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = StreamMessage::decode(data) {
        assert_eq!(message.encode(), data);
    }
    // The same bytes as a conversation: `len (1) ‖ message` records, 20 ms apart.
    let config = EndpointConfig { recv_capacity: 4096, send_capacity: 4096, ..EndpointConfig::default() };
    let mut endpoint = Endpoint::new(config);
    endpoint.write(&[7; 3000]);
    let mut rest = data;
    let mut now = 0u64;
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len).min(tail.len());
        let (record, tail) = tail.split_at(len);
        rest = tail;
        now += 20;
        if let Ok(message) = StreamMessage::decode(record) {
            let _ = endpoint.on_message(&message, now);
        }
        endpoint.on_timer(now);
        while let Some(out) = endpoint.poll(512, now) {
            if let Some(data) = out.data {
                assert!(data.offset + data.bytes.len() as u64 <= 3000);
            }
        }
        let _ = endpoint.read(100, now);
        assert!(endpoint.recv_half().readable() <= 4096);
    }
});
