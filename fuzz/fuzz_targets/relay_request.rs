//! Decodes arbitrary bytes as a relay request body (docs/spec/relay.md) the way an exit's
//! relayer does. Must never panic; whatever decodes re-encodes to the same bytes (one body per
//! request), and an accepted body followed by any extra byte is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_relayer::RelayRequest;

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = RelayRequest::decode(data) {
        assert_eq!(request.encode(), data, "decode accepted a non-canonical body");
        let mut longer = data.to_vec();
        longer.push(0);
        assert!(RelayRequest::decode(&longer).is_err(), "trailing byte accepted");
    }
});
