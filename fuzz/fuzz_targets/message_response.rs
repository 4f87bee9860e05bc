//! Decodes arbitrary bytes as a NOX response and as an HTTP response body
//! (crates/nox-message). Must never panic; whatever decodes must re-encode
//! to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_message::{HttpResponseMsg, Response, Status};

fuzz_target!(|data: &[u8]| {
    if let Ok(response) = Response::decode(data) {
        assert_eq!(response.encode(), data);
        if response.status != Status::Ok {
            assert!(response.error_message().is_some_and(|m| m.len() <= 1024));
        }
        if let Ok(http) = HttpResponseMsg::decode(&response.body) {
            assert_eq!(http.encode(), response.body);
        }
    }
    if let Ok(http) = HttpResponseMsg::decode(data) {
        assert!(http.validate().is_ok());
        assert_eq!(http.encode(), data);
    }
});
