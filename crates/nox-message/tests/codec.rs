//! Round trips, bounds, truncation and trailing bytes of requests and responses.

mod common;

use common::*;
use nox_message::*;
use nox_sphinx::{Geometry, SphinxError, Surb};

fn round_trip(geometry: &Geometry, request: &Request) {
    request.validate().unwrap();
    let bytes = request.encode();
    let decoded = Request::decode(geometry, &bytes).unwrap();
    assert!(same(request, &decoded));
    assert_eq!(decoded.body, request.body);
    assert_eq!(decoded.surbs.len(), request.surbs.len());
}

fn bodies() -> Vec<RequestBody> {
    vec![
        RequestBody::Echo(vec![]),
        RequestBody::Echo(b"ping".to_vec()),
        RequestBody::Http(http_request()),
        RequestBody::JsonRpc(br#"{"jsonrpc":"2.0","method":"eth_blockNumber","id":1}"#.to_vec()),
    ]
}

#[test]
fn requests_of_every_kind_round_trip() {
    let geometry = Geometry::default();
    for body in bodies() {
        for n in [0, 1, 3] {
            round_trip(&geometry, &request(&geometry, n, body.clone()));
        }
    }
    let full = request(&geometry, MAX_SURBS, RequestBody::Echo(b"x".to_vec()));
    round_trip(&geometry, &full);
    let bytes = full.encode();
    assert_eq!(bytes.len(), 3 + 255 * Surb::encoded_len(&geometry) + 1);
    assert_eq!(&bytes[..3], &[1, 1, 255]);
}

#[test]
fn responses_of_every_status_round_trip() {
    let statuses = [
        Status::Ok,
        Status::BadRequest,
        Status::Forbidden,
        Status::Timeout,
        Status::TooLarge,
        Status::Upstream,
        Status::Busy,
        Status::Unsupported,
        Status::NotEnoughSurbs,
    ];
    for (value, status) in statuses.into_iter().enumerate() {
        assert_eq!(status as u8, value as u8);
        assert_eq!(Status::try_from(value as u8).unwrap(), status);
        let response =
            if status == Status::Ok { Response::ok(b"body".to_vec()) } else { Response::error(status, "é!") };
        let bytes = response.encode();
        assert_eq!(&bytes[..2], &[1, value as u8]);
        let decoded = Response::decode(&bytes).unwrap();
        assert_eq!(decoded, response);
        assert_eq!(decoded.error_message(), (status != Status::Ok).then_some("é!"));
    }
    let http = http_response();
    http.validate().unwrap();
    assert_eq!(HttpResponseMsg::decode(&http.encode()).unwrap(), http);
    assert_eq!(HttpRequestMsg::decode(&http_request().encode()).unwrap(), http_request());
}

#[test]
fn unknown_version_kind_and_status_are_refused() {
    let geometry = Geometry::default();
    assert_eq!(Request::decode(&geometry, &[2, 1, 0]).unwrap_err(), MessageError::UnknownVersion(2));
    assert_eq!(Request::decode(&geometry, &[1, 0, 0]).unwrap_err(), MessageError::UnknownKind(0));
    assert_eq!(Request::decode(&geometry, &[1, 6, 0]).unwrap_err(), MessageError::UnknownKind(6));
    assert_eq!(Response::decode(&[0, 0]).unwrap_err(), MessageError::UnknownVersion(0));
    assert_eq!(Response::decode(&[1, 9]).unwrap_err(), MessageError::UnknownStatus(9));
    assert_eq!(Response::decode(&[1, 0xff]).unwrap_err(), MessageError::UnknownStatus(0xff));
}

#[test]
fn error_messages_are_bounded_and_truncated_on_char_boundaries() {
    let at_max = "a".repeat(MAX_ERROR_MESSAGE_LEN);
    assert_eq!(Response::error(Status::Busy, &at_max).body.len(), 1024);
    assert_eq!(Response::error(Status::Busy, &(at_max.clone() + "b")).body.len(), 1024);
    // 1023 ASCII bytes then a 2-byte char: the char does not fit.
    let cut = "a".repeat(1023) + "é";
    assert_eq!(Response::error(Status::Busy, &cut).body, "a".repeat(1023).into_bytes());
    let mut over = Response::error(Status::Busy, &at_max).encode();
    assert!(Response::decode(&over).is_ok());
    over.push(b'a');
    assert!(matches!(Response::decode(&over), Err(MessageError::FieldTooLong { len: 1025, max: 1024, .. })));
    assert!(matches!(Response::decode(&[1, 3, 0xff]), Err(MessageError::InvalidField { .. })));
    // An Ok body is opaque: any bytes, any length.
    assert!(Response::decode(&[1, 0, 0xff, 0xfe]).is_ok());
}

#[test]
fn the_not_enough_surbs_error_always_fits_one_surb() {
    for geometry in [Geometry::default(), Geometry::new(2048, 3).unwrap(), Geometry::new(4096, 5).unwrap()] {
        let longest = Response::error(Status::NotEnoughSurbs, &"é".repeat(2000)).encode();
        assert_eq!(longest.len(), 2 + 1024);
        assert!(longest.len() <= max_reply_len(&geometry, 1), "{geometry:?}");
    }
}

fn http_with(edit: impl FnOnce(&mut HttpRequestMsg)) -> Result<HttpRequestMsg, MessageError> {
    let mut msg = http_request();
    edit(&mut msg);
    let validated = msg.validate();
    let decoded = HttpRequestMsg::decode(&msg.encode());
    assert_eq!(validated.is_ok(), decoded.is_ok(), "validate and decode disagree for {msg:?}");
    decoded
}

#[test]
fn every_http_request_bound_at_max_passes_and_max_plus_one_fails() {
    let too_long = |r: Result<HttpRequestMsg, MessageError>| matches!(r, Err(MessageError::FieldTooLong { .. }));
    assert!(http_with(|m| m.method = "M".repeat(MAX_METHOD_LEN)).is_ok());
    assert!(too_long(http_with(|m| m.method = "M".repeat(MAX_METHOD_LEN + 1))));
    assert!(http_with(|m| m.url = "u".repeat(MAX_URL_LEN)).is_ok());
    assert!(too_long(http_with(|m| m.url = "u".repeat(MAX_URL_LEN + 1))));
    assert!(http_with(|m| m.headers = vec![("a".into(), "b".into()); MAX_HEADERS]).is_ok());
    assert!(too_long(http_with(|m| m.headers = vec![("a".into(), "b".into()); MAX_HEADERS + 1])));
    assert!(http_with(|m| m.headers = vec![("n".repeat(MAX_HEADER_NAME_LEN), "v".into())]).is_ok());
    assert!(too_long(http_with(|m| m.headers = vec![("n".repeat(MAX_HEADER_NAME_LEN + 1), "v".into())])));
    assert!(http_with(|m| m.headers = vec![("n".into(), "v".repeat(MAX_HEADER_VALUE_LEN))]).is_ok());
    assert!(too_long(http_with(|m| m.headers = vec![("n".into(), "v".repeat(MAX_HEADER_VALUE_LEN + 1))])));
    // Lengths beyond LE16 are written saturated and still refused.
    assert!(too_long(http_with(|m| m.url = "u".repeat(70_000))));
    assert!(http_with(|m| m.body = vec![0; 100_000]).is_ok());
}

#[test]
fn http_character_rules() {
    let invalid = |r: Result<HttpRequestMsg, MessageError>| matches!(r, Err(MessageError::InvalidField { .. }));
    for method in ["", "get", "Get", "GE T", "GET\r", "GÉT"] {
        assert!(http_with(|m| m.method = method.into()).is_err(), "{method:?}");
    }
    for method in ["GET", "M-SEARCH", "PROPFIND", "X_1"] {
        assert!(http_with(|m| m.method = method.into()).is_ok(), "{method:?}");
    }
    assert!(invalid(http_with(|m| m.url = String::new())));
    assert!(http_with(|m| m.url = "https://例え.jp/é".into()).is_ok());
    for name in ["", "a b", "a:b", "é", "a\r"] {
        assert!(invalid(http_with(|m| m.headers = vec![(name.into(), "v".into())])), "{name:?}");
    }
    for value in ["a\rb", "a\nb", "a\0b"] {
        assert!(invalid(http_with(|m| m.headers = vec![("n".into(), value.into())])), "{value:?}");
    }
    assert!(http_with(|m| m.headers = vec![("n".into(), "a\tb é".into())]).is_ok());
    // A URL that is not UTF-8 on the wire.
    let mut bytes = http_request().encode();
    bytes[2 + 4 + 2] = 0xff;
    assert!(invalid(HttpRequestMsg::decode(&bytes)));
    let response = |status| HttpResponseMsg { status, ..http_response() };
    for (status, ok) in [(99, false), (100, true), (999, true), (1000, false), (0, false)] {
        assert_eq!(response(status).validate().is_ok(), ok);
        assert_eq!(HttpResponseMsg::decode(&response(status).encode()).is_ok(), ok, "{status}");
    }
}

#[test]
fn json_rpc_and_relay_bodies_must_not_be_empty() {
    let geometry = Geometry::default();
    for body in [RequestBody::JsonRpc(vec![]), RequestBody::Relay(vec![])] {
        let empty = request(&geometry, 1, body);
        assert!(empty.validate().is_err());
        assert!(matches!(Request::decode(&geometry, &empty.encode()), Err(MessageError::InvalidField { .. })));
    }
}

#[test]
fn truncation_at_every_offset_and_trailing_bytes_are_refused() {
    let geometry = Geometry::new(2048, 2).unwrap();
    let http = request(&geometry, 2, RequestBody::Http(http_request()));
    let bytes = http.encode();
    for cut in 0..bytes.len() {
        let err = Request::decode(&geometry, &bytes[..cut]).unwrap_err();
        assert!(matches!(err, MessageError::Truncated { .. }), "cut at {cut}: {err:?}");
    }
    let mut long = bytes.clone();
    long.push(0);
    assert_eq!(Request::decode(&geometry, &long).unwrap_err(), MessageError::TrailingBytes { extra: 1 });
    // Echo and JsonRpc bodies run to the end: only the fixed part can be cut.
    let echo = request(&geometry, 1, RequestBody::Echo(b"abc".to_vec())).encode();
    for cut in 0..3 + Surb::encoded_len(&geometry) {
        assert!(matches!(Request::decode(&geometry, &echo[..cut]), Err(MessageError::Truncated { .. })));
    }
    for msg in [http_response().encode(), http_request().encode()] {
        for cut in 0..msg.len() {
            let a = HttpResponseMsg::decode(&msg[..cut]).err();
            let b = HttpRequestMsg::decode(&msg[..cut]).err();
            assert!(a.is_some() && b.is_some(), "cut at {cut}");
        }
    }
    let mut long = http_response().encode();
    long.push(1);
    assert_eq!(HttpResponseMsg::decode(&long).unwrap_err(), MessageError::TrailingBytes { extra: 1 });
    for cut in 0..2 {
        assert!(matches!(Response::decode(&[1, 0][..cut]), Err(MessageError::Truncated { .. })));
    }
}

#[test]
fn surbs_of_another_geometry_are_refused() {
    let geometry = Geometry::new(2048, 2).unwrap();
    let other = Geometry::new(4096, 2).unwrap();
    let bytes = request(&other, 1, RequestBody::Echo(vec![])).encode();
    assert!(matches!(Request::decode(&geometry, &bytes), Err(MessageError::Sphinx(SphinxError::WrongGeometry { .. }))));
    let too_many = Request { surbs: vec![fake_surb(&geometry, 0); 256], body: RequestBody::Echo(vec![]) };
    assert!(matches!(too_many.validate(), Err(MessageError::FieldTooLong { len: 256, max: 255, .. })));
}

#[test]
fn surbs_of_a_request_with_an_unknown_kind_or_bad_body_can_still_be_read() {
    let geometry = Geometry::default();
    let mut bytes = request(&geometry, 2, RequestBody::Http(http_request())).encode();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff; // still valid: the body is opaque bytes
    bytes.push(0); // trailing byte: Http decode fails
    assert_eq!(Request::decode(&geometry, &bytes).unwrap_err(), MessageError::TrailingBytes { extra: 1 });
    assert_eq!(Request::decode_surbs(&geometry, &bytes).unwrap().len(), 2);
    bytes[1] = 0x7f;
    assert_eq!(Request::decode(&geometry, &bytes).unwrap_err(), MessageError::UnknownKind(0x7f));
    let surbs = Request::decode_surbs(&geometry, &bytes).unwrap();
    assert_eq!(surbs[1].to_bytes(), fake_surb(&geometry, 1).to_bytes());
    bytes[0] = 2;
    assert_eq!(Request::decode_surbs(&geometry, &bytes).unwrap_err(), MessageError::UnknownVersion(2));
}

#[test]
fn errors_map_to_the_status_an_exit_answers_with() {
    let geometry = Geometry::default();
    let status = |bytes: &[u8]| Request::decode(&geometry, bytes).unwrap_err().status();
    assert_eq!(status(&[1, 1]), Status::BadRequest);
    assert_eq!(status(&[2, 1, 0]), Status::BadRequest);
    assert_eq!(status(&[1, 9, 0]), Status::Unsupported);
    assert_eq!(status(&[1, 3, 0]), Status::BadRequest);
    assert_eq!(MessageError::NotEnoughSurbs { needed: 2, have: 1 }.status(), Status::NotEnoughSurbs);
    assert_eq!(MessageError::MessageTooLarge { len: 2, max: 1 }.status(), Status::TooLarge);
    let full = nox_fec::ReassemblyError::TooManyMessages { max: 1 };
    assert_eq!(MessageError::Reassembly(full).status(), Status::Busy);
}

#[test]
fn http_response_bounds_at_max_pass_and_max_plus_one_fail() {
    let with_headers = |headers| HttpResponseMsg { headers, ..http_response() };
    let ok = with_headers(vec![("a".into(), "v".repeat(MAX_HEADER_VALUE_LEN)); MAX_HEADERS]);
    assert!(ok.validate().is_ok());
    assert_eq!(HttpResponseMsg::decode(&ok.encode()).unwrap(), ok);
    let over = with_headers(vec![("a".into(), "v".into()); MAX_HEADERS + 1]);
    assert!(over.validate().is_err());
    assert!(matches!(HttpResponseMsg::decode(&over.encode()), Err(MessageError::FieldTooLong { len: 65, .. })));
    let long_name = with_headers(vec![("n".repeat(MAX_HEADER_NAME_LEN + 1), String::new())]);
    assert!(matches!(HttpResponseMsg::decode(&long_name.encode()), Err(MessageError::FieldTooLong { .. })));
}
