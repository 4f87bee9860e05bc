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
    assert!(matches!(parse_response(b"SMTP 200 OK\r\n\r\n"), Err(HttpError::MalformedResponse(_))));
    // Extra bytes after content-length are ignored; no content-length: to the end.
    assert_eq!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokay"), Ok((200, &b"ok"[..])));
    assert_eq!(parse_response(b"HTTP/1.0 200 OK\r\n\r\nall"), Ok((200, &b"all"[..])));
}

/// Every framing ambiguity a second parser (a proxy, an upstream) might read differently is
/// refused, not interpreted.
#[test]
fn ambiguous_framing_is_refused() {
    let head = |headers: &str| format!("POST /descriptor HTTP/1.1\r\nhost: d\r\n{headers}\r\n");
    let parse = |headers: &str| parse_request_head(head(headers).as_bytes(), 100);
    assert_eq!(parse("content-length: 5\r\n").unwrap().content_length, 5);
    assert_eq!(parse("Content-Length:\t7 \r\n").unwrap().content_length, 7);
    for bad_length in ["+5", "-0", " ", "", "5 5", "0x5", "5,5", "5.0", "1e1", "٥", "0000000005"] {
        let result = parse(&format!("content-length: {bad_length}\r\n"));
        assert!(matches!(result, Err(HttpError::Malformed(_))), "content-length {bad_length:?} gave {result:?}");
    }
    for (headers, what) in [
        ("content-length: 5\r\ncontent-length: 5\r\n", "duplicate, equal"),
        ("content-length: 5\r\nCONTENT-LENGTH: 6\r\n", "duplicate, conflicting"),
        ("content-length : 5\r\n", "space before the colon"),
        ("content-length: 5\r\n folded\r\n", "obsolete line folding"),
        ("x-a: b\nc\r\n", "bare LF"),
        ("x-a: b\rc\r\n", "bare CR"),
        ("x-a: b\x00c\r\n", "control character"),
        ("host: e\r\n", "second host"),
        ("bad name: x\r\n", "space in a name"),
        (": x\r\n", "empty name"),
        ("x-a: caf\u{e9}\r\n", "non-ASCII"),
    ] {
        assert!(matches!(parse(headers), Err(HttpError::Malformed(_))), "{what}: {:?}", parse(headers));
    }
    for te in ["chunked", "identity", "gzip, chunked"] {
        assert_eq!(parse(&format!("transfer-encoding: {te}\r\n")), Err(HttpError::LengthRequired));
        assert_eq!(
            parse(&format!("content-length: 5\r\ntransfer-encoding: {te}\r\n")),
            Err(HttpError::LengthRequired),
            "{te} with a length"
        );
    }
    // Request line: one space between three parts, a token method, a visible-ASCII path.
    let line = |l: &str| parse_request_head(format!("{l}\r\n\r\n").as_bytes(), 100);
    for bad in ["GET  /topology HTTP/1.1", "GET /topology  HTTP/1.1", "G(T /topology HTTP/1.1", "GET /a\tb HTTP/1.1"] {
        assert!(matches!(line(bad), Err(HttpError::Malformed(_))), "{bad:?}");
    }
    // Overlong lines and too many headers: 431.
    assert_eq!(parse(&format!("x-a: {}\r\n", "a".repeat(4000))), Err(HttpError::HeadTooLarge));
    assert_eq!(parse(&"x-a: b\r\n".repeat(40)), Err(HttpError::HeadTooLarge));
    assert!(parse(&"x-a: b\r\n".repeat(30)).is_ok());
}

#[test]
fn responses_are_framed_strictly_too() {
    assert!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: +2\r\n\r\nok").is_err());
    assert!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nokay").is_err());
    assert!(parse_response(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n").is_err());
    assert!(parse_response(b"HTTP/1.1 20 OK\r\n\r\n").is_err());
    assert!(parse_response(b"HTTP/1.1 2000 OK\r\n\r\n").is_err());
}

proptest::proptest! {
    /// On any bytes: no panic, and whatever parses stays inside the subset.
    #[test]
    fn arbitrary_heads_parse_inside_the_subset(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
        if let Some(end) = head_end(&bytes)
            && let Ok(head) = parse_request_head(&bytes[..end], 100)
        {
            proptest::prop_assert!(head.content_length <= 100);
            proptest::prop_assert!(head.path.starts_with('/'));
            proptest::prop_assert!(head.method.bytes().all(|b| b.is_ascii_graphic()));
        }
        let _ = parse_response(&bytes);
    }

    /// A well-formed head with one content-length header parses to exactly that length, and
    /// any one byte changed in the length's digits either keeps a decimal length or is refused.
    #[test]
    fn lengths_are_exactly_decimal(n in 0usize..100_000, junk in proptest::num::u8::ANY, at in 0usize..6) {
        let digits = n.to_string();
        let good = format!("POST /d HTTP/1.1\r\ncontent-length: {digits}\r\n\r\n");
        proptest::prop_assert_eq!(parse_request_head(good.as_bytes(), usize::MAX).map(|h| h.content_length), Ok(n));
        let mut bytes = digits.into_bytes();
        let at = at.min(bytes.len() - 1);
        bytes[at] = junk;
        let bad = [b"POST /d HTTP/1.1\r\ncontent-length: ".as_slice(), &bytes, b"\r\n\r\n"].concat();
        if let Ok(head) = parse_request_head(&bad, usize::MAX) {
            proptest::prop_assert!(bytes.iter().all(u8::is_ascii_digit) || junk == b' ' || junk == b'\t');
            let text = String::from_utf8(bytes).unwrap();
            proptest::prop_assert_eq!(Some(head.content_length), text.trim().parse().ok());
        }
    }
}
