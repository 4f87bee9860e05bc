//! The directory's parsers on arbitrary bytes: a request head, a whole response, and an
//! uploaded descriptor (with its JSON round trip) must never panic, and what parses respects
//! the limits. Seed corpus: a request, a response and a descriptor from the topology vectors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_directory::http::{MAX_BODY_BYTES, head_end, parse_request_head, parse_response};
use nox_topology::SignedDescriptor;

fuzz_target!(|data: &[u8]| {
    if let Some(end) = head_end(data)
        && let Ok(head) = parse_request_head(&data[..end], MAX_BODY_BYTES)
    {
        assert!(head.content_length <= MAX_BODY_BYTES);
        assert!(head.path.starts_with('/'));
        assert!(head.path.bytes().all(|b| b.is_ascii_graphic()), "path is visible ASCII");
        assert!(!head.method.is_empty() && head.method.bytes().all(|b| b.is_ascii_graphic()), "method is a token");
    }
    if let Ok((_, body)) = parse_response(data) {
        assert!(body.len() <= data.len());
    }
    if let Ok(descriptor) = SignedDescriptor::from_json(data) {
        let json = descriptor.to_json().expect("a parsed descriptor serialises");
        assert_eq!(SignedDescriptor::from_json(json.as_bytes()).as_ref(), Ok(&descriptor), "JSON round trip");
        let _ = descriptor.verify_signature();
    }
});
