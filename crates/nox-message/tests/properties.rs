//! Property tests: round trips of arbitrary valid messages, validate ⇔
//! decode(encode), and no panic on arbitrary bytes.

mod common;

use common::*;
use nox_message::*;
use nox_sphinx::Geometry;
use proptest::prelude::*;

fn header() -> impl Strategy<Value = (String, String)> {
    ("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}", "[ -~\t\u{80}-\u{10ffff}]{0,40}")
}

fn http_request_msg() -> impl Strategy<Value = HttpRequestMsg> {
    (
        "[!#$%&'*+.^_`|~0-9A-Z-]{1,16}",
        "\\PC{1,100}",
        prop::collection::vec(header(), 0..8),
        prop::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(method, url, headers, body)| HttpRequestMsg { method, url, headers, body })
}

fn http_response_msg() -> impl Strategy<Value = HttpResponseMsg> {
    (100u16..=999, prop::collection::vec(header(), 0..8), prop::collection::vec(any::<u8>(), 0..300))
        .prop_map(|(status, headers, body)| HttpResponseMsg { status, headers, body })
}

fn request_body() -> impl Strategy<Value = RequestBody> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300).prop_map(RequestBody::Echo),
        http_request_msg().prop_map(RequestBody::Http),
        prop::collection::vec(any::<u8>(), 1..300).prop_map(RequestBody::JsonRpc),
        prop::collection::vec(any::<u8>(), 1..300).prop_map(RequestBody::Relay),
    ]
}

fn status() -> impl Strategy<Value = Status> {
    (0u8..=8).prop_map(|v| Status::try_from(v).unwrap())
}

/// Possibly invalid HTTP messages: any strings, small bounds crossed often.
fn any_http_request() -> impl Strategy<Value = HttpRequestMsg> {
    (
        "\\PC{0,18}|[A-Z]{15,17}",
        "\\PC{0,10}",
        prop::collection::vec(("\\PC{0,4}", "[a\r\n\0 é]{0,4}"), 0..3),
        prop::collection::vec(any::<u8>(), 0..10),
    )
        .prop_map(|(method, url, headers, body)| HttpRequestMsg { method, url, headers, body })
}

proptest! {
    #[test]
    fn valid_requests_round_trip(body in request_body(), n_surbs in 0usize..4) {
        let geometry = Geometry::new(1024, 2).unwrap();
        let request = request(&geometry, n_surbs, body);
        prop_assert!(request.validate().is_ok());
        let bytes = request.encode();
        let decoded = Request::decode(&geometry, &bytes).unwrap();
        prop_assert_eq!(decoded.encode(), bytes);
        prop_assert_eq!(decoded.body, request.body);
    }

    #[test]
    fn valid_responses_round_trip(status in status(), body in prop::collection::vec(any::<u8>(), 0..300),
                                  message in "\\PC{0,1100}", http in http_response_msg()) {
        let response = if status == Status::Ok { Response::ok(body) } else { Response::error(status, &message) };
        prop_assert_eq!(Response::decode(&response.encode()).unwrap(), response);
        prop_assert!(http.validate().is_ok());
        prop_assert_eq!(HttpResponseMsg::decode(&http.encode()).unwrap(), http);
    }

    #[test]
    fn validate_agrees_with_decode_of_encode(http in any_http_request()) {
        let decoded = HttpRequestMsg::decode(&http.encode());
        prop_assert_eq!(http.validate().is_ok(), decoded.is_ok());
        if let Ok(decoded) = decoded {
            prop_assert_eq!(decoded, http);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600), prefix in 0usize..4) {
        let geometry = Geometry::new(1024, 2).unwrap();
        // Often start with a valid version, kind and a small SURB count.
        let mut data = [1u8, 2, 0][..prefix.min(3)].to_vec();
        data.extend_from_slice(&bytes);
        if let Ok(request) = Request::decode(&geometry, &data) {
            prop_assert_eq!(request.encode(), data.clone());
        }
        if let Ok(response) = Response::decode(&data) {
            prop_assert_eq!(response.encode(), data.clone());
        }
        if let Ok(http) = HttpResponseMsg::decode(&bytes) {
            prop_assert_eq!(http.encode(), bytes.clone());
        }
        if let Ok(http) = HttpRequestMsg::decode(&bytes) {
            prop_assert_eq!(http.encode(), bytes);
        }
    }

    #[test]
    fn assemblers_never_panic_on_arbitrary_fragments(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let geometry = Geometry::new(1024, 2).unwrap();
        let mut exit = RequestAssembler::new(REQUEST_LIMITS).unwrap();
        let mut client = ReplyAssembler::new(REPLY_LIMITS).unwrap();
        let _ = exit.accept(&geometry, &bytes, 0);
        let _ = client.accept(&bytes, 0);
    }
}
