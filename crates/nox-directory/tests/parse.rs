//! The HTTP subset's pure parsers (docs/spec/directory.md §2).

use nox_directory::http::{HttpError, head_end, parse_request_head, parse_response, response};

#[test]
fn request_heads() {
    let head = b"POST /descriptor HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n";
    assert_eq!(head_end(head), Some(head.len()));
    let parsed = parse_request_head(head, 100).unwrap();
    assert_eq!((parsed.method.as_str(), parsed.path.as_str(), parsed.content_length), ("POST", "/descriptor", 12));
    assert_eq!(parse_request_head(head, 11), Err(HttpError::BodyTooLarge(12)));
    let bad = |h: &[u8]| parse_request_head(h, 100).unwrap_err();
    assert!(matches!(bad(b"GET /topology\r\n\r\n"), HttpError::Malformed(_)));
    assert!(matches!(bad(b"GET topology HTTP/1.1\r\n\r\n"), HttpError::Malformed(_)));
    assert!(matches!(bad(b"GET / HTTP/2\r\n\r\n"), HttpError::Malformed(_)));
    assert!(matches!(bad(b"GET / HTTP/1.1\r\nno colon\r\n\r\n"), HttpError::Malformed(_)));
    assert!(matches!(bad(b"GET / HTTP/1.1\r\ncontent-length: -1\r\n\r\n"), HttpError::Malformed(_)));
    assert!(matches!(
        bad(b"GET / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n"),
        HttpError::Malformed(_)
    ));
    assert_eq!(bad(b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"), HttpError::LengthRequired);
    assert!(matches!(bad(&[0xff, 0xfe, b'\r', b'\n', b'\r', b'\n']), HttpError::Malformed(_)));
}

#[test]
fn responses_round_trip_and_truncation_is_detected() {
    let whole = response(422, "text/plain", b"refused: no\n");
    assert_eq!(parse_response(&whole), Ok((422, &b"refused: no\n"[..])));
    assert_eq!(parse_response(&whole[..whole.len() - 1]), Err(HttpError::Truncated));
    assert_eq!(parse_response(b"HTTP/1.1 200 OK\r\n"), Err(HttpError::Truncated));
    assert!(matches!(parse_response(b"SMTP 200 OK\r\n\r\n"), Err(HttpError::Malformed(_))));
    // Extra bytes after content-length are ignored; no content-length: to the end.
    assert_eq!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokay"), Ok((200, &b"ok"[..])));
    assert_eq!(parse_response(b"HTTP/1.0 200 OK\r\n\r\nall"), Ok((200, &b"all"[..])));
}
