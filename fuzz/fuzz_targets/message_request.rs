//! Decodes arbitrary bytes as a NOX request (crates/nox-message) with the
//! default geometry. Must never panic; whatever decodes must validate and
//! re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_message::Request;
use nox_sphinx::Geometry;

fuzz_target!(|data: &[u8]| {
    let geometry = Geometry::default();
    let Ok(request) = Request::decode(&geometry, data) else {
        return;
    };
    assert!(request.validate().is_ok(), "decoded request fails validation");
    assert_eq!(request.encode(), data, "decode then encode changed the bytes");
});
