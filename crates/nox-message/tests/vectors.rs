//! Known-answer vectors for the message format (`docs/spec/vectors/messages.json`).
//!
//! The vectors are rebuilt here from their inputs and compared with the
//! committed file. To rewrite the file after an intended format change:
//!
//! ```text
//! NOX_REGENERATE_VECTORS=1 cargo test -p nox-message --test vectors -- committed_vectors_match
//! ```

mod common;

use std::path::PathBuf;

use common::*;
use nox_message::*;
use nox_sphinx::{Geometry, Surb};
use serde_json::{Value, json};

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/messages.json")
}

fn hex_list(surbs: &[Surb]) -> Vec<String> {
    surbs.iter().map(|s| hex::encode(s.to_bytes())).collect()
}

fn headers_json(headers: &[(String, String)]) -> Value {
    headers.iter().map(|(n, v)| json!([n, v])).collect()
}

fn requests(geometry: &Geometry) -> Vec<(&'static str, Request)> {
    vec![
        ("echo, no SURB, empty body", request(geometry, 0, RequestBody::Echo(vec![]))),
        ("echo, one SURB", request(geometry, 1, RequestBody::Echo(b"ping".to_vec()))),
        ("http POST with headers, two SURBs", request(geometry, 2, RequestBody::Http(http_request()))),
        (
            "http GET, no header, empty body, one SURB",
            request(
                geometry,
                1,
                RequestBody::Http(HttpRequestMsg {
                    method: "GET".into(),
                    url: "https://example.org/".into(),
                    headers: vec![],
                    body: vec![],
                }),
            ),
        ),
        (
            "json-rpc, one SURB",
            request(geometry, 1, RequestBody::JsonRpc(br#"{"jsonrpc":"2.0","method":"eth_chainId","id":1}"#.to_vec())),
        ),
        ("relay quote, one SURB", request(geometry, 1, RequestBody::Relay(vec![0x01]))),
        // A stream message (docs/spec/streams.md): `OPEN example.org:443` with a batch of two SURBs.
        (
            "stream open, two SURBs",
            request(
                geometry,
                2,
                RequestBody::Stream(
                    [&[1u8][..], &[7; 16], &[1, 0xbb, 1, 11], b"example.org", &[3, 1, 0, 0, 0, 2, 0]].concat(),
                ),
            ),
        ),
    ]
}

fn request_vector(name: &str, request: &Request) -> Value {
    let body = match &request.body {
        RequestBody::Echo(bytes) => json!({ "echo": hex::encode(bytes) }),
        RequestBody::JsonRpc(bytes) => json!({ "json_rpc": hex::encode(bytes) }),
        RequestBody::Relay(bytes) => json!({ "relay": hex::encode(bytes) }),
        RequestBody::Stream(bytes) => json!({ "stream": hex::encode(bytes) }),
        RequestBody::Http(h) => json!({ "http": {
            "method": h.method, "url": h.url, "headers": headers_json(&h.headers), "body": hex::encode(&h.body),
        }}),
    };
    json!({
        "name": name,
        "kind": request.body.kind() as u8,
        "surbs": hex_list(&request.surbs),
        "body": body,
        "encoded": hex::encode(request.encode()),
    })
}

fn responses() -> Vec<(&'static str, Response, Option<HttpResponseMsg>)> {
    let http = http_response();
    vec![
        ("ok, echo body", Response::ok(b"ping".to_vec()), None),
        ("ok, empty body", Response::ok(vec![]), None),
        ("ok, http response", Response::ok(http.encode()), Some(http)),
        ("ok, json-rpc", Response::ok(br#"{"jsonrpc":"2.0","result":"0x1","id":1}"#.to_vec()), None),
        ("bad request", Response::error(Status::BadRequest, "bad request"), None),
        ("forbidden", Response::error(Status::Forbidden, "destination not allowed"), None),
        ("timeout", Response::error(Status::Timeout, "upstream timed out"), None),
        ("too large", Response::error(Status::TooLarge, "body too large"), None),
        ("upstream", Response::error(Status::Upstream, "connection refused"), None),
        ("busy", Response::error(Status::Busy, ""), None),
        ("unsupported", Response::error(Status::Unsupported, "kind not offered"), None),
        ("not enough SURBs", Response::error(Status::NotEnoughSurbs, "need 7 SURBs, got 3"), None),
    ]
}

fn response_vector((name, response, http): &(&str, Response, Option<HttpResponseMsg>)) -> Value {
    let mut v = json!({
        "name": name,
        "status": response.status as u8,
        "body": hex::encode(&response.body),
        "encoded": hex::encode(response.encode()),
    });
    if let Some(h) = http {
        v["http"] = json!({ "status": h.status, "headers": headers_json(&h.headers), "body": hex::encode(&h.body) });
    }
    v
}

/// A stable name per decode error, as written in the vectors.
fn error_name(err: &MessageError) -> &'static str {
    match err {
        MessageError::Truncated { .. } => "Truncated",
        MessageError::TrailingBytes { .. } => "TrailingBytes",
        MessageError::UnknownVersion(_) => "UnknownVersion",
        MessageError::UnknownKind(_) => "UnknownKind",
        MessageError::UnknownStatus(_) => "UnknownStatus",
        MessageError::FieldTooLong { .. } => "FieldTooLong",
        MessageError::InvalidField { .. } => "InvalidField",
        MessageError::Sphinx(_) => "Sphinx",
        _ => "other",
    }
}

fn invalid_requests(geometry: &Geometry) -> Vec<(&'static str, Vec<u8>)> {
    let echo = request(geometry, 1, RequestBody::Echo(b"ping".to_vec())).encode();
    let http = request(geometry, 0, RequestBody::Http(http_request())).encode();
    let edit = |base: &[u8], at: usize, value: u8| {
        let mut bytes = base.to_vec();
        bytes[at] = value;
        bytes
    };
    let mut trailing = http.clone();
    trailing.push(0);
    vec![
        ("empty", vec![]),
        ("version 2", edit(&echo, 0, 2)),
        ("kind 0", edit(&echo, 1, 0)),
        ("kind 6", edit(&echo, 1, 6)),
        ("two SURBs announced, one present", edit(&echo, 2, 2)),
        ("SURB with another geometry tag", edit(&echo, 3 + 64, echo[3 + 64] ^ 1)),
        ("http, trailing byte", trailing),
        ("http, lowercase method", edit(&http, 5, b'p')),
        ("http, method length 17", edit(&http, 3, 17)),
        ("http, body one byte short", http[..http.len() - 1].to_vec()),
        ("json-rpc, empty body", vec![1, 3, 0]),
    ]
}

fn invalid_responses() -> Vec<(&'static str, Vec<u8>)> {
    let mut long = vec![1, 1];
    long.extend(std::iter::repeat_n(b'a', 1025));
    vec![
        ("empty", vec![]),
        ("version only", vec![1]),
        ("version 0", vec![0, 0]),
        ("status 9", vec![1, 9]),
        ("error message not UTF-8", vec![1, 5, 0xc3]),
        ("error message of 1025 bytes", long),
    ]
}

fn invalid_vector(geometry: &Geometry, (name, bytes): (&str, Vec<u8>), request: bool) -> Value {
    let outcome =
        if request { Request::decode(geometry, &bytes).map(|_| ()) } else { Response::decode(&bytes).map(|_| ()) };
    let error = match outcome {
        Ok(()) => "accepted",
        Err(err) => error_name(&err),
    };
    json!({ "name": name, "encoded": hex::encode(&bytes), "error": error })
}

fn all_vectors() -> Value {
    let geometry = Geometry::default();
    json!({
        "description": "NOX message format v1 test vectors; see docs/spec/messages.md. Geometry: the default \
            (4096-byte packets, 3 hops; 32768 before issue 32). SURBs are synthetic: byte i of SURB number k is (7*i + k) mod 256, \
            except bytes 64..68, the geometry tag (Surb::from_bytes checks only the length and the tag).",
        "version": VERSION,
        "geometry": { "packet_len": geometry.packet_len(), "hops": geometry.hops(),
                      "tag": hex::encode(geometry.tag()), "surb_len": Surb::encoded_len(&geometry) },
        "requests": requests(&geometry).iter().map(|(n, r)| request_vector(n, r)).collect::<Vec<_>>(),
        "responses": responses().iter().map(response_vector).collect::<Vec<_>>(),
        "invalid_requests": invalid_requests(&geometry).into_iter()
            .map(|c| invalid_vector(&geometry, c, true)).collect::<Vec<_>>(),
        "invalid_responses": invalid_responses().into_iter()
            .map(|c| invalid_vector(&geometry, c, false)).collect::<Vec<_>>(),
    })
}

#[test]
fn committed_vectors_match_the_implementation() {
    let generated = all_vectors();
    let path = vectors_path();
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&generated).expect("serializes") + "\n";
        std::fs::write(&path, text).expect("writes the vector file");
    }
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).expect("vector file exists (NOX_REGENERATE_VECTORS=1 writes it)"),
    )
    .expect("vector file is JSON");
    assert_eq!(committed, generated, "vectors differ; see the comment at the top of this file");
}

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("hex string")).expect("hex")
}

fn headers_of(v: &Value) -> Vec<(String, String)> {
    let pair = |p: &Value| (p[0].as_str().expect("name").to_owned(), p[1].as_str().expect("value").to_owned());
    v.as_array().expect("headers").iter().map(pair).collect()
}

/// Reads the committed file as a second implementation would: decode every
/// vector, compare it with its fields, and check the expected errors.
#[test]
fn committed_vectors_decode() {
    let vectors: Value =
        serde_json::from_str(&std::fs::read_to_string(vectors_path()).expect("vector file exists")).expect("JSON");
    let geometry = Geometry::default();
    assert_eq!(vectors["geometry"]["tag"], hex::encode(geometry.tag()));
    let reqs = vectors["requests"].as_array().expect("requests");
    assert_eq!(reqs.len(), requests(&geometry).len());
    for v in reqs {
        let decoded = Request::decode(&geometry, &unhex(&v["encoded"])).expect("valid request vector");
        assert_eq!(decoded.body.kind() as u64, v["kind"].as_u64().expect("kind"));
        let surbs: Vec<Vec<u8>> = v["surbs"].as_array().expect("surbs").iter().map(unhex).collect();
        assert_eq!(decoded.surbs.iter().map(Surb::to_bytes).collect::<Vec<_>>(), surbs);
        let body = &v["body"];
        let want = match &decoded.body {
            RequestBody::Echo(_) => RequestBody::Echo(unhex(&body["echo"])),
            RequestBody::JsonRpc(_) => RequestBody::JsonRpc(unhex(&body["json_rpc"])),
            RequestBody::Relay(_) => RequestBody::Relay(unhex(&body["relay"])),
            RequestBody::Stream(_) => RequestBody::Stream(unhex(&body["stream"])),
            RequestBody::Http(_) => RequestBody::Http(HttpRequestMsg {
                method: body["http"]["method"].as_str().expect("method").into(),
                url: body["http"]["url"].as_str().expect("url").into(),
                headers: headers_of(&body["http"]["headers"]),
                body: unhex(&body["http"]["body"]),
            }),
        };
        assert_eq!(decoded.body, want, "{}", v["name"]);
    }
    let resps = vectors["responses"].as_array().expect("responses");
    assert_eq!(resps.len(), responses().len());
    for v in resps {
        let decoded = Response::decode(&unhex(&v["encoded"])).expect("valid response vector");
        assert_eq!(decoded.status as u64, v["status"].as_u64().expect("status"));
        assert_eq!(decoded.body, unhex(&v["body"]));
        if let Some(http) = v.get("http") {
            let msg = HttpResponseMsg::decode(&decoded.body).expect("http body");
            assert_eq!(u64::from(msg.status), http["status"].as_u64().expect("status"));
            assert_eq!(msg.headers, headers_of(&http["headers"]));
            assert_eq!(msg.body, unhex(&http["body"]));
        }
    }
    for (key, request) in [("invalid_requests", true), ("invalid_responses", false)] {
        for v in vectors[key].as_array().expect("invalid vectors") {
            let bytes = unhex(&v["encoded"]);
            let err = if request { Request::decode(&geometry, &bytes).err() } else { Response::decode(&bytes).err() };
            let err = err.unwrap_or_else(|| panic!("invalid vector {} accepted", v["name"]));
            assert_eq!(error_name(&err), v["error"].as_str().expect("error"), "{}", v["name"]);
        }
    }
}
